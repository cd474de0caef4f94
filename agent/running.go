package agent

import (
	"sync"
	"time"
)

// running remembers when each request being worked on started, for
// offsetagent_oldest_request_age_seconds: one request that never finishes holds its lane (and
// every later request for its connector), which the age of the oldest one shows.
type running struct {
	mu      sync.Mutex
	started map[*item]time.Time
}

func newRunning() *running { return &running{started: map[*item]time.Time{}} }

// begin records that it started now; end forgets it.
func (r *running) begin(it *item) {
	r.mu.Lock()
	r.started[it] = time.Now()
	r.mu.Unlock()
}

func (r *running) end(it *item) {
	r.mu.Lock()
	delete(r.started, it)
	r.mu.Unlock()
}

// oldest is how long the longest-running request has run, 0 when none runs.
func (r *running) oldest() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var d time.Duration
	now := time.Now()
	for _, t := range r.started {
		d = max(d, now.Sub(t))
	}
	return d
}
