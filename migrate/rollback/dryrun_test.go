package rollback

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// snapshot is what A and B hold: their Connect topics and the state topic, record by record,
// and the sink groups' committed offsets.
func (f *fixture) snapshot(t *testing.T, groupsA, groupsB []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, topic := range []string{configTopic, offsetsTopic} {
		out["A "+topic] = topicBytes(t, f.a.brokers, topic)
		out["B "+topic] = topicBytes(t, f.b.brokers, topic)
	}
	out["B "+stateTopic] = topicBytes(t, f.b.brokers, stateTopic)
	for who, groups := range map[string][]string{"A": groupsA, "B": groupsB} {
		brokers := f.a.brokers
		if who == "B" {
			brokers = f.b.brokers
		}
		for _, g := range groups {
			entries := kafkatest.GroupEntries(t, brokers, g)
			for _, k := range sortedKeys(entries) {
				out[who+" group "+g] = append(out[who+" group "+g], k+"="+entries[k])
			}
		}
	}
	return out
}

// TestRollbackDryRunChangesNothing: a dry run reads A and B and says what it would do; A's and
// B's topics and groups are byte for byte what they were, and no call but GET was made.
func TestRollbackDryRunChangesNothing(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	src := movedSource(t, f, "src", 30, 55)
	snk := movedSink(t, f, "snk", 7, 19)
	before := f.snapshot(t, []string{"connect-snk"}, []string{"connect-snk-b"})
	require.NotEmpty(t, before["A "+configTopic])
	require.NotEmpty(t, before["B group connect-snk-b"])

	rep, err := Run(testContext(t), f.options(false), []Connector{src, snk})
	require.NoError(t, err)
	for _, c := range rep.Connectors {
		require.Equal(t, WouldRollBack, c.Outcome, c.Reason)
		require.False(t, c.StoppedOnB)
		require.False(t, c.DeletedOnB)
		require.Len(t, c.Partitions, 1)
		require.Equal(t, Carried, c.Partitions[0].Verdict)
	}
	got := byName(rep)
	require.Equal(t, `{"position":55}`, canonical(got["src"].Partitions[0].ToA))
	require.Equal(t, `{"kafka_offset":19}`, canonical(got["snk"].Partitions[0].ToA))
	require.Equal(t, ExitOK, ExitCode(rep))

	require.Empty(t, f.calls.writes(), "a dry run calls only GET")
	require.Equal(t, before, f.snapshot(t, []string{"connect-snk"}, []string{"connect-snk-b"}))
}
