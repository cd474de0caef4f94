package migrate

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func fileSourceConfig(name string) map[string]string {
	return map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": name + ".txt", "topic": "t", "name": name}
}

// bodies exports with opts and returns each entry's initial state, or its outcome and message
// when it has no body.
func exportStates(t *testing.T, opts Options) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Export(ctx, opts)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range rep.Connectors {
		if e.Body == nil {
			out[e.Name] = string(e.Outcome) + ": " + e.Message.String()
			continue
		}
		out[e.Name] = e.Body.InitialState
	}
	return out
}

// A re-run keeps A's original state: --stop-source records each connector's state in Kafka
// before stopping it, and every later run of the migration (another process, here a new
// StateStore) creates the connectors in the recorded state, not in the STOPPED it finds on A.
// A connector STOPPED on A with no record (stopped by hand) is refused, not guessed.
func TestReRunKeepsStateBeforeStop(t *testing.T) {
	brokers := startKfake(t)
	fc := &fakeConnect{t: t, stopLag: 1, connectors: map[string]*fakeConnector{
		"src-run":      {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("src-run")},
		"src-paused":   {typ: "source", state: fleet.StatePaused, stopAt: -1, config: fileSourceConfig("src-paused")},
		"hand-stopped": {typ: "source", state: fleet.StateStopped, stopAt: -1, config: fileSourceConfig("hand-stopped")},
	}}
	url := fc.serve(t)
	// Before each stop, the state is in the topic already.
	var recorded []string
	id := "m1"
	fc.onStop = func(name string) {
		if fc.connectors[name].state == fleet.StateStopped {
			return // nothing to record: the stop changes nothing
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The handler's goroutine: no require here, the test reads what it found.
		st, err := source.OpenStates(ctx, source.StateStore{Brokers: brokers, MigrationID: id}, "", false, slog.New(slog.DiscardHandler))
		state, ok := st.Get(name)
		if err != nil || !ok {
			state = fmt.Sprintf("stopped before its state was recorded (%v)", err)
		}
		recorded = append(recorded, name+"="+state)
		st.Close()
	}
	opts := func(stop bool, id, initial string) Options {
		return Options{ConnectURL: url, StopSource: stop, InitialState: initial, States: &source.StateStore{Brokers: brokers, MigrationID: id},
			StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond, StopTimeout: 5 * time.Second}
	}
	handStopped := "skipped: state on A unknown: the connector is STOPPED on A and no run of migration m1 recorded its state before stopping it " +
		"(it was stopped by hand or by another migration), so the state to create it in on B is not known; give InitialState, or resume it on A first"

	first := exportStates(t, opts(true, "m1", ""))
	require.Equal(t, map[string]string{"src-run": fleet.StateRunning, "src-paused": fleet.StatePaused, "hand-stopped": handStopped}, first)
	require.ElementsMatch(t, []string{"src-run=RUNNING", "src-paused=PAUSED"}, recorded)
	require.Equal(t, fleet.StateStopped, fc.connectors["src-run"].state, "the first run stopped them")

	// The documented re-run, and a re-run without --stop-source: the same states.
	require.Equal(t, first, exportStates(t, opts(true, "m1", "")))
	require.Equal(t, map[string]string{"src-run": fleet.StateRunning, "src-paused": fleet.StatePaused, "hand-stopped": fleet.StateStopped},
		exportStates(t, opts(false, "m1", "")))
	require.Len(t, fc.stops, 4, "the re-run stopped them again")
	st, err := source.OpenStates(context.Background(), source.StateStore{Brokers: brokers, MigrationID: "m1"}, "", false, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, map[string]string{"src-run": fleet.StateRunning, "src-paused": fleet.StatePaused}, st.Recorded(), "the first records, as they were")

	// Another migration has no record of them: all three are refused, unless --initial-state
	// says what to create.
	id = "m2"
	other := exportStates(t, opts(true, "m2", ""))
	for _, n := range []string{"src-run", "src-paused", "hand-stopped"} {
		require.Contains(t, other[n], "no run of migration m2 recorded its state", n)
	}
	require.Equal(t, map[string]string{"src-run": fleet.StatePaused, "src-paused": fleet.StatePaused, "hand-stopped": fleet.StatePaused},
		exportStates(t, opts(true, "m2", fleet.StatePaused)))
}

// Read through REST only, a connector whose status does not tell its target state (FAILED,
// UNASSIGNED, RESTARTING, or no status yet) is refused with the reason, unless --initial-state
// gives the state.
func TestRESTUnknownStateRefused(t *testing.T) {
	fc := &fakeConnect{t: t, noStatus: map[string]bool{"no-status": true}, connectors: map[string]*fakeConnector{
		"failed":     {typ: "source", state: "FAILED", stopAt: -1, config: fileSourceConfig("failed")},
		"unassigned": {typ: "source", state: "UNASSIGNED", stopAt: -1, config: fileSourceConfig("unassigned")},
		"restarting": {typ: "source", state: "RESTARTING", stopAt: -1, config: fileSourceConfig("restarting")},
		"no-status":  {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("no-status")},
		"running":    {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("running")},
	}}
	url := fc.serve(t)
	got := exportStates(t, Options{ConnectURL: url})
	require.Equal(t, fleet.StateRunning, got["running"])
	for _, n := range []string{"failed", "unassigned", "restarting"} {
		require.Equal(t, "skipped: state on A unknown: its status on A's REST API is "+fc.connectors[n].state+
			", which does not tell its target state (RUNNING, PAUSED or STOPPED); give InitialState, or read A with FromBrokers", got[n])
	}
	require.Contains(t, got["no-status"], "skipped: state on A unknown: A's REST API has no status for it yet")
	require.Equal(t, map[string]string{"failed": fleet.StateStopped, "unassigned": fleet.StateStopped, "restarting": fleet.StateStopped, "no-status": fleet.StateStopped, "running": fleet.StateStopped},
		exportStates(t, Options{ConnectURL: url, InitialState: fleet.StateStopped}))
}

// --stop-source through REST only cannot see a sink's consumer group on A: a selection with a
// sink is refused before anything is stopped.
func TestStopSourceSinkNeedsBrokers(t *testing.T) {
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"src":  {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("src")},
		"sink": {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "t", "name": "sink"}},
	}}
	_, err := Export(context.Background(), Options{ConnectURL: fc.serve(t), StopSource: true, States: &source.StateStore{Brokers: startKfake(t)},
		StopPoll: 5 * time.Millisecond, StopTimeout: 5 * time.Second})
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.ErrorContains(t, err, "StopSource for sink connectors (sink) needs FromBrokers")
	require.Empty(t, fc.stops, "nothing was stopped")
}

// --stop-source without a place to record the states is refused before anything is stopped.
func TestStopSourceNeedsStateStore(t *testing.T) {
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"src": {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("src")},
	}}
	_, err := Export(context.Background(), Options{ConnectURL: fc.serve(t), StopSource: true})
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.ErrorContains(t, err, "give ToBrokers")
	require.Empty(t, fc.stops)
}

// The same through Migrate: a run that stopped the connectors on A and did not finish (no
// agent answered before --timeout) is run again; the re-run, which finds them STOPPED on A,
// publishes them in the states they had, taken from the records on B.
func TestMigrateReRunAfterUnfinishedStop(t *testing.T) {
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokersB...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl, topic, 1, nil))
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"src-run":    {typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig("src-run")},
		"src-paused": {typ: "source", state: fleet.StatePaused, stopAt: -1, config: fileSourceConfig("src-paused")},
	}}
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond,
			StopTimeout: 5 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 3 * time.Second, Grace: 100 * time.Millisecond,
	}
	for run := range 2 {
		rep, _, err := Migrate(ctx, opts)
		require.NoError(t, err)
		got := map[string]string{}
		for _, e := range rep.Connectors {
			require.NotNil(t, e.Body, "run %d: %s: %s", run, e.Name, e.Message)
			got[e.Name] = e.Body.InitialState + " " + string(e.Outcome)
		}
		require.Equal(t, map[string]string{"src-run": "RUNNING failed", "src-paused": "PAUSED failed"}, got, "run %d", run)
		require.Equal(t, fleet.StateStopped, fc.connectors["src-run"].state)
	}
}
