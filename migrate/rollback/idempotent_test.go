package rollback

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRollbackIdempotent runs the rollback again: a connector already rolled back is found so
// and not touched; one left on B (a request was still pending) goes on at the delete, without
// carrying again (A runs it already).
func TestRollbackIdempotent(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	src := movedSource(t, f, "src", 30, 55)
	snk := movedSink(t, f, "snk", 7, 19)
	ctx := testContext(t)

	// First run: the sink's request is still pending on B, so it is kept there.
	opts := f.options(true)
	opts.Pending = func(_ context.Context, c Connector) (bool, error) { return c.Name == "snk", nil }
	rep, err := Run(ctx, opts, []Connector{src, snk})
	require.NoError(t, err)
	got := byName(rep)
	require.Equal(t, RolledBack, got["src"].Outcome, got["src"].Reason)
	require.Equal(t, KeptOnB, got["snk"].Outcome, got["snk"].Reason)
	require.Contains(t, got["snk"].Reason, "still pending on B")

	// Again, nothing pending: the source is done already, the sink goes on at the delete.
	for run := range 2 {
		f.calls.reset()
		rep, err = Run(ctx, f.options(true), []Connector{src, snk})
		require.NoError(t, err)
		got = byName(rep)
		require.Equal(t, RolledBack, got["src"].Outcome, got["src"].Reason)
		require.Contains(t, got["src"].Note, "already rolled back")
		require.Equal(t, RolledBack, got["snk"].Outcome, got["snk"].Reason)
		if run == 0 {
			require.Equal(t, []string{"B DELETE /connectors/snk-b"}, f.calls.writes())
			require.Contains(t, got["snk"].Note, "continues at deleting it on B")
		} else {
			require.Empty(t, f.calls.writes(), "a rollback done is not done again")
			require.Contains(t, got["snk"].Note, "already rolled back")
		}
		require.Equal(t, ExitOK, ExitCode(rep))
	}
	// A holds B's progress still, RUNNING.
	offs, err := f.a.rest.Offsets(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, `{"position":55}`, canonical(offs[0].Offset))
	for _, name := range []string{"src", "snk"} {
		st, _, err := f.a.rest.Status(ctx, name)
		require.NoError(t, err)
		require.Equal(t, StateRunning, st.Connector.State)
	}
}
