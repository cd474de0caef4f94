package kafkaio

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	bs, err := SyncEnds(ctx, l)
	if err != nil {
		return err
	}
	return bs[0].Wait(ctx)
}

// Barrier is the second half of a Sync whose end offsets SyncEnds has read.
type Barrier struct {
	l *Log
	// own are the ends of the owner's runs Written was told of before the call; ends the end
	// offsets read.
	own, ends []int64
}

// SyncEnds is the first half of Sync for each of logs: it reads their end offsets, and each
// Barrier's Wait then waits until its log has applied everything before them (Sync is
// SyncEnds and Wait). The logs that share a cluster (the same brokers, transport and
// principal) with the first and have no read of their ends in flight are read in one Fetch
// per broker, so that the barriers of a config topic and an offsets topic cost one round trip,
// not one each; the others share their own reads, as concurrent Syncs do (endOffsets).
func SyncEnds(ctx context.Context, logs ...*Log) ([]Barrier, error) {
	bs := make([]Barrier, len(logs))
	for i, l := range logs {
		if err := l.waitInited(ctx); err != nil {
			return nil, err
		}
		bs[i] = Barrier{l: l, own: l.ownEnds()}
	}
	ends, err := endOffsetsTogether(ctx, logs)
	if err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i].ends = ends[i]
	}
	return bs, nil
}

// Wait waits until the barrier's log has applied everything before the end offsets read and
// the owner's runs Written was told of before them.
func (b Barrier) Wait(ctx context.Context) error {
	l, own, ends := b.l, b.own, b.ends
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
		next, changed, released := slices.Clone(l.next), l.changedLocked(), l.holdChanged
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
		ok, changed := caughtUp(l.next), l.changedLocked()
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
	l.endCallDone()
}

// endCallDone clears the read of l's ends in flight and sends the next pending one, if any.
func (l *Log) endCallDone() {
	l.endMu.Lock()
	l.endInflight = nil
	if l.endNext != nil {
		l.startEndCallLocked()
	}
	l.endMu.Unlock()
}

// endOffsetsTogether is endOffsets of every log in logs (SyncEnds): the logs of the first's
// cluster with no read in flight or pending are read together in one call (fetchEnds), each
// other log by its own endOffsets, all at once. Each log's read is made after the call began.
func endOffsetsTogether(ctx context.Context, logs []*Log) ([][]int64, error) {
	wrap := func(l *Log, err error) error { return fmt.Errorf("sync log of topic %q: %w", l.topic, err) }
	ends := make([][]int64, len(logs))
	if len(logs) == 1 {
		e, err := logs[0].endOffsets(ctx)
		if err != nil {
			return nil, wrap(logs[0], err)
		}
		ends[0] = e
		return ends, nil
	}
	var joint []int
	var calls []*endCall
	for i, l := range logs {
		if !sameCluster(logs[0].client, l.client) {
			continue
		}
		l.endMu.Lock()
		if l.endInflight == nil && l.endNext == nil {
			// The read of l's ends in flight is this one: callers that come meanwhile share
			// the next, as they would share l's own (endOffsets).
			call := &endCall{done: make(chan struct{})}
			l.endInflight = call
			joint, calls = append(joint, i), append(calls, call)
		}
		l.endMu.Unlock()
	}
	readJoint := func(ctx context.Context) error {
		reqs := make([]endsRequest, len(joint))
		for k, i := range joint {
			reqs[k] = logs[i].endsRequest()
		}
		jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		got, err := fetchEnds(jctx, reqs)
		cancel()
		for k, i := range joint {
			l, call := logs[i], calls[k]
			if err == nil {
				call.ends, ends[i] = got[k], got[k]
			}
			call.err = err
			close(call.done)
			l.endCallDone()
		}
		if err != nil {
			return wrap(logs[joint[0]], err)
		}
		return nil
	}
	if len(joint) == len(logs) {
		// Every log is read in the one joint call (the common case: one request's barriers):
		// it is made on this goroutine, which would only wait for it otherwise.
		if err := readJoint(ctx); err != nil {
			return nil, err
		}
		return ends, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	if len(joint) > 0 {
		g.Go(func() error { return readJoint(gctx) })
	}
	for i, l := range logs {
		if slices.Contains(joint, i) {
			continue
		}
		g.Go(func() error {
			e, err := l.endOffsets(gctx)
			if err != nil {
				return wrap(l, err)
			}
			ends[i] = e
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return ends, nil
}

// sameCluster reports whether a and b send their requests to the same brokers through the
// same transport as the same principal, so that one may send a request for the other.
func sameCluster(a, b *kafka.Client) bool {
	if a == b {
		return true
	}
	if a.Addr.String() != b.Addr.String() || PrincipalOf(a) != PrincipalOf(b) {
		return false
	}
	ra, rb := baseTransport(a), baseTransport(b)
	ta, tb := reflect.TypeOf(ra), reflect.TypeOf(rb)
	return ta == tb && ta != nil && ta.Comparable() && ra == rb
}

// baseTransport is cl's transport below the client's own layers (its layout wait).
func baseTransport(cl *kafka.Client) kafka.RoundTripper {
	rt := transportOf(cl)
	if lt, ok := rt.(*layoutTransport); ok {
		rt = lt.RoundTripper
	}
	return rt
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
	r := l.endsRequest()
	return l.fetchPartitions(ctx, r.parts, r.maxBytes)
}

// endsRequest is what lastStableOffsets asks for: every partition, one byte of each, or
// logPollBytes of each on a quiet log that is loaded.
func (l *Log) endsRequest() endsRequest {
	n := l.Partitions()
	parts := make([]int, n)
	for p := range parts {
		parts[p] = p
	}
	maxBytes := int32(1)
	if l.quiet && l.Ready() {
		maxBytes = logPollBytes
	}
	return endsRequest{l: l, parts: parts, maxBytes: maxBytes}
}

// fetchPartitions fetches parts from where the log stands, without waiting, with one Fetch per
// partition leader, up to maxBytes of each, and returns every partition's last stable offset
// (indexed by partition; only parts are set). With maxBytes above 1 it applies what it
// fetched, as the fetch loops would (each record once, whichever applies it first).
func (l *Log) fetchPartitions(ctx context.Context, parts []int, maxBytes int32) ([]int64, error) {
	ends, err := fetchEnds(ctx, []endsRequest{{l: l, parts: parts, maxBytes: maxBytes}})
	if err != nil {
		return nil, err
	}
	return ends[0], nil
}

// endsRequest asks fetchEnds for the last stable offsets of the partitions parts of log l, with
// up to maxBytes of each.
type endsRequest struct {
	l        *Log
	parts    []int
	maxBytes int32
}

// fetchEnds is fetchPartitions for several logs at once: the partitions of every log that
// one broker leads go in one Fetch request (the first log's client sends it; the logs share
// a transport, sameCluster), so that the barriers of several topics cost one round trip. It
// returns each log's end offsets, in the order of reqs.
func fetchEnds(ctx context.Context, reqs []endsRequest) ([][]int64, error) {
	type logFetch struct {
		ti    int // the log's topic in the request
		parts []int
		// apply is the partitions of parts whose fetched records are applied (maxBytes
		// above 1).
		apply []int
	}
	type leaderFetch struct {
		f      *rawFetch
		leader int
		logs   map[int]*logFetch // by index in reqs
	}
	byLeader := map[int]*leaderFetch{}
	from := make([][]int64, len(reqs))
	ends := make([][]int64, len(reqs))
	seen := make([][]bool, len(reqs))
	client := reqs[0].l.client
	for i, r := range reqs {
		l := r.l
		leaders, err := l.leaders.get(ctx, l.topic)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		n := len(l.next)
		from[i] = slices.Clone(l.next)
		l.mu.Unlock()
		if len(leaders) < n {
			return nil, fmt.Errorf("last stable offsets of topic %q: %d partitions, was %d", l.topic, len(leaders), n)
		}
		ends[i], seen[i] = make([]int64, n), make([]bool, n)
		for _, p := range r.parts {
			lf := byLeader[leaders[p]]
			if lf == nil {
				// The response-wide limit stays high: a broker may leave out the partitions after it.
				lf = &leaderFetch{f: newRawFetch(client, l.topic), leader: leaders[p], logs: map[int]*logFetch{}}
				lf.f.req.MinBytes, lf.f.req.MaxBytes = 0, math.MaxInt32
				byLeader[leaders[p]] = lf
			}
			lg := lf.logs[i]
			if lg == nil {
				lg = &logFetch{ti: -1}
				lf.logs[i] = lg
				for ti, t := range lf.f.req.Topics {
					if t.Topic == l.topic && len(t.Partitions) == 0 {
						lg.ti = ti // the topic the request was made with, still empty
					}
				}
				if lg.ti < 0 {
					lg.ti = lf.f.addTopic(l.topic)
				}
			}
			maxBytes := r.maxBytes
			if maxBytes > 1 && l.ownNext(p) {
				// A partition whose next records are the owner's own, held while they are
				// written or waiting for the applier, is asked for its end only, and nothing
				// the broker sends of it is applied: its records would come back as the owner
				// wrote them (after a bulk write, every partition's first batch whole, up to
				// 512 KiB before compression), to be inflated, read and dropped as applied.
				maxBytes = 1
			} else {
				lg.apply = append(lg.apply, p)
			}
			lf.f.addTo(lg.ti, p, from[i][p], maxBytes)
			lg.parts = append(lg.parts, p)
		}
	}
	var mu sync.Mutex
	fetch := func(ctx context.Context, lf *leaderFetch) error {
		// On the first log's own connection to the leader, read on this goroutine: no wait
		// (MaxWait 0), so that a barrier is not handed to a connection's goroutine and back.
		res, _, err := lf.f.roundTripOn(ctx, client, reqs[0].l.conns, lf.leader, nil)
		if err != nil {
			var topics []string
			for i := range lf.logs {
				topics = append(topics, reqs[i].l.topic)
			}
			slices.Sort(topics)
			return fmt.Errorf("last stable offsets of topic %s: %w", quotedList(topics), err)
		}
		for i, lg := range lf.logs {
			l := reqs[i].l
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
			if reqs[i].maxBytes > 1 {
				t := &tailer{l: l, parts: lg.apply, offsets: make(map[int]int64, len(lg.apply)), hw: map[int]int64{},
					paused: map[int]pause{}, records: recordReader{borrow: l.borrow}}
				for _, p := range lg.apply {
					t.offsets[p] = from[i][p]
				}
				if err := t.apply(res); err != nil {
					return fmt.Errorf("read topic %q: %w", l.topic, err)
				}
			}
			mu.Lock()
			for _, rt := range res.Topics {
				if rt.Topic != l.topic {
					continue
				}
				for _, rp := range rt.Partitions {
					if p := int(rp.Partition); p >= 0 && p < len(ends[i]) {
						ends[i][p], seen[i][p] = lastStable(&rp), true
					}
				}
			}
			mu.Unlock()
		}
		return nil
	}
	var err error
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
		for _, r := range reqs {
			r.l.leaders.forget(r.l.topic)
		}
		return nil, err
	}
	for i, r := range reqs {
		for _, p := range r.parts {
			if !seen[i][p] {
				return nil, fmt.Errorf("last stable offsets of topic %q: no answer for partition %d", r.l.topic, p)
			}
		}
	}
	return ends, nil
}

// quotedList is topics quoted and joined by commas, for an error that names several.
func quotedList(topics []string) string {
	var b strings.Builder
	for i, t := range topics {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t))
	}
	return b.String()
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
	if l.changed != nil {
		close(l.changed)
		l.changed = nil // made again by the next waiter (changedLocked), if any
	}
	l.checkReadyLocked()
}

// changedLocked returns the channel the next advance closes, making it when none is: an
// advance nobody waits for (most of a busy agent's small writes, applied by their writers)
// costs no channel. The caller holds l.mu.
func (l *Log) changedLocked() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
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
