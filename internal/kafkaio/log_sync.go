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
	return l.waitApplied(ctx, func(next []int64) bool {
		for p, end := range ends {
			if next[p] < max(end, own[p]) {
				return false
			}
		}
		return true
	})
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

// startEndCallLocked sends the pending call; when it finishes, the next pending one (callers
// that arrived while it was in flight) is sent.
func (l *Log) startEndCallLocked() {
	call := l.endNext
	l.endNext, l.endInflight = nil, call
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		call.ends, call.err = l.lastStableOffsets(ctx)
		cancel()
		close(call.done)
		l.endMu.Lock()
		l.endInflight = nil
		if l.endNext != nil {
			l.startEndCallLocked()
		}
		l.endMu.Unlock()
	}()
}

// lastStableOffsets reads every partition's last stable offset: the end offset Connect's readToEnd
// waits for with a read_committed consumer (ListOffsets LATEST with isolation level
// READ_COMMITTED answers the same; the high watermark unless a transaction is open). It asks
// with one Fetch
// per partition leader that returns at once (MaxWait 0, MinBytes 0) with a byte of records per
// partition (a broker still sends the first non-empty partition's first batch), as kafka-go's ListOffsets sends one request per partition: 25 round
// trips for an offsets topic of 25 partitions, on every barrier.
func (l *Log) lastStableOffsets(ctx context.Context) ([]int64, error) {
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
	byLeader := map[int]*rawFetch{}
	for p := range n {
		f := byLeader[leaders[p]]
		if f == nil {
			// The response-wide limit stays high: a broker may leave out the partitions after it.
			f = newRawFetch(l.client, l.topic)
			f.req.MinBytes, f.req.MaxBytes = 0, math.MaxInt32
			byLeader[leaders[p]] = f
		}
		f.add(p, from[p], 1)
	}
	ends := make([]int64, n)
	seen := make([]bool, n)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for _, f := range byLeader {
		g.Go(func() error {
			res, _, err := f.roundTrip(gctx, l.client, nil)
			if err != nil {
				return fmt.Errorf("last stable offsets of topic %q: %w", l.topic, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, t := range res.Topics {
				if t.Topic != l.topic {
					continue
				}
				for _, rp := range t.Partitions {
					if rp.ErrorCode != 0 {
						return fmt.Errorf("last stable offsets of topic %q partition %d: %w", l.topic, rp.Partition, kafka.Error(rp.ErrorCode))
					}
					if p := int(rp.Partition); p >= 0 && p < n {
						ends[p], seen[p] = lastStable(&rp), true
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		l.leaders.forget(l.topic)
		return nil, err
	}
	for p, ok := range seen {
		if !ok {
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
