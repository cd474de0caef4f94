package offsetstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

func TestKeyConnector(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want string
		ok   bool
	}{
		{name: "file source", key: `["file-src-1",{"filename":"test.txt"}]`, want: "file-src-1", ok: true},
		{name: "nested quotes and braces in partition", key: `["a",{"k":"}]\"{"}]`, want: "a", ok: true},
		{name: "null partition", key: `["a",null]`, want: "a", ok: true},
		{name: "escaped name", key: `["a\"b\u00e9",{}]`, want: "a\"bé", ok: true},
		{name: "raw utf8 name", key: `["é",{}]`, want: "é", ok: true},
		{name: "spaces", key: ` [ "a" , { } ] `, want: "a", ok: true},
		{name: "three elements", key: `["a",{},1]`},
		{name: "partition is a string", key: `["a","b"]`},
		{name: "name is a number", key: `[1,{}]`},
		{name: "one element", key: `["a"]`},
		{name: "not an array", key: `{"a":1}`},
		{name: "unterminated", key: `["a",{"x":1]`},
		{name: "empty", key: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := keyConnector([]byte(tt.key))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestOffsetsViewApply(t *testing.T) {
	msg := func(p int, key, value string) kafka.Message {
		m := kafka.Message{Partition: p, Key: []byte(key)}
		if value != "~" {
			m.Value = []byte(value)
		}
		return m
	}
	v := newOffsetsView()
	v.apply([]kafka.Message{
		msg(3, `["a",{"f":"1"}]`, `{"position":1}`),
		msg(1, `["a",{"f":"2"}]`, `{"position":2}`),
		msg(1, `["b",{"f":"1"}]`, `{"position":3}`),
		msg(2, `not json`, `{"position":4}`),
		msg(3, `["a",{"f":"1"}]`, `{"position":10}`), // overwrite
		msg(1, `["b",{"f":"1"}]`, "~"),               // tombstone
		msg(1, `["c",{}]`, "~"),                      // tombstone of an unknown key
		msg(0, `["a",{"f":"0"}]`, ``),                // empty, non-null value is live
	})
	require.Equal(t, []SourceRecord{
		{Key: []byte(`["a",{"f":"0"}]`), Value: []byte{}, Partition: 0},
		{Key: []byte(`["a",{"f":"2"}]`), Value: []byte(`{"position":2}`), Partition: 1},
		{Key: []byte(`["a",{"f":"1"}]`), Value: []byte(`{"position":10}`), Partition: 3},
	}, v.records("a"))
	require.Empty(t, v.records("b"))
	keys, others := v.live("a")
	require.Equal(t, 3, keys)
	require.Equal(t, 1, others) // the unindexed key is kept, as Connect keeps it
	keys, _ = v.live("b")
	require.Zero(t, keys)

	v.apply([]kafka.Message{msg(0, `["a",{"f":"0"}]`, "~"), msg(1, `["a",{"f":"2"}]`, "~"), msg(3, `["a",{"f":"1"}]`, "~")})
	require.Empty(t, v.records("a"))
	keys, _ = v.live("a")
	require.Zero(t, keys)

	// In one batch: a connector's last key removed (its set goes), then a new key for it.
	v.apply([]kafka.Message{msg(1, `["d",{"f":"1"}]`, `{"o":1}`), msg(1, `["d",{"f":"1"}]`, "~"), msg(2, `["d",{"f":"2"}]`, `{"o":2}`)})
	require.Equal(t, []SourceRecord{{Key: []byte(`["d",{"f":"2"}]`), Value: []byte(`{"o":2}`), Partition: 2}}, v.records("d"))
}

func TestConfigViewTargetState(t *testing.T) {
	const tomb = "~"
	tests := []struct {
		name      string
		records   [][2]string // key, value (tomb = tombstone)
		connector string
		want      string
		ok        bool
	}{
		{name: "v1 prefers state.v2", records: [][2]string{{"target-state-c", `{"state":"PAUSED","state.v2":"STOPPED"}`}}, connector: "c", want: "STOPPED", ok: true},
		{name: "v0 fallback", records: [][2]string{{"target-state-c", `{"state":"PAUSED"}`}}, connector: "c", want: "PAUSED", ok: true},
		{name: "state.v2 not a string falls back", records: [][2]string{{"target-state-c", `{"state":"PAUSED","state.v2":7}`}}, connector: "c", want: "PAUSED", ok: true},
		{name: "unknown value is ignored", records: [][2]string{
			{"target-state-c", `{"state":"PAUSED","state.v2":"PAUSED"}`},
			{"target-state-c", `{"state":"X","state.v2":"RUNNING"}`},
		}, connector: "c", want: "PAUSED", ok: true},
		{name: "connector without state is started", records: [][2]string{{"connector-c", `{"properties":{"name":"c"}}`}}, connector: "c", want: "STARTED", ok: true},
		{name: "tombstone falls back to started", records: [][2]string{
			{"target-state-c", `{"state":"PAUSED","state.v2":"STOPPED"}`},
			{"connector-c", `{"properties":{"name":"c"}}`},
			{"target-state-c", tomb},
		}, connector: "c", want: "STARTED", ok: true},
		{name: "tombstones remove both", records: [][2]string{
			{"connector-c", `{"properties":{"name":"c"}}`},
			{"target-state-c", `{"state":"STARTED","state.v2":"STARTED"}`},
			{"connector-c", tomb},
			{"target-state-c", tomb},
		}, connector: "c"},
		{name: "state for a missing connector is kept", records: [][2]string{{"target-state-c", `{"state":"PAUSED","state.v2":"STOPPED"}`}}, connector: "c", want: "STOPPED", ok: true},
		{name: "connector named state-c", records: [][2]string{{"connector-state-c", `{"properties":{}}`}}, connector: "state-c", want: "STARTED", ok: true},
		{name: "malformed is skipped", records: [][2]string{{"target-state-c", `[`}}, connector: "c"},
		{name: "unknown", connector: "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newConfigView(slog.New(slog.DiscardHandler))
			v.apply(configRecords(tt.records, tomb))
			got, ok := v.targetState(tt.connector)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConfigViewConnectorConfig(t *testing.T) {
	v := newConfigView(slog.New(slog.DiscardHandler))
	v.apply([]kafka.Message{
		{Key: []byte("connector-c"), Value: []byte(`{"properties":{"name":"c","tasks.max":"1","odd":5}}`), Offset: 3},
		{Key: []byte("connector-d"), Value: []byte(`{"properties":{"name":"d"}}`), Offset: 4},
		{Key: []byte("task-c-0"), Value: []byte(`{"properties":{"x":"y"}}`), Offset: 5},
		{Key: []byte("commit-c"), Value: []byte(`{"tasks":1}`), Offset: 6},
		{Key: []byte("connector-e"), Value: []byte(`{"nope":1}`), Offset: 7},
		{Key: []byte("connector-d"), Offset: 8},
	})
	// Where each connector's latest record is: a Connect leader that read past it has seen it.
	require.Equal(t, map[string]int64{"c": 3, "e": 7}, v.connectorAt)
	props, ok := v.connectorConfig("c")
	require.True(t, ok)
	require.Equal(t, map[string]string{"name": "c", "tasks.max": "1", "odd": "5"}, props)
	props["name"] = "changed" // a copy
	props, _ = v.connectorConfig("c")
	require.Equal(t, "c", props["name"])
	for _, name := range []string{"d", "e", "c-0"} {
		_, ok := v.connectorConfig(name)
		require.False(t, ok, fmt.Sprintf("connector %q", name))
	}
}

func TestConfigViewNamesAndProblems(t *testing.T) {
	const tomb = "~"
	tests := []struct {
		name      string
		records   [][2]string
		wantNames []string
		problems  map[string]string // connector -> substring of its problem ("" = none)
	}{
		{name: "committed tasks are no problem", records: [][2]string{
			{"connector-my-conn", `{"properties":{"name":"my-conn"}}`},
			{"task-my-conn-0", `{"properties":{}}`},
			{"commit-my-conn", `{"tasks":1}`},
		}, wantNames: []string{"my-conn"}, problems: map[string]string{"my-conn": ""}},
		{name: "task records after the commit are pending", records: [][2]string{
			{"connector-my-conn", `{"properties":{"name":"my-conn"}}`},
			{"commit-my-conn", `{"tasks":0}`},
			{"task-my-conn-0", `{"properties":{}}`},
			{"task-my-conn-1", `{"properties":{}}`},
		}, wantNames: []string{"my-conn"}, problems: map[string]string{"my-conn": "2 task config record(s) are not committed"}},
		{name: "malformed latest record is listed with its reason", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a"}}`},
			{"connector-a", `{"props":1}`},
			{"connector-b", `[`},
		}, wantNames: []string{"a", "b"}, problems: map[string]string{"a": "offset 1 is malformed", "b": "offset 2 is malformed"}},
		{name: "a good record clears the problem", records: [][2]string{
			{"connector-a", `[`},
			{"connector-a", `{"properties":{"name":"a"}}`},
		}, wantNames: []string{"a"}, problems: map[string]string{"a": ""}},
		{name: "tombstoned connector is not listed", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a"}}`},
			{"task-a-0", `{"properties":{}}`},
			{"connector-a", tomb},
			{"connector-z", `{"properties":{"name":"z"}}`},
		}, wantNames: []string{"z"}, problems: map[string]string{"a": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newConfigView(slog.New(slog.DiscardHandler))
			v.apply(configRecords(tt.records, tomb))
			require.Equal(t, tt.wantNames, v.names())
			for c, want := range tt.problems {
				if want == "" {
					require.Empty(t, v.problem(c), c)
				} else {
					require.Contains(t, v.problem(c), want, c)
				}
			}
		})
	}
}

// The group index follows every connector record: the default group connect-<name>, an
// override, an override changed or removed, a tombstone, and a malformed record, after which
// Connect keeps (and the view indexes) the previous config.
func TestConfigViewGroupConnectors(t *testing.T) {
	const tomb = "~"
	tests := []struct {
		name    string
		records [][2]string
		want    map[string][]string // group -> connectors
	}{
		{name: "default and override", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a"}}`},
			{"connector-b", `{"properties":{"name":"b","consumer.override.group.id":"shared"}}`},
			{"connector-c", `{"properties":{"name":"c","consumer.override.group.id":"shared"}}`},
			{"connector-d", `{"properties":{"name":"d","consumer.override.group.id":""}}`},
		}, want: map[string][]string{"connect-a": {"a"}, "shared": {"b", "c"}, "connect-d": {"d"}, "connect-b": nil}},
		{name: "override changed and removed", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a","consumer.override.group.id":"g1"}}`},
			{"connector-a", `{"properties":{"name":"a","consumer.override.group.id":"g2"}}`},
			{"connector-b", `{"properties":{"name":"b","consumer.override.group.id":"g1"}}`},
			{"connector-b", `{"properties":{"name":"b"}}`},
		}, want: map[string][]string{"g1": nil, "g2": {"a"}, "connect-b": {"b"}, "connect-a": nil}},
		{name: "tombstone", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a","consumer.override.group.id":"g"}}`},
			{"connector-b", `{"properties":{"name":"b","consumer.override.group.id":"g"}}`},
			{"connector-a", tomb},
		}, want: map[string][]string{"g": {"b"}}},
		{name: "malformed keeps the previous config", records: [][2]string{
			{"connector-a", `{"properties":{"name":"a","consumer.override.group.id":"g"}}`},
			{"connector-a", `[`},
			{"connector-z", `[`},
		}, want: map[string][]string{"g": {"a"}, "connect-a": nil, "connect-z": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newConfigView(slog.New(slog.DiscardHandler))
			v.apply(configRecords(tt.records, tomb))
			for group, want := range tt.want {
				require.Equal(t, want, v.groupConnectors(group), group)
			}
		})
	}
}

// configRecords turns (key, value) pairs into config-topic records at offsets 0, 1, ...; a
// value equal to tomb is a tombstone.
func configRecords(records [][2]string, tomb string) []kafka.Message {
	var msgs []kafka.Message
	for i, r := range records {
		m := kafka.Message{Offset: int64(i), Key: []byte(r[0])}
		if r[1] != tomb {
			m.Value = []byte(r[1])
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// Overwritten values leave dead bytes in the arena until the view compacts it.
func TestOffsetsViewCompactsArena(t *testing.T) {
	v := newOffsetsView()
	value := make([]byte, 64<<10)
	for i := range 64 { // 8 MiB of values for two keys
		value[0] = byte(i)
		v.apply([]kafka.Message{
			{Partition: 1, Key: []byte(`["a",{"f":"1"}]`), Value: bytes.Clone(value)},
			{Partition: 2, Key: []byte(`not indexed`), Value: bytes.Clone(value)},
		})
	}
	require.Less(t, v.arena.used, 4*arenaChunk, "used %d, dead %d", v.arena.used, v.arena.dead)
	require.Less(t, len(v.arena.chunks), 5)
	got := v.records("a")
	require.Len(t, got, 1)
	require.Equal(t, byte(63), got[0].Value[0])
	require.Equal(t, len(value), len(got[0].Value))
	_, others := v.live("a")
	require.Equal(t, 1, others)
}

// BenchmarkKeyConnector finds the connector of the keys of a FileStream and a MirrorMaker 2
// connector, as a load does for every new key.
func BenchmarkKeyConnector(b *testing.B) {
	keys := [][]byte{[]byte(`["other-0042",{"filename":"/data/file-00012345.txt"}]`),
		[]byte(`["other-0043",{"cluster":"src","partition":7,"topic":"t-12345"}]`)}
	for b.Loop() {
		for _, k := range keys {
			if _, ok := keyConnector(k); !ok {
				b.Fatal("not a key")
			}
		}
	}
}
