package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// tail fetches partitions (all led by one broker) from l.next until ctx is done, with one
// Fetch request for all of them per round. Fetch errors are retried with backoff, as Connect's
// consumer does; they are logged, never fatal, so a broker restart only delays the view. A
// leadership error returns errRegroup.
func (l *Log) tail(ctx context.Context, parts []int) error {
	t := &tailer{l: l, parts: parts, offsets: make(map[int]int64, len(parts)), paused: map[int]pause{},
		req: &fetchapi.Request{ReplicaID: -1, MinBytes: 1, MaxBytes: logFetchRequestBytes,
			MaxWaitTime: int32(logFetchMaxWait / time.Millisecond), SessionID: -1, SessionEpoch: -1,
			Topics: []fetchapi.RequestTopic{{Topic: l.topic}}}}
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
		if wake, released := t.prepare(round); len(t.req.Topics[0].Partitions) == 0 {
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
		msg, err := transportOf(l.client).RoundTrip(ctx, l.client.Addr, t.req)
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
			failures++
			if !Sleep(ctx, l.backoff.Delay(failures)) {
				return nil
			}
			continue
		}
		failures = 0
		if err := t.apply(msg.(*fetchapi.Response)); err != nil {
			return err
		}
	}
}

// tailer is the state of one fetch loop of tail: its partitions, their next offsets, the
// partitions sitting out after an error and the Fetch request it reuses.
type tailer struct {
	l       *Log
	parts   []int
	offsets map[int]int64
	paused  map[int]pause
	req     *fetchapi.Request
	batch   []kafka.Message
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
	ps := t.req.Topics[0].Partitions[:0]
	for i := range t.parts {
		p := t.parts[(i+round)%len(t.parts)]
		t.offsets[p] = max(t.offsets[p], t.l.position(p))
		if held, ch := t.l.heldState(p); held || t.l.ownWaiting(p) {
			released = ch
			continue
		}
		if pz, ok := t.paused[p]; ok && now.Before(pz.until) {
			if wake.IsZero() || pz.until.Before(wake) {
				wake = pz.until
			}
			continue
		}
		ps = append(ps, fetchapi.RequestPartition{Partition: int32(p),
			CurrentLeaderEpoch: -1, FetchOffset: t.offsets[p], LogStartOffset: -1, PartitionMaxBytes: logFetchMaxBytes})
	}
	t.req.Topics[0].Partitions = ps
	t.req.MaxWaitTime = int32(logFetchMaxWait / time.Millisecond)
	if released != nil {
		t.req.MaxWaitTime = int32(heldPoll / time.Millisecond)
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
func (t *tailer) apply(res *fetchapi.Response) error {
	for _, rt := range res.Topics {
		if rt.Topic != t.l.topic {
			continue
		}
		for i := range rt.Partitions {
			if err := t.applyPartition(&rt.Partitions[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tailer) applyPartition(rp *fetchapi.ResponsePartition) error {
	p := int(rp.Partition)
	fetched, mine := t.offsets[p]
	if !mine {
		discard(rp)
		return nil
	}
	// The partition's records are applied by this loop or by Written, one at a time.
	pmu := &t.l.pmu[p]
	pmu.Lock()
	defer pmu.Unlock()
	offset := t.l.position(p) // Written may have moved it since the fetch was sent
	if held, _ := t.l.heldState(p); held {
		// A fetch sent before a write began brought the partition back: its new records are
		// most likely the writer's own, which Written applies. Anything of others' is fetched
		// again after the release.
		discard(rp)
		return nil
	}
	if rp.ErrorCode != 0 {
		discard(rp)
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
	next := offset
	if rp.RecordSet.Records != nil {
		var err error
		own := func(at, pos int64, out []kafka.Message) ([]kafka.Message, int64) {
			return t.l.applyOwn(p, at, pos, out)
		}
		t.batch, next, err = readRecords(rp.RecordSet.Records, t.l.topic, p, offset, t.batch[:0], t.l.applyBatch, own)
		if err != nil {
			// Records applied before the error are applied again after the retry: harmless
			// for a latest-value-per-key view.
			discard(rp)
			t.pauseFor(p, err)
			return nil
		}
	}
	// Own records right after the fetched ones need no fetch.
	t.batch, next = t.l.applyOwn(p, next, next, t.batch)
	t.l.applyBatch(t.batch)
	delete(t.paused, p)
	if next == offset && fetched == offset && rp.HighWatermark > offset && !t.l.hasOwn(p) {
		// Nothing at or after offset below the high watermark: compaction removed the tail
		// (e.g. an expired tombstone). Connect's consumer position would move past it the
		// same way.
		next = rp.HighWatermark
	}
	if next != offset {
		t.l.advance(p, next)
	}
	t.offsets[p] = next
	return nil
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
// passing every logApplyChunk of them to flush (when not nil), and returns the rest and the offset after the
// last record seen, control records included. Before each record, own may apply records the
// log's owner wrote (log_own.go) that start at or before it, after flushing out; records
// below the position own returns are skipped.
func readRecords(rs kafka.RecordReader, topic string, p int, offset int64, out []kafka.Message, flush func([]kafka.Message),
	own func(at, pos int64, out []kafka.Message) ([]kafka.Message, int64)) ([]kafka.Message, int64, error) {
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
			if own != nil && r.Offset >= next {
				out, next = own(r.Offset, next, out)
			}
			if r.Offset < next || control {
				// Batches may start before the requested offset; control records only move the
				// position; own records were applied from the writer's bytes.
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
			if flush != nil && len(out) == logApplyChunk {
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
