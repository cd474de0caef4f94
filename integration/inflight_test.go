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
}

func (s *overlapStages) Create(ctx context.Context, req *events.Request) *handlers.Outcome {
	s.mu.Lock()
	s.running++
	s.maxAtOnce = max(s.maxAtOnce, s.running)
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

// OFFSETAGENT_MAX_INFLIGHT_BYTES: requests whose records together exceed it wait for each
// other, small ones run side by side up to the concurrency, and one larger than the bound
// still runs (alone).
func TestInflightBytesBound(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.Concurrency, cfg.MaxInflightBytes = 8, 6000
	stages := &overlapStages{}
	startAgent(t, cfg, agent.Options{Stages: stages})
	cl := newClient(t, cfg)

	run := func(prefix string, n, pad int) {
		t.Helper()
		for i := range n {
			body := fmt.Sprintf(`{"name":"%s-%d","config":{"connector.class":"FileStreamSource","pad":%q},"initial_offsets":[]}`,
				prefix, i, strings.Repeat("x", pad))
			cl.publish(body, events.RequestOptions{})
		}
		results := cl.waitResults(len(cl.allResults())+n, time.Minute)
		require.GreaterOrEqual(t, len(results), n)
	}
	run("large", 6, 3500) // two of them exceed 6000 bytes
	require.Equal(t, 1, stages.reset(), "large requests at once")
	run("small", 8, 100)
	require.Greater(t, stages.reset(), 1, "small requests at once")
	run("huge", 1, 9000) // above the bound: runs alone
	require.Equal(t, 1, stages.reset())
}
