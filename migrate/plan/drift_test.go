package plan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// Each kind of drift between a plan and its apply, with its scope: the whole plan or one
// connector.
func TestDrift(t *testing.T) {
	sel := selection(t, source.SelectionFlags{Set: []string{"tasks.max=4"}})
	base := cfgOf("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector", "name", "src",
		"file", "/data/in.txt", "topic", "lines", "tasks.max", "1", "database.password", "s3cret")
	at := int64(7)
	fileOf := func(cfg events.Config, state string, record int64, existsOnB bool, problem string, onB events.Config) *FileConnector {
		c := &fleet.Connector{Name: "src", Type: connectors.Source, State: state, Config: cfg, Problem: fleet.Plain(problem)}
		if onB == nil {
			onB = sel.EditConfig(cfg, "src")
		}
		p := &Plan{Connectors: []*Connector{{Connector: c, Target: "src", OnB: onB}}}
		return p.File(FileOptions{Selection: sel, ConfigTopic: "connect-configs", RecordAt: func(string) (int64, bool) { return record, true },
			ExistsOnB: map[string]bool{"src": existsOnB}})[0]
	}
	planned := fileOf(base, fleet.StateRunning, at, false, "", nil)
	for _, tc := range []struct {
		name      string
		now       *FileConnector
		onB       *OnB
		kind      DriftKind
		whole     bool
		keys      []string
		msg       string
		noFinding bool
	}{
		{name: "unchanged", now: fileOf(base, fleet.StateRunning, at, false, "", nil), noFinding: true},
		{name: "config changed", now: fileOf(replace(base, "topic", "other"), fleet.StateRunning, at+1, false, "", nil),
			kind: DriftConfigOnA, keys: []string{"topic"}, msg: `topic "lines" -> "other"`},
		{name: "key added on A", now: fileOf(append(base, events.ConfigEntry{Key: "batch.size", Value: "9"}), fleet.StateRunning, at+1, false, "", nil),
			kind: DriftConfigOnA, keys: []string{"batch.size"}, msg: `batch.size (not set) -> "9"`},
		{name: "secret only, caught by the record offset", now: fileOf(replace(base, "database.password", "other"), fleet.StateRunning, at+1, false, "", nil),
			kind: DriftConfigOnA, msg: "a secret changed or was rewritten, not shown"},
		{name: "state", now: fileOf(base, fleet.StatePaused, at, false, "", nil), kind: DriftStateOnA, msg: "RUNNING in the plan, PAUSED now"},
		{name: "gone on A", now: nil, kind: DriftGoneOnA, msg: "not on A any more"},
		{name: "exists on B, another writer", now: fileOf(base, fleet.StateRunning, at, true, "", nil),
			onB: &OnB{Writer: "a writer without a request mark"}, kind: DriftExistsOnB, msg: "created by a writer without a request mark"},
		{name: "exists on B by this migration: a re-run", now: fileOf(base, fleet.StateRunning, at, true, "", nil),
			onB: &OnB{ByThisMigration: true}, noFinding: true},
		{name: "refused now", now: fileOf(base, fleet.StateRunning, at, false, "points_at_a: names A", nil), kind: DriftHazard, msg: "refused now: points_at_a"},
		{name: "engine", now: fileOf(base, fleet.StateRunning, at, false, "", replace(sel.EditConfig(base, "src"), "tasks.max", "5")),
			kind: DriftEngine, whole: true, keys: []string{"tasks.max"}, msg: "re-plan with this version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ConnectorDrift(planned, tc.now, tc.onB)
			if tc.noFinding {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%v", got)
			d := got[0]
			require.Equal(t, tc.kind, d.Kind)
			require.Equal(t, tc.whole, d.WholePlan())
			if tc.keys != nil {
				require.Equal(t, tc.keys, d.Keys)
			}
			require.Contains(t, d.Message, tc.msg)
			require.NotContains(t, d.String(), "s3cret")
		})
	}
	// The clusters: another Kafka cluster on either side refuses the whole plan.
	p := File{From: Side{KafkaClusterID: "A1", ConfigTopic: "connect-configs"}, To: Side{KafkaClusterID: "B1"}}
	require.Empty(t, IdentityDrift(p, p))
	got := IdentityDrift(p, File{From: Side{KafkaClusterID: "A2", ConfigTopic: "connect-configs"}, To: Side{KafkaClusterID: "B2"}})
	require.Len(t, got, 2)
	require.Equal(t, DriftIdentityA, got[0].Kind)
	require.True(t, got[0].WholePlan())
	require.Contains(t, got[0].Message, `A is Kafka cluster "A2", the plan's is "A1"`)
	require.Equal(t, DriftIdentityB, got[1].Kind)
}
