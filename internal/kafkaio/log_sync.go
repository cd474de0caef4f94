package kafkaio

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// A Log's readiness and Sync: waiting until what it applied reaches the end offsets (or, for
// a transactional topic, the last stable offsets) seen at start or asked for.

// WaitReady blocks until the log has applied every record before the end offsets seen when Run
// started.
func (l *Log) WaitReady(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	case <-l.done:
		return l.stoppedErr()
	case <-ctx.Done():
		return fmt.Errorf("wait for log of topic %q: %w", l.topic, ctx.Err())
	}
}

// Ready reports whether the initial load is complete.
func (l *Log) Ready() bool {
	select {
	case <-l.ready:
		return true
	default:
		return false
	}
}

// Sync is Connect's readToEnd: it reads the current end offsets of every partition (the last
// stable offsets, as a read_committed consumer's endOffsets) and waits until the log has
// applied everything before them, so a caller sees what anyone committed before the call. A
// transaction open at the call holds its partition's end at its first offset: what it writes
// is seen once it commits, by a later Sync. The barrier also covers the owner's own writes
// that Written was told of before the call: above such a transaction, they are applied (and
// Sync returns) once it is settled.
func (l *Log) Sync(ctx context.Context) error {
	if err := l.waitInited(ctx); err != nil {
		return err
	}
	own := l.ownEnds()
	ends, err := l.endOffsets(ctx)
	if err != nil {
		return fmt.Errorf("sync log of topic %q: %w", l.topic, err)
	}
	if err := l.catchUp(ctx, ends); err != nil {
		return fmt.Errorf("sync log of topic %q: %w", l.topic, err)
	}
	return l.waitApplied(ctx, func(next []int64) bool {
		for p, end := range ends {
			if next[p] < max(end, own[p]) {
				return false
			}
		}
		return true
	})
}

// catchUpFetches bounds the fetches of one barrier's catch-up; the fetch loops bring the
// rest.
const catchUpFetches = 8

// catchUp fetches, without waiting, the partitions of a quiet log (QuietTail) that stand
// before ends, until each stands there or has a run of the owner's records (or a hold) to
// wait for first, whose applier moves it on; then it goes on with what follows that run. A
// log that is not quiet, or not loaded yet, leaves it to its fetch loops.
func (l *Log) catchUp(ctx context.Context, ends []int64) error {
	if !l.quiet || !l.Ready() {
		return nil
	}
	for fetches := 0; fetches < catchUpFetches; {
		l.mu.Lock()
		next, changed, released := slices.Clone(l.next), l.changed, l.holdChanged
		l.mu.Unlock()
		var behind []int
		owned := false
		for p, end := range ends {
			if p >= len(next) || next[p] >= end {
				continue
			}
			if held, _ := l.heldState(p); held || l.ownWaiting(p) {
				owned = true
				continue
			}
			behind = append(behind, p)
		}
		switch {
		case len(behind) > 0:
			fetches++
			if _, err := l.fetchPartitions(ctx, behind, logFetchMaxBytes); err != nil {
				return err
			}
		case owned:
			select {
			case <-changed:
			case <-released:
			case <-l.done:
				return l.stoppedErr()
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			return nil
		}
	}
	return nil
}

// waitInited waits until Run has read the partition count and start offsets.
func (l *Log) waitInited(ctx context.Context) error {
	select {
	case <-l.inited:
		return nil
	case <-l.done:
		return l.stoppedErr()
	case <-ctx.Done():
		return fmt.Errorf("sync log of topic %q: %w", l.topic, ctx.Err())
	}
}

// waitApplied waits until caughtUp, called under l.mu with every partition's next offset to
// apply, reports true.
func (l *Log) waitApplied(ctx context.Context, caughtUp func(next []int64) bool) error {
	for {
		l.mu.Lock()
		ok, changed := caughtUp(l.next), l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-l.done:
			return l.stoppedErr()
		case <-ctx.Done():
			return fmt.Errorf("sync log of topic %q: %w", l.topic, ctx.Err())
		}
	}
}

// endCall is one ListOffsets of the log's end offsets shared by concurrent Sync callers.
type endCall struct {
	done chan struct{}
	ends []int64
	err  error
}

// endOffsets returns end offsets read by a ListOffsets request sent after this call began, so
// the barrier holds; concurrent callers share requests: a caller that finds one in flight
// waits for it and then shares the next one. Under load, Syncs cost one round trip per
// batch of callers instead of one each.
func (l *Log) endOffsets(ctx context.Context) ([]int64, error) {
	l.endMu.Lock()
	if l.endInflight == nil && l.endNext == nil {
		// No call in flight: this caller makes it, on its own goroutine, and the callers that
		// arrive meanwhile share the next one.
		call := &endCall{done: make(chan struct{})}
		l.endInflight = call
		l.endMu.Unlock()
		l.runEndCall(ctx, call)
		return call.ends, call.err
	}
	if l.endNext == nil {
		l.endNext = &endCall{done: make(chan struct{})}
	}
	call := l.endNext
	if l.endInflight == nil {
		l.startEndCallLocked()
	}
	l.endMu.Unlock()
	select {
	case <-call.done:
		return call.ends, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runEndCall makes call on ctx and then sends the next pending call, if any.
func (l *Log) runEndCall(ctx context.Context, call *endCall) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	call.ends, call.err = l.lastStableOffsets(ctx)
	cancel()
	close(call.done)
	l.endMu.Lock()
	l.endInflight = nil
	if l.endNext != nil {
		l.startEndCallLocked()
	}
	l.endMu.Unlock()
}

// startEndCallLocked sends the pending call in a goroutine of its own; when it finishes, the
// next pending one (callers that arrived while it was in flight) is sent.
func (l *Log) startEndCallLocked() {
	call := l.endNext
	l.endNext, l.endInflight = nil, call
	go l.runEndCall(context.Background(), call)
}

// lastStableOffsets reads every partition's last stable offset: the end offset Connect's readToEnd
// waits for with a read_committed consumer (ListOffsets LATEST with isolation level
// READ_COMMITTED answers the same; the high watermark unless a transaction is open). It asks
// with one Fetch per partition leader that returns at once (MaxWait 0, MinBytes 0), as
// kafka-go's ListOffsets sends one request per partition: 25 round trips for an offsets topic
// of 25 partitions, on every barrier. The fetch asks for a byte of records per partition (a
// broker still sends the first non-empty partition's first batch), except on a quiet log
// (QuietTail) that is loaded: there it asks for up to logPollBytes of each partition and
// applies them, so that a barrier that finds others' records also brings them.
func (l *Log) lastStableOffsets(ctx context.Context) ([]int64, error) {
	n := l.Partitions()
	parts := make([]int, n)
	for p := range parts {
		parts[p] = p
	}
	maxBytes := int32(1)
	if l.quiet && l.Ready() {
		maxBytes = logPollBytes
	}
	return l.fetchPartitions(ctx, parts, maxBytes)
}

// fetchPartitions fetches parts from where the log stands, without waiting, with one Fetch per
// partition leader, up to maxBytes of each, and returns every partition's last stable offset
// (indexed by partition; only parts are set). With maxBytes above 1 it applies what it
// fetched, as the fetch loops would (each record once, whichever applies it first).
func (l *Log) fetchPartitions(ctx context.Context, parts []int, maxBytes int32) ([]int64, error) {
	leaders, err := l.leaders.get(ctx, l.topic)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	n := len(l.next)
	from := slices.Clone(l.next)
	l.mu.Unlock()
	if len(leaders) < n {
		return nil, fmt.Errorf("last stable offsets of topic %q: %d partitions, was %d", l.topic, len(leaders), n)
	}
	type leaderFetch struct {
		f     *rawFetch
		parts []int
	}
	byLeader := map[int]*leaderFetch{}
	for _, p := range parts {
		lf := byLeader[leaders[p]]
		if lf == nil {
			// The response-wide limit stays high: a broker may leave out the partitions after it.
			lf = &leaderFetch{f: newRawFetch(l.client, l.topic)}
			lf.f.req.MinBytes, lf.f.req.MaxBytes = 0, math.MaxInt32
			byLeader[leaders[p]] = lf
		}
		lf.f.add(p, from[p], maxBytes)
		lf.parts = append(lf.parts, p)
	}
	ends := make([]int64, n)
	seen := make([]bool, n)
	var mu sync.Mutex
	fetch := func(ctx context.Context, lf *leaderFetch) error {
		res, _, err := lf.f.roundTrip(ctx, l.client, nil)
		if err != nil {
			return fmt.Errorf("last stable offsets of topic %q: %w", l.topic, err)
		}
		var t *tailer
		if maxBytes > 1 {
			t = &tailer{l: l, parts: lf.parts, offsets: make(map[int]int64, len(lf.parts)), hw: map[int]int64{},
				paused: map[int]pause{}, records: recordReader{borrow: l.borrow}}
			for _, p := range lf.parts {
				t.offsets[p] = from[p]
			}
		}
		for _, rt := range res.Topics {
			if rt.Topic != l.topic {
				continue
			}
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return fmt.Errorf("last stable offsets of topic %q partition %d: %w", l.topic, rp.Partition, kafka.Error(rp.ErrorCode))
				}
			}
		}
		if t != nil {
			if err := t.apply(res); err != nil {
				return fmt.Errorf("read topic %q: %w", l.topic, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range res.Topics {
			if rt.Topic != l.topic {
				continue
			}
			for _, rp := range rt.Partitions {
				if p := int(rp.Partition); p >= 0 && p < n {
					ends[p], seen[p] = lastStable(&rp), true
				}
			}
		}
		return nil
	}
	if len(byLeader) == 1 {
		// One leader (one broker, or one partition): its fetch on this goroutine.
		for _, lf := range byLeader {
			err = fetch(ctx, lf)
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		for _, lf := range byLeader {
			g.Go(func() error { return fetch(gctx, lf) })
		}
		err = g.Wait()
	}
	if err != nil {
		l.leaders.forget(l.topic)
		return nil, err
	}
	for _, p := range parts {
		if !seen[p] {
			return nil, fmt.Errorf("last stable offsets of topic %q: no answer for partition %d", l.topic, p)
		}
	}
	return ends, nil
}

func (l *Log) stoppedErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runErr != nil {
		return l.runErr
	}
	return fmt.Errorf("log of topic %q: %w", l.topic, ErrLogStopped)
}

// advance records that partition p has been applied up to next and wakes Sync waiters.
func (l *Log) advance(p int, next int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next[p] = next
	close(l.changed)
	l.changed = make(chan struct{})
	l.checkReadyLocked()
}

func (l *Log) checkReadyLocked() {
	select {
	case <-l.ready:
		return
	default:
	}
	for p, end := range l.target {
		if l.next[p] < end {
			return
		}
	}
	close(l.ready)
}
