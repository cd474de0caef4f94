package apply

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
)

// Waves keep the selection's order, and a pipeline (a sink that follows its sources, and
// them) in one wave, alone when it is larger than a wave.
func TestSplitWaves(t *testing.T) {
	conn := map[string]*fleet.Connector{}
	plans := map[string]*plan.Connector{}
	entry := func(name string) *Entry {
		c := &fleet.Connector{Name: name}
		conn[name], plans[name] = c, &plan.Connector{Connector: c}
		return &Entry{Name: name, Connector: c, Planned: plans[name]}
	}
	tests := []struct {
		name    string
		entries []string
		follows map[string][]string // sink -> sources
		size    int
		want    [][]string
	}{
		{name: "by size", entries: []string{"a", "b", "c", "d", "e"}, size: 2, want: [][]string{{"a", "b"}, {"c", "d"}, {"e"}}},
		{name: "no size: one wave", entries: []string{"a", "b", "c"}, want: [][]string{{"a", "b", "c"}}},
		{name: "a pipeline stays together", entries: []string{"a", "src", "b", "sink"}, follows: map[string][]string{"sink": {"src"}}, size: 2,
			want: [][]string{{"a"}, {"src", "sink"}, {"b"}}},
		{name: "a pipeline larger than a wave", entries: []string{"s1", "s2", "x", "sink"}, follows: map[string][]string{"sink": {"s1", "s2"}}, size: 2,
			want: [][]string{{"s1", "s2", "sink"}, {"x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []*Entry
			for _, n := range tt.entries {
				entries = append(entries, entry(n))
			}
			for sink, srcs := range tt.follows {
				f := &hazard.Following{}
				for _, s := range srcs {
					f.Sources = append(f.Sources, conn[s])
				}
				plans[sink].Follows = f
			}
			var got [][]string
			for _, w := range splitWaves(entries, tt.size) {
				var names []string
				for _, e := range w {
					names = append(names, e.Name)
				}
				got = append(got, names)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
