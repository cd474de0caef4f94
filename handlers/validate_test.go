package handlers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Connect's ConfigDef messages for the settings ConnectorConfig checks
// (docs/connect-internals.md, "Validating a new connector").
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		conn string
		cfg  events.Config
		want []string
	}{
		{name: "valid", conn: "c", cfg: events.Config{{Key: "tasks.max", Value: " 3 "}}},
		{name: "empty name", conn: "", want: []string{"Invalid value  for configuration name: String may not be empty"}},
		{name: "control characters", conn: "a\tb\u0085",
			want: []string{"Invalid value a\tb\u0085 for configuration name: String may not contain control sequences but had the following ASCII chars: 9, 133"}},
		{name: "tasks.max zero", conn: "c", cfg: events.Config{{Key: "tasks.max", Value: "0"}},
			want: []string{"Invalid value 0 for configuration tasks.max: Value must be at least 1"}},
		{name: "tasks.max not a number", conn: "c", cfg: events.Config{{Key: "tasks.max", Value: "two"}},
			want: []string{"Invalid value two for configuration tasks.max: Not a number of type INT",
				"Invalid value null for configuration tasks.max: Value must be non-null"}},
		{name: "tasks.max beyond int", conn: "c", cfg: events.Config{{Key: "tasks.max", Value: "3000000000"}},
			want: []string{"Invalid value 3000000000 for configuration tasks.max: Not a number of type INT",
				"Invalid value null for configuration tasks.max: Value must be non-null"}},
		{name: "null value", conn: "c", cfg: events.Config{{Key: "topic", Null: true}},
			want: []string{"Null value can not be supplied as the configuration value."}},
		{name: "all at once in definition order", conn: "", cfg: events.Config{{Key: "x", Null: true}, {Key: "tasks.max", Value: "-1"}},
			want: []string{
				"Invalid value  for configuration name: String may not be empty",
				"Invalid value -1 for configuration tasks.max: Value must be at least 1",
				"Null value can not be supplied as the configuration value.",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, configErrors(tc.conn, tc.cfg))
		})
	}
}

func TestJavaMapString(t *testing.T) {
	require.Equal(t, "{tasks.max=1, topic=null, name=x}",
		javaMapString(events.Config{{Key: "tasks.max", Value: "1"}, {Key: "topic", Null: true}, {Key: "name", Value: "x"}}))
	require.Equal(t, "{}", javaMapString(nil))
}

// KIP-980: any case, RUNNING is STARTED in the config topic, absent means STARTED written
// explicitly.
func TestTargetState(t *testing.T) {
	tests := []struct{ in, state, rest string }{
		{"", "STARTED", "RUNNING"}, {"running", "STARTED", "RUNNING"}, {"Paused", "PAUSED", "PAUSED"}, {"STOPPED", "STOPPED", "STOPPED"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			state, rest, err := targetState(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.state, state)
			require.Equal(t, tc.rest, rest)
		})
	}
	_, _, err := targetState("STARTED")
	require.Error(t, err, "the config topic's spelling is not a REST state")
}

// The decoded forms handed with the config records (Record.Decoded, which the config view
// applies instead of parsing the agent's own records) are what their bytes decode to, for
// every kind of value a config may hold.
func TestConfigRecordsDecodedMatchBytes(t *testing.T) {
	configs := []events.Config{
		nil,
		{{Key: "connector.class", Value: "X"}, {Key: "name", Value: "c"}},
		{{Key: "a", Value: ""}, {Key: "quote\"back\\slash", Value: "tab\tnl\nctl\u0001"}, {Key: "é🙂", Value: "<&>\u2028"}},
		{{Key: "dup", Value: "first"}, {Key: "dup", Value: "last"}},
	}
	for _, state := range []string{"STARTED", "PAUSED", "STOPPED"} {
		for i, cfg := range configs {
			recs := configRecords("c", state, cfg)
			var ts struct {
				State string `json:"state.v2"`
			}
			require.NoError(t, json.Unmarshal(recs[0].Value, &ts))
			require.Equal(t, offsetstore.DecodedTargetState(ts.State), recs[0].Decoded, "%s, config %d", state, i)
			var conn struct {
				Properties map[string]string `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(recs[1].Value, &conn))
			if conn.Properties == nil {
				conn.Properties = map[string]string{}
			}
			require.Equal(t, offsetstore.DecodedConnector(conn.Properties), recs[1].Decoded, "%s, config %d", state, i)

			// The bytes are AppendJSON's of the records as maps, Jackson's layout.
			v1 := state
			if v1 == "STOPPED" {
				v1 = "PAUSED"
			}
			props := jsonvalue.Map{}
			for _, e := range cfg {
				props = append(props, jsonvalue.Field{Key: e.Key, Value: e.Value})
			}
			require.Equal(t, string(offsetstore.AppendJSON(nil, jsonvalue.Map{{Key: "state", Value: v1}, {Key: "state.v2", Value: state}})),
				string(recs[0].Value))
			require.Equal(t, string(offsetstore.AppendJSON(nil, jsonvalue.Map{{Key: "properties", Value: props}})), string(recs[1].Value))
		}
	}
}

// The target-state record's two-field form (docs/connect-internals.md, "Target states") and the connector record.
func TestConfigRecords(t *testing.T) {
	recs := configRecords("c", "STOPPED", events.Config{{Key: "connector.class", Value: "X"}, {Key: "name", Value: "c"}})
	require.Len(t, recs, 2)
	require.Equal(t, "target-state-c", string(recs[0].Key))
	require.Equal(t, `{"state":"PAUSED","state.v2":"STOPPED"}`, string(recs[0].Value))
	require.Equal(t, "connector-c", string(recs[1].Key))
	require.Equal(t, `{"properties":{"connector.class":"X","name":"c"}}`, string(recs[1].Value))
	require.Equal(t, `{"state":"PAUSED","state.v2":"PAUSED"}`, string(configRecords("c", "PAUSED", nil)[0].Value))
	require.Equal(t, `{"state":"STARTED","state.v2":"STARTED"}`, string(configRecords("c", "STARTED", nil)[0].Value))
}

// write_config's two records cost one buffer (their keys and values), the decoded properties
// and the slice: no allocation per property (8 with a buffer per key and value).
func TestConfigRecordsAllocations(t *testing.T) {
	cfg := events.Config{{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"},
		{Key: "source.cluster.alias", Value: "src"}, {Key: "target.cluster.alias", Value: "dst"}, {Key: "topics", Value: ".*"},
		{Key: "tasks.max", Value: "4"}, {Key: "name", Value: "mm2"}}
	allocs := alloctest.Least(100, func() { configRecords("mm2", "STARTED", cfg) })
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 5.0)
}

// A connector's two config keys are one allocation (a slice and two strings were three).
func TestConfigKeysAllocations(t *testing.T) {
	keys := configKeys("mm2")
	require.Equal(t, "target-state-mm2", keys[0])
	require.Equal(t, "connector-mm2", keys[1])
	allocs := alloctest.Least(100, func() { keys = configKeys("mm2") })
	require.LessOrEqual(t, allocs, 1.0)
}
