package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// stopConnect is a Connect REST stand-in for the stop barriers: PUT /stop stops a connector at
// once (its status reads STOPPED with no tasks), its offsets never change, and onStop is
// called, under mu, after each stop is noted. gate, when set, is called before each PUT /stop
// is served, outside mu, and the stop waits for it.
type stopConnect struct {
	mu     sync.Mutex
	states map[string]string
	stops  []string
	onStop func(name string)
	gate   func()
}

func (f *stopConnect) handle(w http.ResponseWriter, r *http.Request) {
	if f.gate != nil && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/stop") {
		f.gate()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	if r.URL.Path == "/" {
		reply(200, map[string]string{"version": "3.9.0", "commit": "abc", "kafka_cluster_id": "cluster-A"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/connectors/"), "/")
	state, ok := f.states[parts[0]]
	if !ok || len(parts) != 2 {
		reply(404, map[string]any{"error_code": 404, "message": "Connector " + parts[0] + " not found"})
		return
	}
	switch {
	case parts[1] == "stop" && r.Method == http.MethodPut:
		f.states[parts[0]] = fleet.StateStopped
		f.stops = append(f.stops, parts[0])
		if f.onStop != nil {
			f.onStop(parts[0])
		}
		reply(204, nil)
	case parts[1] == "status":
		tasks := []any{map[string]any{"id": 0, "state": state, "worker_id": "w:8083"}}
		if state == fleet.StateStopped {
			tasks = []any{}
		}
		reply(200, map[string]any{"connector": map[string]any{"state": state, "worker_id": "w:8083"}, "tasks": tasks, "type": "source"})
	case parts[1] == "offsets":
		reply(200, json.RawMessage(`{"offsets":[{"partition":{"filename":"f"},"offset":{"position":1}}]}`))
	default:
		reply(404, map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
	}
}

// TestStopBarriersOfAWaveWaitTogether: the stop barriers of a wave wait for their stable
// pauses together; only their calls to A are bounded (stopConcurrency at a time). With a
// pause longer than the test, every connector of the wave must still get its PUT /stop: on
// the code that held a slot for a whole barrier, only stopConcurrency ever did.
func TestStopBarriersOfAWaveWaitTogether(t *testing.T) {
	const n = 3 * stopConcurrency
	all := make(chan struct{})
	fc := &stopConnect{states: map[string]string{}}
	fc.onStop = func(string) {
		if len(fc.stops) == n { // onStop runs under fc.mu, after the stop was noted
			close(all)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ap, entries := stoppingFixture(ctx, t, fc, n, Options{StablePause: time.Hour, StopTimeout: 2 * time.Hour})

	done := make(chan struct{})
	go func() {
		defer close(done)
		ap.stopAll(ctx, entries, nil)
	}()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		fc.mu.Lock()
		got := len(fc.stops)
		fc.mu.Unlock()
		t.Errorf("%d of %d connectors got their PUT /stop: the stable pauses of a wave ran %d at a time", got, n, got)
	}
	cancel()
	<-done
}

// A wave's barriers make their calls to A 32 at a time: each call is a round trip that waits
// on A, not on migrate, and with the waves' stops run ahead (waves.go) the calls of the waves,
// 8 barriers at a time, were what bounded a fleet's rate (a wave of 1,000 spent 0.8 s calling
// A). A's PUT /stop waits here until the test ends: the barriers holding a slot at once must
// reach 32 (A's REST client itself calls 8 at a time; the other barriers wait for it or make
// their Kafka reads and writes), never more than 8 on the code before.
func TestStopBarriersCallA32AtOnce(t *testing.T) {
	const n, want = 64, 32
	release := make(chan struct{})
	fc := &stopConnect{states: map[string]string{}, gate: func() { <-release }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ap, entries := stoppingFixture(ctx, t, fc, n, Options{StablePause: 10 * time.Millisecond, StopTimeout: time.Minute})

	done := make(chan struct{})
	go func() {
		defer close(done)
		ap.stopAll(ctx, entries, nil)
	}()
	most := 0
	for range 3000 { // 30 s
		if most = max(most, len(ap.stopSlots)); most >= want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	<-done
	require.GreaterOrEqual(t, most, want, "stop barriers calling A at once")
	for _, e := range entries {
		require.Empty(t, e.Connector.Problem, e.Name)
	}
}

// A wave's connectors have their states on A recorded in one write before they are stopped,
// not one write per stop barrier: 64 barriers, 32 of them calling at once, made a produce
// request to the state topic each (or a few of them one, as the writer's batches caught
// them).
func TestStopRecordsAWavesStatesInOneWrite(t *testing.T) {
	const n = 2 * stopConcurrency
	fake := kafkatest.Kfake(t)
	var mu sync.Mutex
	writes := 0
	topic := source.StateStore{}.TopicOrDefault()
	fake.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		for _, tp := range kreq.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == topic && len(tp.Partitions) > 0 {
				mu.Lock()
				writes++
				mu.Unlock()
			}
		}
		return nil, nil, false
	})
	fc := &stopConnect{states: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ap, entries := stoppingFixtureOn(ctx, t, fake, fc, n, Options{StablePause: 10 * time.Millisecond, StopTimeout: time.Minute})
	ap.stopAll(ctx, entries, nil)
	for _, e := range entries {
		require.Empty(t, e.Connector.Problem, e.Name)
		require.Equal(t, StoppedByREST, e.StoppedBy, e.Name)
	}
	require.Len(t, fc.stops, n)
	st, err := source.OpenStates(ctx, source.StateStore{Brokers: fake.ListenAddrs(), MigrationID: "m-1"}, "", false, ap.opts.Logger)
	require.NoError(t, err)
	recorded := st.Recorded()
	st.Close()
	require.Len(t, recorded, n, "the states recorded on B")
	for _, e := range entries {
		require.Equal(t, fleet.StateRunning, recorded[e.Name], e.Name)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, writes, "produce requests to the state topic for %d connectors", n)
}

// stoppingFixture is an Applier stopping, with opts (StablePause and StopTimeout; StopSource
// set, polls every 10 ms), n running FileStream sources file-00... of the Connect REST API fc
// serves, recording their states on an embedded broker; and their entries.
func stoppingFixture(ctx context.Context, t *testing.T, fc *stopConnect, n int, opts Options) (*Applier, []*Entry) {
	t.Helper()
	return stoppingFixtureOn(ctx, t, kafkatest.Kfake(t), fc, n, opts)
}

// stoppingFixtureOn is stoppingFixture recording the states on fake.
func stoppingFixtureOn(ctx context.Context, t *testing.T, fake *kfake.Cluster, fc *stopConnect, n int, opts Options) (*Applier, []*Entry) {
	t.Helper()
	brokers := fake.ListenAddrs()
	var entries []*Entry
	for i := range n {
		name := fmt.Sprintf("file-%02d", i)
		fc.states[name] = fleet.StateRunning
		c := &fleet.Connector{Name: name, Type: connectors.Source, State: fleet.StateRunning}
		entries = append(entries, &Entry{Name: name, TargetName: name, Type: string(c.Type), Connector: c})
	}
	srv := httptest.NewServer(http.HandlerFunc(fc.handle))
	t.Cleanup(srv.Close)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := connectors.Builtin()
	a, err := source.Open(ctx, source.Options{ConnectURL: srv.URL, StopSource: true, States: &source.StateStore{Brokers: brokers},
		Registry: reg, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, a.OpenStates(ctx, "cluster-A", "m-1"))
	t.Cleanup(a.Close)
	opts.StopSource, opts.StopPoll, opts.Registry, opts.Logger = true, 10*time.Millisecond, reg, logger
	return New(opts, a, nil, nil, nil), entries
}
