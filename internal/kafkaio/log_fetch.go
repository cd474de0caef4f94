package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tail fetches partitions (all led by one broker) from l.next until ctx is done, with one
// Fetch request for all of them per round. Fetch errors are retried with backoff, as Connect's
// consumer does; they are logged, never fatal, so a broker restart only delays the view. A
// leadership error returns errRegroup.
func (l *Log) tail(ctx context.Context, parts []int) error {
	t := &tailer{l: l, parts: parts, offsets: make(map[int]int64, len(parts)), hw: make(map[int]int64, len(parts)), paused: map[int]pause{},
		records: recordReader{borrow: l.borrow}}
	l.mu.Lock()
	for _, p := range parts {
		t.offsets[p] = l.next[p]
	}
	l.mu.Unlock()
	// A request that fails as a whole is retried after backoff. A partition that fails on its
	// own (or whose records do not decode) sits out of the requests for its own backoff, so the
	// other partitions of the broker keep being read.
	failures := 0
	for round := 0; ; round++ {
		if wake, released := t.prepare(round); t.fetch.partitions() == 0 {
			if released != nil {
				// Every partition is held by a write: wait for a release (or a pause's end).
				wait := time.NewTimer(time.Until(wake))
				if wake.IsZero() {
					wait.Reset(time.Second)
				}
				select {
				case <-released:
				case <-wait.C:
				case <-ctx.Done():
				}
				wait.Stop()
				if ctx.Err() != nil {
					return nil
				}
				continue
			}
			if !Sleep(ctx, time.Until(wake)) {
				return nil
			}
			continue
		}
		res, buf, err := t.fetch.roundTrip(ctx, l.client, t.buf)
		t.buf = buf
		if err != nil {
			t.fetch = nil // the connection may still be reading into its buffer
			if ctx.Err() != nil {
				return nil
			}
			if isLeadershipError(err) {
				return fmt.Errorf("fetch log records: %w: %w", errRegroup, err)
			}
			l.logger.Warn("fetch log records", "partitions", parts, "err", err)
			failures++
			if !Sleep(ctx, l.backoff.Delay(failures)) {
				return nil
			}
			continue
		}
		failures = 0
		if err := t.apply(res); err != nil {
			return err
		}
	}
}

// tailer is the state of one fetch loop of tail: its partitions, their next offsets, the
// partitions sitting out after an error, the Fetch request it reuses (with the buffer of its
// response) and the reader of the response's records.
type tailer struct {
	l       *Log
	parts   []int
	offsets map[int]int64
	paused  map[int]pause
	fetch   *rawFetch
	buf     []byte // the last response's bytes, reused
	records recordReader
	batch   []kafka.Message
	// hw is each partition's last stable offset (its end for a read_committed reader) as the
	// last response showed it: a fetch whose partitions all stand there (or past it: own
	// records) asks for logPollBytes.
	hw map[int]int64
}

// pause is how long a partition sits out of its loop's fetches after an error of its own.
type pause struct {
	until    time.Time
	failures int
}

// prepare fills the request with the partitions that are not paused or held by a write, in
// an order rotated by round: a broker fills the response in request order up to MaxBytes, so
// that no partition waits behind busy ones for long. Each partition is fetched from where the
// log stands, which Written may have moved. When every partition is paused it returns when
// the first pause ends; released is not nil when a partition was left out for a hold (then
// the fetch waits only briefly, so that a release is seen soon), and is closed at the next
// release.
func (t *tailer) prepare(round int) (wake time.Time, released <-chan struct{}) {
	now := time.Now()
	if t.fetch == nil {
		t.fetch = newRawFetch(t.l.client, t.l.topic)
	}
	t.fetch.reset()
	polling := true
	for i := range t.parts {
		p := t.parts[(i+round)%len(t.parts)]
		// Under the partition's lock: the applier takes a run of own records off the list
		// before it moves the position past them, and a fetch from the old position then
		// would bring those records back.
		pmu := &t.l.pmu[p]
		pmu.Lock()
		t.offsets[p] = max(t.offsets[p], t.l.position(p))
		held, ch := t.l.heldState(p)
		skip := held || t.l.ownWaiting(p)
		pmu.Unlock()
		if skip {
			released = ch
			continue
		}
		if pz, ok := t.paused[p]; ok && now.Before(pz.until) {
			if wake.IsZero() || pz.until.Before(wake) {
				wake = pz.until
			}
			continue
		}
		hw, known := t.hw[p]
		polling = polling && known && t.offsets[p] >= hw
		t.fetch.add(p, t.offsets[p], logFetchMaxBytes)
	}
	t.fetch.req.MaxBytes, t.fetch.req.MinBytes = logFetchRequestBytes, 1
	if polling {
		t.fetch.req.MaxBytes = logPollBytes
		if t.l.quiet {
			t.fetch.req.MinBytes = logPollBytes
		}
	}
	t.fetch.req.MaxWaitMillis = int32(logFetchMaxWait / time.Millisecond)
	if released != nil {
		t.fetch.req.MaxWaitMillis = int32(heldPoll / time.Millisecond)
	}
	return wake, released
}

// pauseFor makes partition p sit out for its backoff after err.
func (t *tailer) pauseFor(p int, err error) {
	n := t.paused[p].failures + 1
	d := t.l.backoff.Delay(n)
	t.paused[p] = pause{until: time.Now().Add(d), failures: n}
	t.l.logger.Warn("fetch log records", "partition", p, "offset", t.offsets[p], "retry_in", d, "err", err)
}

// apply hands the records of a Fetch response to the log and moves the offsets on. A
// leadership error of a partition returns errRegroup; other errors of a partition pause it.
func (t *tailer) apply(res *kmsg.FetchResponse) error {
	// A response that brought records may have left partitions empty because it was full (the
	// request's MaxBytes), not because they have nothing more: only an empty response shows
	// that a partition has nothing below its high watermark.
	empty := true
	for _, rt := range res.Topics {
		for i := range rt.Partitions {
			empty = empty && len(rt.Partitions[i].RecordBatches) == 0
		}
	}
	for _, rt := range res.Topics {
		if rt.Topic != t.l.topic {
			continue
		}
		for i := range rt.Partitions {
			if err := t.applyPartition(&rt.Partitions[i], empty); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tailer) applyPartition(rp *kmsg.FetchResponseTopicPartition, emptyResponse bool) error {
	p := int(rp.Partition)
	fetched, mine := t.offsets[p]
	if !mine {
		return nil
	}
	// The partition's records are applied by this loop or by Written, one at a time.
	pmu := &t.l.pmu[p]
	pmu.Lock()
	defer pmu.Unlock()
	offset := t.l.position(p) // Written may have moved it since the fetch was sent
	t.l.fetched.Add(int64(len(rp.RecordBatches)))
	if held, _ := t.l.heldState(p); held {
		// A fetch sent before a write began brought the partition back: its new records are
		// most likely the writer's own, which Written applies. Anything of others' is fetched
		// again after the release.
		return nil
	}
	if rp.ErrorCode != 0 {
		perr := kafka.Error(rp.ErrorCode)
		switch {
		case errors.Is(perr, kafka.OffsetOutOfRange) && rp.LogStartOffset > offset:
			// Retention or DeleteRecords removed the records we wanted: start at the log
			// start, as a consumer with auto.offset.reset=earliest would.
			t.offsets[p] = rp.LogStartOffset
			t.l.advance(p, rp.LogStartOffset)
		case isLeadershipError(perr):
			return fmt.Errorf("fetch log records of partition %d: %w: %w", p, errRegroup, perr)
		default:
			t.pauseFor(p, perr)
		}
		return nil
	}
	// Runs of own records are added (Written) and taken under the partition's lock, which this
	// loop holds: when none waits now, none comes before the records are read, and the reader
	// need not look for one before each record (a lock of the log each).
	var own ownFunc
	if t.l.hasOwn(p) {
		own = func(at, pos int64, out []kafka.Message) ([]kafka.Message, int64) {
			return t.l.applyOwn(p, at, pos, out)
		}
	}
	var next int64
	var err error
	t.records.aborted = rp.AbortedTransactions
	t.batch, next, err = t.records.read(rp.RecordBatches, t.l.topic, p, offset, t.batch[:0], t.l.applyBatch, own)
	if err != nil {
		// Records applied before the error are applied again after the retry: harmless for
		// a latest-value-per-key view.
		clear(t.batch)
		t.pauseFor(p, err)
		return nil
	}
	// Own records right after the fetched ones need no fetch.
	t.batch, next = t.l.applyOwn(p, next, next, t.batch)
	t.l.applyBatch(t.batch)
	delete(t.paused, p)
	lso := lastStable(rp)
	t.hw[p] = lso
	if emptyResponse && next == offset && fetched == offset && lso > offset && !t.l.hasOwn(p) {
		// Nothing at or after offset below the last stable offset, in a response that was
		// not full: compaction removed the tail (e.g. an expired tombstone). Connect's
		// consumer position would move past it the same way. Never past the last stable
		// offset: the records of a transaction still open are read once it is settled.
		next = lso
	}
	if next != offset {
		t.l.advance(p, next)
	}
	t.offsets[p] = next
	return nil
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
	l.expected.decode(batch)
	l.applyMu.Lock()
	l.apply(batch)
	l.applyMu.Unlock()
	clear(batch) // drop references to records the view may have discarded
}
