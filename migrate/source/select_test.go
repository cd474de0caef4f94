package source

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

func TestSelection(t *testing.T) {
	tests := []struct {
		name     string
		flags    SelectionFlags
		selected map[string]bool
		targets  map[string]string
	}{
		{name: "no flags selects every name", flags: SelectionFlags{},
			selected: map[string]bool{"a": true, "file-src-1": true}, targets: map[string]string{"a": "a"}},
		{name: "include matches whole names only", flags: SelectionFlags{Include: []string{"file-.*", "db"}},
			selected: map[string]bool{"file-src": true, "db": true, "db2": false, "my-file-src": false}},
		{name: "exclude wins over include", flags: SelectionFlags{Include: []string{".*"}, Exclude: []string{".*-tmp", "old"}},
			selected: map[string]bool{"a": true, "a-tmp": false, "old": false, "older": true}},
		{name: "rename with a group, first match wins", flags: SelectionFlags{Rename: []string{"(.*)-a=${1}-b", "x(.*)=y$1"}},
			targets: map[string]string{"orders-a": "orders-b", "xz": "yz", "x-a": "x-b", "other": "other", "orders-a-z": "orders-a-z"}},
		{name: "rename needs a whole-name match", flags: SelectionFlags{Rename: []string{"src=dst"}},
			targets: map[string]string{"src": "dst", "src1": "src1", "a-src": "a-src"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSelection(tt.flags)
			require.NoError(t, err)
			for n, want := range tt.selected {
				require.Equal(t, want, s.Selected(n), n)
			}
			for n, want := range tt.targets {
				require.Equal(t, want, s.TargetName(n), n)
			}
		})
	}
}

// Unmatched names each flag that does nothing to A's names, in flag order.
func TestSelectionUnmatched(t *testing.T) {
	names := []string{"orders-src", "orders-sink", "users-src"}
	tests := []struct {
		name  string
		flags SelectionFlags
		want  []string
	}{
		{name: "no flags", flags: SelectionFlags{}},
		{name: "every flag does something", flags: SelectionFlags{Include: []string{"orders-.*", "users-src"}, Exclude: []string{".*-sink"},
			Rename: []string{"orders-(.*)=o-$1"}}},
		{name: "one of two includes", flags: SelectionFlags{Include: []string{"orders-.*", "user-src"}},
			want: []string{`Include "user-src" matches no connector of A`}},
		{name: "exclude of a name that exists but is not included", flags: SelectionFlags{Include: []string{"orders-.*"}, Exclude: []string{"users-src"}},
			want: []string{`Exclude "users-src" matches no selected connector`}},
		{name: "misspelt exclude", flags: SelectionFlags{Exclude: []string{"order-sink"}},
			want: []string{`Exclude "order-sink" matches no selected connector`}},
		{name: "rename of excluded names only", flags: SelectionFlags{Exclude: []string{"users-.*"}, Rename: []string{"users-(.*)=u-$1"}},
			want: []string{`Rename "users-(.*)=u-$1" renames no selected connector`}},
		{name: "rename shadowed by an earlier one", flags: SelectionFlags{Rename: []string{"orders-(.*)=o-$1", "orders-src=x"}},
			want: []string{`Rename "orders-src=x" renames no selected connector`}},
		{name: "several, in flag order", flags: SelectionFlags{Include: []string{"nope"}, Exclude: []string{"nada"}, Rename: []string{"zip=zap"}},
			want: []string{`Include "nope" matches no connector of A`, `Exclude "nada" matches no selected connector`,
				`Rename "zip=zap" renames no selected connector`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSelection(tt.flags)
			require.NoError(t, err)
			var got []string
			for _, u := range s.Unmatched(names) {
				got = append(got, u.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSelectionErrors(t *testing.T) {
	_, err := NewSelection(SelectionFlags{
		Include: []string{"("}, Rename: []string{"nope", "a="}, Set: []string{"=x", "name=y", "novalue"},
		Unset: []string{"connector.class", "a=b"},
	})
	require.Error(t, err)
	// Every problem at once, in flag order.
	require.Equal(t, `Include "(": error parsing regexp: missing closing ): `+"`^(?:()$`"+`
Rename "nope": want RE=REPLACEMENT
Rename "a=": want RE=REPLACEMENT
Set "=x": want KEY=VALUE
Set "name=y": the name is changed with Rename
Set "novalue": want KEY=VALUE
Unset "connector.class": a connector cannot be created without it
Unset "a=b": want a config key`, err.Error())
}

func TestEditConfig(t *testing.T) {
	cfg := events.Config{
		{Key: "connector.class", Value: "FileStreamSource"},
		{Key: "file", Value: "a.txt"},
		{Key: "tasks.max", Value: "1"},
		{Key: "name", Value: "old"},
		{Key: "transforms", Value: "x"},
	}
	tests := []struct {
		name  string
		flags SelectionFlags
		want  events.Config
	}{
		{name: "name follows the target", want: events.Config{
			{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: "a.txt"}, {Key: "tasks.max", Value: "1"},
			{Key: "name", Value: "new"}, {Key: "transforms", Value: "x"}}},
		{name: "set replaces in place and appends, split at the first =", flags: SelectionFlags{Set: []string{"tasks.max=4", "topic=a=b"}},
			want: events.Config{
				{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: "a.txt"}, {Key: "tasks.max", Value: "4"},
				{Key: "name", Value: "new"}, {Key: "transforms", Value: "x"}, {Key: "topic", Value: "a=b"}}},
		{name: "unset removes, set of an empty value keeps the key", flags: SelectionFlags{Unset: []string{"transforms", "absent"}, Set: []string{"file="}},
			want: events.Config{
				{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: ""}, {Key: "tasks.max", Value: "1"},
				{Key: "name", Value: "new"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSelection(tt.flags)
			require.NoError(t, err)
			require.Equal(t, tt.want, s.EditConfig(cfg, "new"))
			require.Equal(t, "old", cfg[3].Value, "the input is not changed")
		})
	}
}
