package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
)

// overlapStages answers every request succeeded after a pause and records how many ran at once.
type overlapStages struct {
	mu        sync.Mutex
	running   int
	maxAtOnce int
	// gauge reads offsetagent_requests_in_flight_bytes; maxBytes is its largest reading.
	gauge    func() float64
	maxBytes float64
}

func (s *overlapStages) Create(ctx context.Context, req *events.Request) *handlers.Outcome {
	s.mu.Lock()
	s.running++
	s.maxAtOnce = max(s.maxAtOnce, s.running)
	if s.gauge != nil {
		s.maxBytes = max(s.maxBytes, s.gauge())
	}
	s.mu.Unlock()
	time.Sleep(40 * time.Millisecond)
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	return &handlers.Outcome{EventType: events.TypeCreateSucceeded, Result: events.Result{
		RequestID: req.ID, RequestSource: req.Source, Name: req.Data.Name, Stages: []events.StageReport{}}}
}

func (s *overlapStages) reset() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.maxAtOnce
	s.maxAtOnce = 0
	return n
}

// OFFSETAGENT_MAX_INFLIGHT_BYTES: requests that together weigh more than it (4 times their
// records' size) wait for each other, small ones run side by side up to the concurrency, and
// one weighing more than the bound still runs (alone).
func TestInflightBytesBound(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.Concurrency, cfg.MaxInflightBytes = 8, 6000
	stages := &overlapStages{}
	r := startAgent(t, cfg, agent.Options{Stages: stages})
	inflightBytes := func() float64 { return r.gauge("offsetagent_requests_in_flight_bytes") }
	stages.mu.Lock()
	stages.gauge = inflightBytes
	stages.mu.Unlock()
	cl := newClient(t, cfg)

	run := func(prefix string, n, pad int) {
		t.Helper()
		// Counted before publishing: a fast agent answers some of the requests before the
		// last one is out, and counting afterwards waited for results that never come.
		before := len(cl.allResults())
		for i := range n {
			body := fmt.Sprintf(`{"name":"%s-%d","config":{"connector.class":"FileStreamSource","pad":%q},"initial_offsets":[]}`,
				prefix, i, strings.Repeat("x", pad))
			cl.publish(body, events.RequestOptions{})
		}
		cl.waitResults(before+n, time.Minute)
	}
	run("large", 6, 3500) // each weighs more than 6000 bytes
	require.Equal(t, 1, stages.reset(), "large requests at once")
	run("small", 8, 100)
	require.Greater(t, stages.reset(), 1, "small requests at once")
	run("huge", 1, 9000) // above the bound: runs alone
	require.Equal(t, 1, stages.reset())
	// The gauge counted the requests while they ran, never above the bound, and let them go.
	require.Positive(t, stages.maxBytes)
	require.LessOrEqual(t, stages.maxBytes, float64(cfg.MaxInflightBytes))
	require.Eventually(t, func() bool { return inflightBytes() == 0 }, 5*time.Second, 10*time.Millisecond)
}
