package migrate

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A fleet whose migration takes longer than --timeout in all is stopped and published in
// waves: every connector stopped is published, with a deadline of its own, a wave's
// connectors are stopped before it is published, and the waves stop at most three ahead of
// the last one published: the fourth wave's connectors are stopped only once the first
// wave was published.
func TestMigrateStopsAndPublishesInWaves(t *testing.T) {
	const n, waveSize = 24, 6
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := waveTopicsOnB(ctx, t, brokersB)
	// No agent answers on B, so each wave awaits its requests until their deadline, --timeout
	// after the wave starts publishing: the run lasts more than three times --timeout, and a
	// deadline for the whole run (of the stops or of the requests) would fail the second and
	// third waves. A stop takes a few status reads, far within --timeout even on a loaded
	// machine: the stops' duration proves nothing here, and one near --timeout (60 reads
	// 20 ms apart were) made the verdict depend on the machine's load.
	fc := runningSources(t, n, 3)
	var stopped []time.Time
	fc.onStop = func(string) { stopped = append(stopped, time.Now()) }
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 20 * time.Millisecond,
			StopTimeout: 10 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 3 * time.Second, Grace: 100 * time.Millisecond, Concurrency: waveSize, WaveSize: waveSize,
	}
	rep, _, err := Migrate(ctx, opts)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, n)
	for _, e := range rep.Connectors {
		// No agent on B: each request is published and gets no result by its deadline.
		require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Name)
		require.Equal(t, "await_result", e.FailedStep, "%s: %s", e.Name, e.Message)
	}

	// The requests on B, and when each was published.
	var published []time.Time
	for at := int64(0); len(published) < n; {
		f, err := kafkaio.FetchPartition(ctx, cl, "requests", 0, at, 1<<20, 100*time.Millisecond)
		require.NoError(t, err)
		for _, m := range f.Messages {
			published = append(published, m.Time)
		}
		require.Greater(t, f.Next, at, "%d requests on B", len(published))
		at = f.Next
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	require.Len(t, stopped, n)
	slices.SortFunc(stopped, func(a, b time.Time) int { return a.Compare(b) })
	first := slices.MinFunc(published, func(a, b time.Time) int { return a.Compare(b) })
	require.True(t, stopped[waveSize-1].Before(first), "the first wave's %d connectors are stopped before it is published", waveSize)
	require.True(t, stopped[3*waveSize].After(first), "the fourth wave is stopped only once the first is published")
}

// A run tells its report after each wave (Checkpoint), so that one killed before its end
// leaves what its waves did: a run interrupted after its first wave has told that wave's
// connectors, each with its outcome, and how many were still to come.
func TestMigrateTellsItsReportAfterEachWave(t *testing.T) {
	const n, waveSize = 8, 4
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waveTopicsOnB(ctx, t, brokersB)
	fc := runningSources(t, n, 1)
	run, interrupt := context.WithCancel(ctx)
	defer interrupt()
	type told struct {
		rep *apply.Report
		cut *cutover.Cutover
	}
	var checkpoints []told
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 20 * time.Millisecond,
			StopTimeout: 10 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: time.Second, Grace: 100 * time.Millisecond, Concurrency: waveSize, WaveSize: waveSize,
		Checkpoint: func(rep *apply.Report, cut *cutover.Cutover) {
			checkpoints = append(checkpoints, told{rep, cut})
			interrupt() // the run is killed after its first wave
		},
	}
	rep, _, err := Migrate(run, opts)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, n)

	require.NotEmpty(t, checkpoints, "the report is told after the first wave")
	first := checkpoints[0]
	require.Equal(t, rep.MigrationID, first.rep.MigrationID)
	require.True(t, first.rep.Finished.IsZero(), "a run still going")
	require.Equal(t, n-waveSize, first.rep.Unfinished)
	var names []string
	for _, e := range first.rep.Connectors {
		names = append(names, e.Name)
		// No agent on B: each request of the first wave got no result by its deadline.
		require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Name)
		require.Equal(t, "await_result", e.FailedStep, "%s: %s", e.Name, e.Message)
		require.NotEmpty(t, e.RequestID, e.Name)
	}
	require.Equal(t, []string{"src-00", "src-01", "src-02", "src-03"}, names)
	require.NotNil(t, first.cut, "the cutover report too")
	require.Equal(t, rep.MigrationID, first.cut.MigrationID)
	require.Empty(t, first.cut.Connectors, "none placed on B")
	var buf bytes.Buffer
	require.NoError(t, first.rep.WriteJSON(&buf))
	require.Contains(t, buf.String(), `"unfinished": 4`)
}

// The waves' stops run ahead as a pipeline: the next wave's stop begins once the wave before
// it has made its calls to A, while that wave's barriers sleep their stable pauses, not once
// it is published (nor once it has its results). The stable pause is a minute here: the
// second wave's first stop comes while no request is on B yet (waves stopped one after the
// other, it would come after a minute, the first wave's requests on B). Interrupted then, the
// run publishes nothing: every barrier was cut short in its pause.
func TestMigrateStopsTheNextWaveDuringTheStablePause(t *testing.T) {
	const n, waveSize = 8, 4
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := waveTopicsOnB(ctx, t, brokersB)
	fc := runningSources(t, n, 1)
	secondWave := make(chan struct{}, 1)
	fc.onStop = func(string) {
		if len(fc.stops) == waveSize+1 { // under fc.mu, after the stop was noted
			secondWave <- struct{}{}
		}
	}
	requests := func() int {
		f, err := kafkaio.FetchPartition(ctx, cl, "requests", 0, 0, 1<<20, 100*time.Millisecond)
		require.NoError(t, err)
		return len(f.Messages)
	}
	run, interrupt := context.WithCancel(ctx)
	defer interrupt()
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: time.Minute, StopPoll: 20 * time.Millisecond,
			StopTimeout: 10 * time.Minute},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 10 * time.Minute, Grace: 100 * time.Millisecond, Concurrency: waveSize, WaveSize: waveSize,
	}
	type ran struct {
		rep *apply.Report
		err error
	}
	out := make(chan ran, 1)
	go func() {
		rep, _, err := Migrate(run, opts)
		out <- ran{rep, err}
	}()
	select {
	case <-secondWave:
		require.Zero(t, requests(), "the second wave's stop began once the first wave was published, not during its stable pause")
	case r := <-out:
		t.Fatalf("the run ended (%v) before the second wave's stop", r.err)
	case <-ctx.Done():
		t.Fatal("the second wave was not stopped")
	}
	interrupt()
	r := <-out
	require.NoError(t, r.err)
	require.Len(t, r.rep.Connectors, n)
	for _, e := range r.rep.Connectors {
		// Its stop barrier cut short in its pause: not published.
		require.Equal(t, apply.OutcomeSkipped, e.Outcome, "%s at %s: %s", e.Name, e.FailedStep, e.Message)
	}
	require.Zero(t, requests(), "a connector whose stop barrier was cut short was published")
}

// waveTopicsOnB creates B's Connect topics and the agents' request and result topics, and
// returns the client it made them with.
func waveTopicsOnB(ctx context.Context, t *testing.T, brokersB []string) *kafka.Client {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokersB...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl, topic, 1, nil))
	}
	return cl
}

// runningSources is A's Connect REST API with n running FileStream sources src-00...,
// src-NN at position NN, each STOPPED stopLag status reads after its PUT /stop.
func runningSources(t *testing.T, n, stopLag int) *fakeConnect {
	fc := &fakeConnect{t: t, stopLag: stopLag, connectors: map[string]*fakeConnector{}}
	for i := range n {
		name := fmt.Sprintf("src-%02d", i)
		fc.connectors[name] = &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig(name),
			offsets: []string{fmt.Sprintf(`{"partition":{"filename":"%s.txt"},"offset":{"position":%d}}`, name, i)}}
	}
	return fc
}

// The waves are published as one stream: the second wave is published once it is stopped and
// the first is published, into the room the first leaves (--concurrency across the waves), not
// once the first has all its results. No agent answers on B here and the requests' deadline is
// ten minutes away: waiting for the first wave's results, the second wave would not be published
// before then.
func TestMigratePublishesTheNextWaveBeforeTheResultsOfTheLast(t *testing.T) {
	const n, waveSize = 8, 4
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := waveTopicsOnB(ctx, t, brokersB)
	fc := runningSources(t, n, 1)
	run, interrupt := context.WithCancel(ctx)
	defer interrupt()
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 20 * time.Millisecond,
			StopTimeout: 10 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 10 * time.Minute, Grace: 100 * time.Millisecond, Concurrency: 2 * waveSize, WaveSize: waveSize,
	}
	type ran struct {
		rep *apply.Report
		err error
	}
	out := make(chan ran, 1)
	go func() {
		rep, _, err := Migrate(run, opts)
		out <- ran{rep, err}
	}()
	requests := func() int {
		f, err := kafkaio.FetchPartition(ctx, cl, "requests", 0, 0, 1<<20, 100*time.Millisecond)
		require.NoError(t, err)
		return len(f.Messages)
	}
	got := 0
	for i := 0; i < 300 && got < n; i++ { // at most 300 looks, 100 ms apart
		if got = requests(); got < n {
			time.Sleep(100 * time.Millisecond)
		}
	}
	require.Equal(t, n, got, "both waves' requests on B while the first wave awaits its results")
	interrupt()
	r := <-out
	require.NoError(t, r.err)
	require.Len(t, r.rep.Connectors, n)
	for _, e := range r.rep.Connectors {
		// Published, interrupted before its deadline: B's agents may still carry it out.
		require.Equal(t, apply.OutcomePending, e.Outcome, "%s at %s: %s", e.Name, e.FailedStep, e.Message)
	}
}

// The report told after each wave copies each wave's entries once: the entries of the waves
// before are told again as the same copies, so that a run of W waves copies each connector's
// entry once, not once per wave after its own (the copies grew with the square of the waves).
func TestMigrateCopiesAWavesEntriesOnceForItsReports(t *testing.T) {
	const n, waveSize = 8, 4
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waveTopicsOnB(ctx, t, brokersB)
	fc := runningSources(t, n, 1)
	var told []*apply.Report
	opts := MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 20 * time.Millisecond,
			StopTimeout: 10 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: time.Second, Grace: 100 * time.Millisecond, Concurrency: waveSize, WaveSize: waveSize,
		Checkpoint: func(rep *apply.Report, _ *cutover.Cutover) { told = append(told, rep) },
	}
	rep, _, err := Migrate(ctx, opts)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, n)
	require.Len(t, told, 2, "a report after each wave")
	require.Len(t, told[0].Connectors, waveSize)
	require.Len(t, told[1].Connectors, n)
	for i, e := range told[0].Connectors {
		require.Same(t, e, told[1].Connectors[i], "%s: the first wave's entry copied again for the second wave's report", e.Name)
		require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Name) // no agent on B
	}
}
