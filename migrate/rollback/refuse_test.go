package rollback

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/offsetstore"
)

// TestRollbackRefuses runs a dry run and an execution over a fleet where each connector but one
// is not in the state the input says: each is refused, named with why, and left as it is; the
// one in order would be (and is) rolled back.
func TestRollbackRefuses(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	tests := []struct {
		name   string
		setup  func(t *testing.T) *Connector // nil: not in the input
		asked  string
		reason string // a part of the reason; "" for the connector in order
	}{
		{name: "in order", asked: "ok", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "ok", 1, 2)
			return &c
		}},
		{name: "not in the input", asked: "ghost", reason: "not moved by this report"},
		{name: "B's connector without the migration's mark", asked: "unmarked", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "unmarked", 1, 2)
			connector(t, f.b, "unmarked-b", `{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":"unmarked-b"}`, StateRunning, nil)
			return &c
		}, reason: "not the connector this migration created: its connector record on B carries no request mark"},
		{name: "B's connector by another request", asked: "other", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "other", 1, 2)
			connector(t, f.b, "other-b", `{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":"other-b"}`, StateRunning,
				offsetstore.RequestMark("/offsetagent/migrate/m-other", "m-other/other-b/1"))
			return &c
		}, reason: "was written by request m-other/other-b/1 of /offsetagent/migrate/m-other"},
		{name: "A not STOPPED", asked: "running", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "running", 1, 2)
			connector(t, f.a, "running", `{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":"running"}`, StateRunning, nil)
			write(t, f.a.brokers, configTopic, offsetstore.Record{Key: []byte("target-state-running"), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`)})
			return &c
		}, reason: "A is RUNNING, not STOPPED as the migration left it"},
		{name: "state record and input disagree", asked: "disagree", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "disagree", 1, 2)
			writeStateRecord(t, f.b, "disagree", StatePaused)
			return &c
		}, reason: "the state record m-test/disagree says A was PAUSED before the move, the report says RUNNING"},
		{name: "no state before the move", asked: "unknown", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "unknown", 1, 2)
			write(t, f.b.brokers, stateTopic, offsetstore.Record{Key: []byte(migrationID + "/unknown")})
			c.StateOnA = ""
			return &c
		}, reason: "the state before the move is unknown"},
		{name: "operator-managed B", asked: "managed", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "managed", 1, 2)
			c.OperatorManaged = true
			return &c
		}, reason: "B is operator-managed"},
		{name: "refused by the caller", asked: "caller", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "caller", 1, 2)
			c.Refuse = "the report does not say whether it was re-keyed"
			return &c
		}, reason: "the report does not say whether it was re-keyed"},
		{name: "absent on A", asked: "gone", setup: func(t *testing.T) *Connector {
			c := movedSource(t, f, "gone", 1, 2)
			write(t, f.a.brokers, configTopic, offsetstore.Record{Key: []byte("connector-gone")})
			return &c
		}, reason: "absent on A"},
	}
	var input []Connector
	var names []string
	for _, tt := range tests {
		names = append(names, tt.asked)
		if tt.setup != nil {
			input = append(input, *tt.setup(t))
		}
	}
	for _, execute := range []bool{false, true} {
		f.calls.reset()
		opts := f.options(execute)
		opts.Names = names
		rep, err := Run(testContext(t), opts, input)
		require.NoError(t, err)
		got := byName(rep)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := got[tt.asked]
				require.NotNil(t, c)
				if tt.reason == "" {
					want := WouldRollBack
					if execute {
						want = RolledBack
					}
					require.Equal(t, want, c.Outcome, c.Reason)
					return
				}
				require.Equal(t, Refused, c.Outcome)
				require.Contains(t, c.Reason, tt.reason)
				for _, w := range f.calls.writes() {
					require.NotContains(t, w, "/"+tt.asked+"/", "a refused connector is not touched")
					require.NotContains(t, w, "/"+tt.asked+"-b", "a refused connector is not touched")
				}
			})
		}
		require.Equal(t, ExitRefused, ExitCode(rep))
	}
}

// TestRollbackRefusesOldA: A's Connect before 3.6 has no PATCH of offsets: every connector is
// refused, even with Execute, listing what it would carry, and nothing is written on A or B.
func TestRollbackRefusesOldA(t *testing.T) {
	f := newFixtureVersion(t, map[string]int32{"t": 1}, map[string]int32{"t": 1}, "3.5.2")
	src := movedSource(t, f, "src", 30, 55)
	rep, err := Run(testContext(t), f.options(true), []Connector{src})
	require.NoError(t, err)
	c := rep.Connectors[0]
	require.Equal(t, Refused, c.Outcome)
	require.Contains(t, c.Reason, "A's Connect is version 3.5.2, older than 3.6")
	require.Len(t, c.Partitions, 1)
	require.Equal(t, `{"position":55}`, canonical(c.Partitions[0].ToA))
	require.Empty(t, f.calls.writes())
	require.Equal(t, ExitRefused, ExitCode(rep))
}

// TestRollbackOldReportTakesTheMigrationsMark: a report written before request ids were kept
// gives none; B's connector is still known for the migration's by its record's mark, whose
// request source is the migration's own, and is rolled back, its request id taken from the
// mark (the pending check asks about it). A mark of another migration is still refused.
func TestRollbackOldReportTakesTheMigrationsMark(t *testing.T) {
	f := newFixture(t, map[string]int32{"t": 1}, map[string]int32{"t": 1})
	mine := movedSource(t, f, "mine", 1, 2)
	mine.RequestID = ""
	other := movedSource(t, f, "other", 1, 2)
	connector(t, f.b, "other-b", `{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":"other-b"}`, StateRunning,
		offsetstore.RequestMark("/offsetagent/migrate/m-other", "m-other/other-b/1"))
	other.RequestID = ""
	opts := f.options(true)
	var asked []string
	opts.Pending = func(_ context.Context, c Connector) (bool, error) {
		asked = append(asked, c.RequestID)
		return false, nil
	}
	opts.Parallel = 1
	rep, err := Run(testContext(t), opts, []Connector{mine, other})
	require.NoError(t, err)
	got := byName(rep)
	require.Equal(t, RolledBack, got["mine"].Outcome, got["mine"].Reason)
	require.Equal(t, []string{requestID("mine-b")}, asked)
	require.Equal(t, Refused, got["other"].Outcome)
	require.Contains(t, got["other"].Reason, "was written by request m-other/other-b/1 of /offsetagent/migrate/m-other")
}
