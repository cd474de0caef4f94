package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
)

// failingProcessor answers every request with a failed outcome at one stage.
type failingProcessor struct {
	step    handlers.Step
	code    int
	cleanup *events.Cleanup
}

func (p *failingProcessor) Create(_ context.Context, req *events.Request) *handlers.Outcome {
	out := handlers.Rejected(req.ID, req.Source, req.Data.Name, p.code, "refused")
	out.Result.SetFailure(string(p.step), p.code, "refused", p.cleanup)
	return out
}

func TestErrorCodeLabel(t *testing.T) {
	tests := []struct {
		name string
		code int
		want string
	}{
		{name: "bad request", code: 400, want: "400"},
		{name: "source not allowed", code: 403, want: "403"},
		{name: "past its deadline", code: 408, want: "408"},
		{name: "connector exists", code: 409, want: "409"},
		{name: "agent or broker", code: 500, want: "500"},
		{name: "passed through from Connect", code: 503, want: ErrorCodeOther},
		{name: "none", code: 0, want: ErrorCodeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, errorCodeLabel(tt.code)) })
	}
}

// A failed request counts under its stage and error code, an incomplete cleanup is counted,
// and its "request finished" line carries the error code and the request's source.
func TestFailureCauseInMetricsAndLog(t *testing.T) {
	tests := []struct {
		name       string
		proc       *failingProcessor
		code       string
		incomplete float64
	}{
		{name: "producer's mistake", proc: &failingProcessor{step: handlers.StepValidateConfig, code: 409,
			cleanup: &events.Cleanup{Summary: events.NothingUndone}}, code: "409"},
		{name: "write failed, cleanup complete", proc: &failingProcessor{step: handlers.StepWriteOffsets, code: 500,
			cleanup: &events.Cleanup{Summary: "removed 3 initial offsets", OffsetsRemoved: 3}}, code: "500"},
		{name: "write failed, cleanup incomplete", proc: &failingProcessor{step: handlers.StepWriteOffsets, code: 500,
			cleanup: &events.Cleanup{Summary: "cleanup incomplete", Error: "timeout", Left: "3 initial offsets"}}, code: "500", incomplete: 1},
		{name: "other code", proc: &failingProcessor{step: handlers.StepValidateConfig, code: 422,
			cleanup: &events.Cleanup{Summary: events.NothingUndone}}, code: ErrorCodeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := testAgent(t, tt.proc)
			var logs bytes.Buffer
			a.log = slog.New(slog.NewJSONHandler(&logs, nil))
			runJob(t, a, requestRecord(t, "id-1", "/team/producer", "conn-a"))

			require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.StageFailures.WithLabelValues(string(tt.proc.step), tt.code)))
			require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.Requests.WithLabelValues(ResultFailed)))
			require.Equal(t, tt.incomplete, testutil.ToFloat64(a.metrics.CleanupsIncomplete))

			var line map[string]any
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &m))
				if m["msg"] == "request finished" {
					require.Nil(t, line, "one request finished line")
					line = m
				}
			}
			require.NotNil(t, line, "no request finished line in %s", logs.String())
			require.Equal(t, float64(tt.proc.code), line["error_code"])
			require.Equal(t, "/team/producer", line["source"])
			require.Equal(t, string(tt.proc.step), line["failed_step"])
			require.Equal(t, "id-1", line["request_id"])
		})
	}
}

// offsetagent_request_lag is served while it was measured recently, and absent once a
// measurement failed or none has succeeded for lagStale: a broker outage shows as no value,
// not as the last one.
func TestRequestLagAbsentWhenUnknown(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, "test")
	count := func() int { return testutil.CollectAndCount(m.RequestLag) }

	require.Zero(t, count(), "absent before the first measurement")
	m.RequestLag.Set(7)
	require.Equal(t, 1, count())
	require.Equal(t, 7.0, testutil.ToFloat64(m.RequestLag))
	m.RequestLag.Unknown()
	require.Zero(t, count(), "absent once a measurement failed")
	m.RequestLag.Set(0)
	require.Equal(t, 1, count())
	m.RequestLag.mu.Lock()
	m.RequestLag.at = time.Now().Add(-lagStale - time.Second)
	m.RequestLag.mu.Unlock()
	require.Zero(t, count(), "absent once the last measurement is older than lagStale")
}

// With the broker gone, the running agent's lag disappears from /metrics within lagStale.
func TestRequestLagGoesAwayInBrokerOutage(t *testing.T) {
	t.Parallel() // it waits for the next measurement, as TestOutageWarnRate waits on the clock
	a, reg, cluster := testAgentCluster(t, &fakeProcessor{})
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan struct{})
	go func() { defer close(done); a.lagLoop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	present := func() bool {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "offsetagent_request_lag" {
				return true
			}
		}
		return false
	}
	require.Eventually(t, present, 10*time.Second, 50*time.Millisecond, "lag measured while the broker runs")
	cluster.Close()
	require.Eventually(t, func() bool { return !present() }, lagStale+10*time.Second, 100*time.Millisecond,
		"the lag stays served through the outage")
}

// An agent that accepts any request source says so at start; one with a list does not.
func TestWarnsWhenEverySourceIsAllowed(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		warn    bool
	}{
		{name: "no list", warn: true},
		{name: "a list", allowed: []string{"/team/producer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := testAgent(t, &fakeProcessor{}, tt.allowed...)
			var logs syncBuffer
			a.log = slog.New(slog.NewJSONHandler(&logs, nil))
			// The warning comes first thing; a cancelled Run stops right after it.
			ctx, cancel := context.WithCancel(testContext(t))
			cancel()
			require.NoError(t, a.Run(ctx))
			warned := strings.Contains(logs.String(), `"level":"WARN","msg":"every request source is allowed"`)
			require.Equal(t, tt.warn, warned, logs.String())
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the agent's goroutines to log into.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
