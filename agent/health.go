package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// health is what /readyz judges: whether this replica can consume. It is not ready while it
// is not a member of the group, while its fetches of a request partition or its heartbeats
// have failed for longer than the grace (the session timeout: a broker that only restarts or
// a rebalance that only passes stays unnoticed), or while a lane has been working on one
// request for longer than stuckAfter.
type health struct {
	grace      time.Duration
	stuckAfter time.Duration

	mu sync.Mutex
	// joined is set at the first generation; member while a generation runs.
	joined, member bool
	notMemberSince time.Time
	// fetchFailing holds, per request partition whose fetches fail, since when.
	fetchFailing map[int]time.Time
	// heartbeatFailing is since when heartbeats fail (zero: they do not).
	heartbeatFailing time.Time
	// oldest is how long the longest-running request has been worked on.
	oldest func() time.Duration
	// denied are the permissions the last check found refused (permissions.go).
	denied kafkaio.Denied
	// mixed says how the agent's group mixes two Connect clusters, "" when it does not
	// (advertise.go).
	mixed string
}

// setMixed records the verdict of checkGroup and returns the previous one.
func (h *health) setMixed(mixed string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.mixed
	h.mixed = mixed
	return before
}

// mixedGroup says how the agent's group mixes two Connect clusters, "" when it does not.
func (h *health) mixedGroup() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mixed
}

// deniedErr says which permissions the last check found refused, nil when none.
func (h *health) deniedErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.denied) == 0 {
		return nil
	}
	return fmt.Errorf("missing permission: %w", h.denied)
}

// deniedNow returns the refusals the last check found.
func (h *health) deniedNow() kafkaio.Denied {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.denied)
}

// setDenied records the refused permissions of a check and returns the previous ones.
func (h *health) setDenied(denied kafkaio.Denied) kafkaio.Denied {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.denied
	h.denied = denied
	return before
}

func newHealth(grace, stuckAfter time.Duration, oldest func() time.Duration) *health {
	return &health{grace: grace, stuckAfter: stuckAfter, oldest: oldest, fetchFailing: map[int]time.Time{}}
}

// joinedGeneration records that a generation started with the request partitions assigned.
// Fetch failures of partitions still assigned carry over: a broker that refuses fetches makes
// the group rebalance again and again, and each generation alone is short.
func (h *health) joinedGeneration(assigned []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.joined, h.member = true, true
	for p := range h.fetchFailing {
		if !slices.Contains(assigned, p) {
			delete(h.fetchFailing, p)
		}
	}
}

// leftGeneration records that a generation ended (or could not be joined).
func (h *health) leftGeneration() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.member || h.notMemberSince.IsZero() {
		h.notMemberSince = time.Now()
	}
	h.member = false
}

// fetched records the outcome of a fetch of partition p; revoked forgets p.
func (h *health) fetched(p int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.fetchFailing, p)
	} else if _, ok := h.fetchFailing[p]; !ok {
		h.fetchFailing[p] = time.Now()
	}
}

// heartbeat records the outcome of a heartbeat.
func (h *health) heartbeat(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.heartbeatFailing = time.Time{}
	} else if h.heartbeatFailing.IsZero() {
		h.heartbeatFailing = time.Now()
	}
}

// check returns why the replica cannot consume now, nil when it can: every reason that
// holds, not only the first. A fault that refuses heartbeats and fetches also ends the
// membership (the coordinator evicts a member whose heartbeats it refuses), and which of them
// passes the grace first is a matter of timing: the membership alone would hide the failing
// heartbeats and fetches behind it.
func (h *health) check(now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.joined {
		return errors.New("not a member of the consumer group yet")
	}
	var reasons []string
	if !h.member && now.Sub(h.notMemberSince) > h.grace {
		reasons = append(reasons, fmt.Sprintf("not a member of the consumer group for %s", now.Sub(h.notMemberSince).Round(time.Second)))
	}
	if !h.heartbeatFailing.IsZero() && now.Sub(h.heartbeatFailing) > h.grace {
		reasons = append(reasons, fmt.Sprintf("no successful heartbeat for %s", now.Sub(h.heartbeatFailing).Round(time.Second)))
	}
	for _, p := range slices.Sorted(maps.Keys(h.fetchFailing)) {
		if since := h.fetchFailing[p]; now.Sub(since) > h.grace {
			reasons = append(reasons, fmt.Sprintf("no successful fetch of request partition %d for %s", p, now.Sub(since).Round(time.Second)))
		}
	}
	if h.stuckAfter > 0 {
		if d := h.oldest(); d > h.stuckAfter {
			reasons = append(reasons, fmt.Sprintf("a lane has been working on one request for %s (OFFSETAGENT_STUCK_AFTER %s)", d.Round(time.Second), h.stuckAfter))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// heartbeatProbe sends a heartbeat for gen every interval until ctx ends and records the
// outcome: the consumer group's own heartbeats are not observable. A rebalance in progress
// is an answer of a live coordinator, so it counts as a success.
func (a *Agent) heartbeatProbe(ctx context.Context, gen *kafka.Generation, interval time.Duration) {
	transport := a.conns.Separate()
	defer transport.CloseIdleConnections()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: a.cfg.Brokers, Transport: transport, Principal: a.principal})
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		hctx, cancel := context.WithTimeout(ctx, a.health.grace)
		res, err := cl.Heartbeat(hctx, &kafka.HeartbeatRequest{GroupID: gen.GroupID, GenerationID: gen.ID, MemberID: gen.MemberID})
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil && res.Error != nil && !errors.Is(res.Error, kafka.RebalanceInProgress) {
			err = res.Error
		}
		a.health.heartbeat(err)
	}
}
