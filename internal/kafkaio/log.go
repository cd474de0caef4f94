package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"golang.org/x/sync/errgroup"
)

// Fetch tuning for Log. One fetch asks for all the partitions a broker leads (kafka-go's
// Client.Fetch has one partition per request; the Fetch request itself has many), up to
// logFetchMaxBytes of each and logFetchRequestBytes in all: a write of ten records to ten
// partitions wakes one fetch, not ten.
const (
	logFetchMaxBytes     = 1 << 20
	logFetchRequestBytes = 16 << 20
	logFetchMaxWait      = 500 * time.Millisecond
	logBackoffMin        = 100 * time.Millisecond
	logBackoffMax        = 5 * time.Second
	// logApplyChunk bounds the messages handed to apply at once, so a 1 MiB fetch of small records
	// does not grow a large []kafka.Message per partition.
	logApplyChunk = 256
)

// ErrLogStopped is returned by Sync and WaitReady once Run has returned without an error: the
// reader is gone, and callers give up rather than retry.
var ErrLogStopped = errors.New("log is not running")

// Log is a materialised reader of a compacted topic, the Go twin of Connect's KafkaBasedLog: it
// reads every partition from the beginning, hands each record to an apply callback and offers
// Sync, a barrier that returns once everything written before the call has been applied.
//
// Log decides nothing about record contents; views built on it (the config and offsets views of
// Store, the agent's own compacted topics) keep whatever state they need.
type Log struct {
	topic   string
	client  *kafka.Client
	leaders *leaderCache
	apply   func([]kafka.Message)
	logger  *slog.Logger

	// applyMu serialises apply so views need no lock of their own against the Log.
	applyMu sync.Mutex

	mu      sync.Mutex
	started bool
	inited  chan struct{} // closed once next and target are set
	next    []int64       // per partition: the offset after the last applied record
	target  []int64       // initial end offsets; readiness is reaching them
	ready   chan struct{} // closed once every partition reached target
	changed chan struct{} // closed and replaced on every advance, to wake Sync
	done    chan struct{} // closed when Run returns
	runErr  error

	// endMu guards the shared end-offset reads of Sync (endOffsets).
	endMu       sync.Mutex
	endInflight *endCall
	endNext     *endCall
}

// NewLog returns a Log over topic. It never dials. apply is called with the records of one fetch
// of one partition, in offset order, never concurrently with itself; it must not keep the slice,
// but it may keep each message's Key, Value and Headers, which are fresh copies. Key and Value may
// share one backing array (both are capacity-limited, so appending to either copies). A nil Value
// is a tombstone; an empty non-nil Value is an empty record value. Control records (transaction
// markers) are never passed to apply.
func NewLog(opts Options, topic string, apply func([]kafka.Message)) (*Log, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("new log: no brokers")
	}
	if topic == "" {
		return nil, errors.New("new log: empty topic")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cl := NewClient(opts)
	return &Log{
		topic:   topic,
		client:  cl,
		leaders: newLeaderCache(cl),
		apply:   apply,
		logger:  logger.With("topic", topic),
		inited:  make(chan struct{}),
		ready:   make(chan struct{}),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// Topic returns the topic the log reads.
func (l *Log) Topic() string { return l.topic }

// Run reads the topic until ctx is done. It returns nil when ctx ends it, and an error when the
// topic cannot be described or a partition cannot be read for a non-retriable reason. Run may be
// called once.
func (l *Log) Run(ctx context.Context) (err error) {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return fmt.Errorf("run log of topic %q: already started", l.topic)
	}
	l.started = true
	l.mu.Unlock()
	defer func() {
		if ctx.Err() != nil {
			err = nil
		}
		l.mu.Lock()
		l.runErr = err
		l.mu.Unlock()
		close(l.done)
	}()

	n, err := PartitionCount(ctx, l.client, l.topic)
	if err != nil {
		return fmt.Errorf("run log of topic %q: %w", l.topic, err)
	}
	first, err := ListOffsets(ctx, l.client, l.topic, n, kafka.FirstOffset)
	if err != nil {
		return fmt.Errorf("run log of topic %q: %w", l.topic, err)
	}
	last, err := ListOffsets(ctx, l.client, l.topic, n, kafka.LastOffset)
	if err != nil {
		return fmt.Errorf("run log of topic %q: %w", l.topic, err)
	}
	l.mu.Lock()
	l.next, l.target = first, last
	l.checkReadyLocked()
	l.mu.Unlock()
	close(l.inited)

	// The initial load runs a fetch loop per partition, so that the broker builds one
	// partition's response while the view applies another's. Then, and whenever a partition's
	// leadership moves (a broker answers "not leader", or kafka-go's routing finds the
	// partitions of one request led by two brokers), every loop stops and the partitions are
	// grouped again from fresh metadata: one loop per leader.
	backoff := logBackoffMin
	for {
		leaders, err := PartitionLeaders(ctx, l.client, l.topic)
		if err == nil && len(leaders) < n {
			err = fmt.Errorf("topic has %d partitions, was %d", len(leaders), n)
		}
		if err == nil {
			loading := !l.Ready()
			groups := map[int][]int{}
			for p := range n {
				if loading {
					groups[p] = []int{p}
				} else {
					groups[leaders[p]] = append(groups[leaders[p]], p)
				}
			}
			g, gctx := errgroup.WithContext(ctx)
			for _, parts := range groups {
				g.Go(func() error { return l.tail(gctx, parts) })
			}
			if loading {
				g.Go(func() error {
					select {
					case <-l.ready:
						return errLoaded
					case <-gctx.Done():
						return nil
					}
				})
			}
			started := time.Now()
			err = g.Wait()
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, errLoaded) {
				continue
			}
			if !errors.Is(err, errRegroup) {
				return err
			}
			if time.Since(started) > logBackoffMax {
				backoff = logBackoffMin // the loops ran a while: a new change, not the same one
			}
		}
		l.logger.Warn("regroup log partitions by leader", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, logBackoffMax)
	}
}

// errRegroup and errLoaded stop the fetch loops of Run so that partitions are grouped by
// leader again.
var (
	errRegroup = errors.New("partition leadership changed")
	errLoaded  = errors.New("initial load done")
)

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

// Sync is Connect's readToEnd: it reads the current end offsets of every partition and waits
// until the log has applied everything before them, so a caller sees writes made by anyone
// before the call.
func (l *Log) Sync(ctx context.Context) error {
	select {
	case <-l.inited:
	case <-l.done:
		return l.stoppedErr()
	case <-ctx.Done():
		return fmt.Errorf("sync log of topic %q: %w", l.topic, ctx.Err())
	}
	ends, err := l.endOffsets(ctx)
	if err != nil {
		return fmt.Errorf("sync log of topic %q: %w", l.topic, err)
	}
	for {
		l.mu.Lock()
		caughtUp := true
		for p, end := range ends {
			if l.next[p] < end {
				caughtUp = false
				break
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if caughtUp {
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
		call.ends, call.err = l.highWatermarks(ctx)
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

// highWatermarks reads every partition's high watermark: the end offset Connect's readToEnd
// waits for (ListOffsets LATEST answers the same for read_uncommitted). It asks with one Fetch
// per partition leader that returns at once (MaxWait 0, MinBytes 0) with a byte of records per
// partition (a broker still sends the first non-empty partition's first batch), as kafka-go's ListOffsets sends one request per partition: 25 round
// trips for an offsets topic of 25 partitions, on every barrier.
func (l *Log) highWatermarks(ctx context.Context) ([]int64, error) {
	leaders, err := l.leaders.get(ctx, l.topic)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	n := len(l.next)
	from := slices.Clone(l.next)
	l.mu.Unlock()
	if len(leaders) < n {
		return nil, fmt.Errorf("high watermarks of topic %q: %d partitions, was %d", l.topic, len(leaders), n)
	}
	byLeader := map[int][]fetchapi.RequestPartition{}
	for p := range n {
		byLeader[leaders[p]] = append(byLeader[leaders[p]], fetchapi.RequestPartition{Partition: int32(p),
			CurrentLeaderEpoch: -1, FetchOffset: from[p], LogStartOffset: -1, PartitionMaxBytes: 1})
	}
	ends := make([]int64, n)
	seen := make([]bool, n)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for _, parts := range byLeader {
		g.Go(func() error {
			// The response-wide limit stays high: a broker may leave out the partitions after it.
			msg, err := transportOf(l.client).RoundTrip(gctx, l.client.Addr, &fetchapi.Request{ReplicaID: -1,
				MaxBytes: math.MaxInt32, SessionID: -1, SessionEpoch: -1,
				Topics: []fetchapi.RequestTopic{{Topic: l.topic, Partitions: parts}}})
			if err != nil {
				return fmt.Errorf("high watermarks of topic %q: %w", l.topic, err)
			}
			res, ok := msg.(*fetchapi.Response)
			if !ok {
				return fmt.Errorf("high watermarks of topic %q: unexpected response %T", l.topic, msg)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, t := range res.Topics {
				if t.Topic != l.topic {
					continue
				}
				for _, rp := range t.Partitions {
					if rp.RecordSet.Records != nil {
						discardRecords(rp.RecordSet.Records)
					}
					if rp.ErrorCode != 0 {
						return fmt.Errorf("high watermarks of topic %q partition %d: %w", l.topic, rp.Partition, kafka.Error(rp.ErrorCode))
					}
					if p := int(rp.Partition); p >= 0 && p < n {
						ends[p], seen[p] = rp.HighWatermark, true
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
			return nil, fmt.Errorf("high watermarks of topic %q: no answer for partition %d", l.topic, p)
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

// tail fetches partitions (all led by one broker) from l.next until ctx is done, with one
// Fetch request for all of them per round. Fetch errors are retried with backoff, as Connect's
// consumer does; they are logged, never fatal, so a broker restart only delays the view. A
// leadership error returns errRegroup.
func (l *Log) tail(ctx context.Context, parts []int) error {
	offsets := make(map[int]int64, len(parts))
	l.mu.Lock()
	for _, p := range parts {
		offsets[p] = l.next[p]
	}
	l.mu.Unlock()
	var batch []kafka.Message
	// A request that fails as a whole is retried after backoff. A partition that fails on its
	// own (or whose records do not decode) sits out of the requests for its own backoff, so the
	// other partitions of the broker keep being read.
	backoff := logBackoffMin
	paused := map[int]pause{}
	pauseFor := func(p int, err error) {
		d := logBackoffMin
		if prev, ok := paused[p]; ok {
			d = min(2*prev.backoff, logBackoffMax)
		}
		paused[p] = pause{until: time.Now().Add(d), backoff: d}
		l.logger.Warn("fetch log records", "partition", p, "offset", offsets[p], "retry_in", d, "err", err)
	}
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	req := &fetchapi.Request{ReplicaID: -1, MinBytes: 1, MaxBytes: logFetchRequestBytes,
		MaxWaitTime: int32(logFetchMaxWait / time.Millisecond), SessionID: -1, SessionEpoch: -1,
		Topics: []fetchapi.RequestTopic{{Topic: l.topic}}}
	for round := 0; ; round++ {
		// A broker fills the response in request order up to MaxBytes: rotate the order so
		// that no partition waits behind busy ones for long.
		now := time.Now()
		next := time.Time{}
		req.Topics[0].Partitions = req.Topics[0].Partitions[:0]
		for i := range parts {
			p := parts[(i+round)%len(parts)]
			if pz, ok := paused[p]; ok && now.Before(pz.until) {
				if next.IsZero() || pz.until.Before(next) {
					next = pz.until
				}
				continue
			}
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, fetchapi.RequestPartition{Partition: int32(p),
				CurrentLeaderEpoch: -1, FetchOffset: offsets[p], LogStartOffset: -1, PartitionMaxBytes: logFetchMaxBytes})
		}
		if len(req.Topics[0].Partitions) == 0 {
			if !sleep(time.Until(next)) {
				return nil
			}
			continue
		}
		msg, err := transportOf(l.client).RoundTrip(ctx, l.client.Addr, req)
		if err == nil {
			if _, ok := msg.(*fetchapi.Response); !ok {
				err = fmt.Errorf("unexpected response %T", msg)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isLeadershipError(err) {
				return fmt.Errorf("fetch log records: %w: %w", errRegroup, err)
			}
			l.logger.Warn("fetch log records", "partitions", parts, "err", err)
			if !sleep(backoff) {
				return nil
			}
			backoff = min(2*backoff, logBackoffMax)
			continue
		}
		backoff = logBackoffMin
		for _, t := range msg.(*fetchapi.Response).Topics {
			if t.Topic != l.topic {
				continue
			}
			for i := range t.Partitions {
				rp := &t.Partitions[i]
				p := int(rp.Partition)
				offset, mine := offsets[p]
				if !mine {
					discard(rp)
					continue
				}
				if rp.ErrorCode != 0 {
					discard(rp)
					perr := kafka.Error(rp.ErrorCode)
					if errors.Is(perr, kafka.OffsetOutOfRange) && rp.LogStartOffset > offset {
						// Retention or DeleteRecords removed the records we wanted: start at the
						// log start, as a consumer with auto.offset.reset=earliest would.
						offsets[p] = rp.LogStartOffset
						continue
					}
					if isLeadershipError(perr) {
						return fmt.Errorf("fetch log records of partition %d: %w: %w", p, errRegroup, perr)
					}
					pauseFor(p, perr)
					continue
				}
				var next int64
				if rp.RecordSet.Records != nil {
					batch, next, err = readRecords(rp.RecordSet.Records, l.topic, p, offset, batch[:0], l.applyBatch)
					if err != nil {
						// Records applied before the error are applied again after the retry:
						// harmless for a latest-value-per-key view.
						discard(rp)
						pauseFor(p, err)
						continue
					}
					l.applyBatch(batch)
				} else {
					next = offset
				}
				delete(paused, p)
				if next == offset && rp.HighWatermark > offset {
					// Nothing at or after offset below the high watermark: compaction removed the
					// tail (e.g. an expired tombstone). Connect's consumer position would move
					// past it the same way.
					next = rp.HighWatermark
				}
				if next != offset {
					l.advance(p, next)
					offsets[p] = next
				}
			}
		}
	}
}

// pause is how long a partition sits out of its loop's fetches after an error of its own.
type pause struct {
	until   time.Time
	backoff time.Duration
}

// discard releases a fetched partition's records unread.
func discard(rp *fetchapi.ResponsePartition) {
	if rp.RecordSet.Records != nil {
		discardRecords(rp.RecordSet.Records)
	}
}

// isLeadershipError reports whether err means a request went to a broker that does not lead
// one of its partitions (or does not know it yet), so partitions must be grouped again.
func isLeadershipError(err error) bool {
	for _, e := range []error{kafka.NotLeaderForPartition, kafka.LeaderNotAvailable, kafka.ReplicaNotAvailable,
		kafka.UnknownTopicOrPartition, kafka.FencedLeaderEpoch, kafka.UnknownLeaderEpoch,
		protocol.ErrNoLeader, protocol.ErrNoPartition, protocol.ErrNoTopic} {
		if errors.Is(err, e) {
			return true
		}
	}
	// kafka-go's routing of a request whose partitions its metadata shows led by two brokers.
	return strings.Contains(err.Error(), "mismatching leaders")
}

func (l *Log) applyBatch(batch []kafka.Message) {
	if len(batch) == 0 {
		return
	}
	l.applyMu.Lock()
	l.apply(batch)
	l.applyMu.Unlock()
	clear(batch) // drop references to records the view may have discarded
}

// readRecords copies the records at or after offset out of rs (which holds pooled buffers),
// passing every logApplyChunk of them to flush, and returns the rest and the offset after the
// last record seen, control records included.
func readRecords(rs kafka.RecordReader, topic string, p int, offset int64, out []kafka.Message, flush func([]kafka.Message)) ([]kafka.Message, int64, error) {
	next := offset
	batches := []kafka.RecordReader{rs}
	if stream, ok := rs.(*protocol.RecordStream); ok {
		batches = stream.Records
	}
	for _, b := range batches {
		_, control := b.(*protocol.ControlBatch)
		for {
			r, err := b.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return out, next, fmt.Errorf("read record of partition %d: %w", p, err)
			}
			if r.Offset < offset || control {
				// Batches may start before the requested offset; control records only move the
				// position.
				closeBytes(r.Key, r.Value)
				next = max(next, r.Offset+1)
				continue
			}
			key, value, err := copyRecord(r.Key, r.Value)
			if err != nil {
				return out, next, fmt.Errorf("read record %d of partition %d: %w", r.Offset, p, err)
			}
			out = append(out, kafka.Message{
				Topic:     topic,
				Partition: p,
				Offset:    r.Offset,
				Key:       key,
				Value:     value,
				Headers:   r.Headers,
				Time:      r.Time,
			})
			next = r.Offset + 1
			if len(out) == logApplyChunk {
				flush(out)
				out = out[:0]
			}
		}
	}
	return out, next, nil
}

// copyRecord copies key and value into one allocation (one malloc per record instead of two keeps
// view loads fast and small) and releases the pooled pages they came from.
func copyRecord(k, v protocol.Bytes) (key, value []byte, err error) {
	defer closeBytes(k, v)
	kn, vn := bytesLen(k), bytesLen(v)
	if kn+vn == 0 {
		if k != nil {
			key = []byte{}
		}
		if v != nil {
			value = []byte{}
		}
		return key, value, nil
	}
	buf := make([]byte, kn+vn)
	if k != nil {
		if _, err := io.ReadFull(k, buf[:kn]); err != nil {
			return nil, nil, err
		}
		key = buf[:kn:kn]
	}
	if v != nil {
		if _, err := io.ReadFull(v, buf[kn:]); err != nil {
			return nil, nil, err
		}
		value = buf[kn:]
	}
	return key, value, nil
}

func bytesLen(b protocol.Bytes) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// discardRecords reads rs to its end, releasing each record's pooled buffers.
func discardRecords(rs kafka.RecordReader) {
	for {
		r, err := rs.ReadRecord()
		if err != nil {
			return
		}
		closeBytes(r.Key, r.Value)
	}
}

func closeBytes(bs ...protocol.Bytes) {
	for _, b := range bs {
		if b != nil {
			_ = b.Close()
		}
	}
}
