package rollback

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// byName is the report's results by name on A.
func byName(rep *Report) map[string]*ConnectorResult {
	out := map[string]*ConnectorResult{}
	for _, c := range rep.Connectors {
		out[c.Name] = c
	}
	return out
}

// TestRollbackOrderAndDelete rolls back a source and a sink: B is stopped before A is
// patched, A resumed before B's connector is deleted, and a connector whose resume on A never
// shows is kept on B, not deleted.
func TestRollbackOrderAndDelete(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	src := movedSource(t, f, "src", 30, 55)
	snk := movedSink(t, f, "snk", 7, 19)
	ctx := testContext(t)

	rep, err := Run(ctx, f.options(true), []Connector{src, snk})
	require.NoError(t, err)
	got := byName(rep)
	for _, name := range []string{"src", "snk"} {
		c := got[name]
		require.Equal(t, RolledBack, c.Outcome, c.Reason)
		require.True(t, c.DeletedOnB)
		require.Equal(t, StateRunning, c.StateOnA)
		stop := f.calls.index("B PUT /connectors/" + name + "-b/stop")
		patch := f.calls.index("A PATCH /connectors/" + name + "/offsets")
		resume := f.calls.index("A PUT /connectors/" + name + "/resume")
		del := f.calls.index("B DELETE /connectors/" + name + "-b")
		require.True(t, stop >= 0 && stop < patch, "stop on B (%d) before PATCH on A (%d): %v", stop, patch, f.calls.writes())
		require.True(t, patch < resume, "PATCH on A (%d) before resume on A (%d): %v", patch, resume, f.calls.writes())
		require.True(t, resume < del, "resume on A (%d) before delete on B (%d): %v", resume, del, f.calls.writes())
	}
	require.Equal(t, ExitOK, ExitCode(rep))

	// A is at B's progress, B has neither.
	offs, err := f.a.rest.Offsets(ctx, "src")
	require.NoError(t, err)
	require.Len(t, offs, 1)
	require.Equal(t, `{"position":55}`, canonical(offs[0].Offset))
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{"t/0": 19}), kafkatest.GroupEntries(t, f.a.brokers, "connect-snk"))
	names, err := f.b.rest.Names(ctx)
	require.NoError(t, err)
	require.Empty(t, names)
	st, _, err := f.a.rest.Status(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, StateRunning, st.Connector.State)

	t.Run("resume on A times out", func(t *testing.T) {
		f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
		src := movedSource(t, f, "src", 30, 55)
		f.a.dropResume.Store(true)
		opts := f.options(true)
		opts.ResumeTimeout = 300 * time.Millisecond
		rep, err := Run(testContext(t), opts, []Connector{src})
		require.NoError(t, err)
		c := rep.Connectors[0]
		require.Equal(t, KeptOnB, c.Outcome, c.Reason)
		require.Contains(t, c.Reason, "resume on A")
		require.False(t, c.DeletedOnB)
		require.Equal(t, -1, f.calls.index("B DELETE /connectors/src-b"), f.calls.writes())
		st, ok, err := f.b.rest.Status(testContext(t), "src-b")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, StateStopped, st.Connector.State)
		require.Equal(t, ExitRefused, ExitCode(rep))
	})
}

// TestRollbackReportFile writes the report with mode 0600, also over a file of another mode.
func TestRollbackReportFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollback.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	rep := &Report{Connectors: []*ConnectorResult{{Name: "x", Outcome: WouldRollBack, Partitions: []*PartitionResult{}}}}
	rep.count()
	require.NoError(t, rep.WriteFile(path))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"outcome": "would_roll_back"`)
}

// TestRollbackSourceRefusedByA: A's connector refuses B's offsets (a 4xx of its alterOffsets):
// the partitions are not carried, A resumes at its own offsets from the stop (and produces
// again what B produced from there), B's connector is deleted, and the exit status is 4.
func TestRollbackSourceRefusedByA(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	const props = `{"connector.class":"io.debezium.connector.mysql.MySqlConnector","topic.prefix":"orders","name":"dbz"}`
	c := moved(t, f, "dbz", props, `{"connector.class":"io.debezium.connector.mysql.MySqlConnector","topic.prefix":"orders","name":"dbz-b"}`, StateRunning)
	c.Type = TypeSource
	write(t, f.a.brokers, offsetsTopic, offsetstore.Record{Key: []byte(`["dbz",{"server":"orders"}]`), Value: []byte(`{"file":"binlog.000003","pos":4}`), Partition: -1})
	// B's offset lacks the binlog file: A's connector refuses it with a 400.
	write(t, f.b.brokers, offsetsTopic, offsetstore.Record{Key: []byte(`["dbz-b",{"server":"orders"}]`), Value: []byte(`{"pos":900}`), Partition: -1})
	rep, err := Run(testContext(t), f.options(true), []Connector{c})
	require.NoError(t, err)
	r := rep.Connectors[0]
	require.Equal(t, RolledBack, r.Outcome, r.Reason)
	require.True(t, r.DeletedOnB)
	require.Len(t, r.Partitions, 1)
	p := r.Partitions[0]
	require.Equal(t, NotCarried, p.Verdict)
	require.Equal(t, `{"file":"binlog.000003","pos":4}`, canonical(p.ToA))
	require.Contains(t, p.Detail, "A's connector refused the offsets (Source offset 'file' parameter is missing)")
	offs, err := f.a.rest.Offsets(testContext(t), "dbz")
	require.NoError(t, err)
	require.Equal(t, `{"file":"binlog.000003","pos":4}`, canonical(offs[0].Offset))
	require.Equal(t, ExitReplayed, ExitCode(rep))
}
