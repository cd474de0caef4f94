package kafkaio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// A process that writes to a topic it also reads through a Log (the agent writing Connect's
// offsets) need not fetch and decode its own records again: it knows their bytes and, from
// the Produce response, their offsets. Written hands them to the Log, which applies them at
// their place in the partition's order, exactly as if it had read them, and never twice: the
// Log's applier goroutine applies a run once the partition's log stands at its first offset
// (Written applies a small one itself when the log already stands there), and when records
// of others come first, the fetch loop applies them and then the run. So a
// key written by someone else after the caller's record still wins, by log order, and the
// writer does not wait for the view (Sync does). Hold keeps the fetch loops off the
// partitions of a large write while it is in flight, so that they do not fetch the records as
// they land; a partition whose next records are a waiting run is not fetched either.

// ownRun is a run of records the caller wrote, recs[idx[k]] at offset base+k or the records
// of a record batch from base on, waiting for the log to reach base.
type ownRun struct {
	base  int64
	recs  []Record
	idx   []int
	batch []byte
	n     int
}

func (r ownRun) end() int64 { return r.base + int64(r.n) }

// Hold keeps the fetch loops off partitions until release is called: call it before writing
// many records to them and release once Written was told of every acknowledged run. Their
// runs are applied after the release, so that the view does not slow the write. A fetch
// already in flight may still bring some of them; the log applies each record once either
// way. Holds nest. Before Run has read the partition count, Hold does nothing.
func (l *Log) Hold(partitions []int32) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return func() {}
	}
	var ps []int32
	seen := make([]bool, len(l.held))
	for _, p := range partitions {
		if p >= 0 && int(p) < len(l.held) && !seen[p] {
			seen[p] = true
			ps = append(ps, p)
			l.held[p]++
		}
	}
	return func() {
		l.mu.Lock()
		for _, p := range ps {
			l.held[p]--
			l.ownDirty[p] = l.ownDirty[p] || len(l.own[p]) > 0
		}
		close(l.holdChanged)
		l.holdChanged = make(chan struct{})
		l.mu.Unlock()
		select {
		case l.ownKick <- struct{}{}:
		default:
		}
	}
}

// Written applies records the caller wrote to partition p, recs[idx[k]] at offset base+k, as
// if read from the topic (see above), each with its Decoded form as the message's WriterData.
// Their Key and Value (and Decoded) are kept by the view and must never be changed afterwards;
// recs and idx must not change until Written returns. Before Run has
// read the partition count, Written does nothing (the initial load reads the records).
func (l *Log) Written(p int, base int64, recs []Record, idx []int) {
	if len(idx) > 0 {
		l.written(p, ownRun{base: base, recs: recs, idx: idx, n: len(idx)})
	}
}

// InOrder returns the indexes 0 to n-1, the idx of Written for records written in the order
// they are given: for n up to SmallWrite a slice shared by every caller (the agent's intents,
// claims and results were an allocation each for it), which nobody may change.
func InOrder(n int) []int {
	if n <= len(inOrder) {
		return inOrder[:n:n]
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

var inOrder = func() (idx [SmallWrite]int) {
	for i := range idx {
		idx[i] = i
	}
	return idx
}()

// WrittenBatch is Written for a record batch the caller wrote to partition p (an
// Encoded's, acknowledged by WriteEncoded: Acked.Batch), its records at offset base on. Its
// records are read in place, as a fetch's are: a borrowing Log's view gets them as borrowed
// (valid until apply returns). The batch must not change afterwards; the Log drops it once
// applied.
func (l *Log) WrittenBatch(p int, base int64, batch []byte) {
	if len(batch) < batchHeaderSize {
		return
	}
	n := int(int32(binary.BigEndian.Uint32(batch[batchCountOffset:])))
	if n > 0 {
		l.written(p, ownRun{base: base, batch: batch, n: n})
	}
}

func (l *Log) written(p int, run ownRun) {
	l.mu.Lock()
	if l.pmu == nil || p < 0 || p >= len(l.pmu) {
		l.mu.Unlock()
		return
	}
	pmu := &l.pmu[p]
	l.mu.Unlock()
	pmu.Lock()
	defer pmu.Unlock()
	if run.end() <= l.position(p) {
		return // read from the topic already (a fetch in flight brought them)
	}
	l.mu.Lock()
	if run.batch == nil && run.n <= SmallWrite && l.held[p] == 0 && len(l.own[p]) == 0 && l.next[p] == run.base {
		// A small run right where the log stands is applied here: waking the applier for
		// it would cost more than applying it (a claim, an intent, a config record).
		l.mu.Unlock()
		bp := smallRunBufs.Get().(*[]kafka.Message)
		*bp = l.applyRun(p, run, run.base, (*bp)[:0]) // applyBatch clears what it applied
		smallRunBufs.Put(bp)
		l.advance(p, run.end())
		return
	}
	// The writer's goroutine does not wait for the view: the run waits for the applier (or,
	// when others' records come first, for the fetch loop), and Sync for both.
	i, _ := slices.BinarySearchFunc(l.own[p], run.base, func(r ownRun, b int64) int { return compareInt64(r.base, b) })
	l.own[p] = slices.Insert(l.own[p], i, run)
	l.ownDirty[p] = true
	l.mu.Unlock()
	select {
	case l.ownKick <- struct{}{}:
	default: // the applier is already kicked
	}
}

// smallRunBufs are the buffers a small run applied on its writer's goroutine is built in (apply
// keeps no message): appended to from nil, a run of ten records grew one five times.
var smallRunBufs = sync.Pool{New: func() any {
	buf := make([]kafka.Message, 0, SmallWrite)
	return &buf
}}

// applyOwnLoop applies the runs of own records that start where their partition's log stands,
// until ctx ends; the fetch loops apply those that wait for others' records.
func (l *Log) applyOwnLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.ownKick:
		}
		l.mu.Lock()
		var ps []int
		for p, dirty := range l.ownDirty {
			// A held partition's runs wait for the release: applied meanwhile, they would
			// take CPU from the write they belong to.
			if dirty && l.held[p] == 0 {
				ps = append(ps, p)
				l.ownDirty[p] = false
			}
		}
		l.mu.Unlock()
		var buf []kafka.Message
		for _, p := range ps {
			l.pmu[p].Lock()
			pos := l.position(p)
			var next int64
			buf, next = l.applyOwn(p, pos, pos, buf)
			if next != pos {
				l.advance(p, next)
			}
			l.pmu[p].Unlock()
		}
		// Wake the fetch loops that left partitions out for waiting runs.
		l.mu.Lock()
		close(l.holdChanged)
		l.holdChanged = make(chan struct{})
		l.mu.Unlock()
	}
}

// ownNext reports whether p's next records are the owner's: p is held (a write to it is in
// flight) or a run of own records waits where its log stands (ownWaiting).
func (l *Log) ownNext(p int) bool {
	l.mu.Lock()
	held, inited := p < len(l.held) && l.held[p] > 0, p < len(l.own)
	l.mu.Unlock()
	return held || inited && l.ownWaiting(p)
}

// ownWaiting reports whether a run of own records starts where p's log stands (or before:
// a jump past records left it behind), so the fetch loop need not fetch p; it makes sure the
// applier will take the run.
func (l *Log) ownWaiting(p int) bool {
	l.mu.Lock()
	waiting := len(l.own[p]) > 0 && l.own[p][0].base <= l.next[p]
	if waiting {
		l.ownDirty[p] = true
	}
	l.mu.Unlock()
	if waiting {
		select {
		case l.ownKick <- struct{}{}:
		default:
		}
	}
	return waiting
}

// applyRun hands the records of run from offset from on to apply, in chunks of
// logApplyChunk messages built in buf, and returns buf for reuse.
func (l *Log) applyRun(p int, run ownRun, from int64, buf []kafka.Message) []kafka.Message {
	if run.batch != nil {
		return l.applyRunBatch(p, run, from, buf)
	}
	for k := max(from-run.base, 0); k < int64(len(run.idx)); {
		buf = buf[:0]
		for ; k < int64(len(run.idx)) && len(buf) < logApplyChunk; k++ {
			r := &run.recs[run.idx[k]]
			buf = append(buf, kafka.Message{Topic: l.topic, Partition: p, Offset: run.base + k, Key: r.Key, Value: r.Value, Headers: r.Headers,
				WriterData: r.Decoded})
		}
		l.applyBatch(buf)
	}
	return buf[:0]
}

// applyRunBatch is applyRun for a run of a record batch: its records are decoded in place,
// as the fetch loop decodes a fetched batch.
func (l *Log) applyRunBatch(p int, run ownRun, from int64, buf []kafka.Message) []kafka.Message {
	b := run.batch
	bt := batch{base: run.base, firstTS: int64(binary.BigEndian.Uint64(b[batchFirstTSOffset:])), count: run.n, inData: true}
	rr := recordReader{borrow: l.borrow}
	if cap(buf) < logApplyChunk {
		buf = make([]kafka.Message, 0, logApplyChunk) // filled and flushed, chunk by chunk
	}
	out, _, err := rr.readBatch(bt, b[batchHeaderSize:], l.topic, p, max(from, run.base), buf[:0], l.applyBatch, nil)
	if err != nil {
		// Encoded by this package: it cannot happen. Were it to, the records not applied
		// are missing from the view, as a fetch error would leave them until the retry.
		l.logger.Error("apply own record batch", "partition", p, "offset", run.base, "err", err)
	}
	l.applyBatch(out)
	return out[:0]
}

// position is the offset after the last record of p applied.
func (l *Log) position(p int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next[p]
}

// applyOwn applies, after out (flushed first), the waiting runs of p that start at or before
// at or the position reached, from pos on, and returns the position after them (pos when there
// were none). The caller holds p's partition lock.
func (l *Log) applyOwn(p int, at, pos int64, out []kafka.Message) ([]kafka.Message, int64) {
	flushed := false
	for {
		l.mu.Lock()
		var run ownRun
		found := len(l.own[p]) > 0 && l.own[p][0].base <= max(at, pos)
		if found {
			run = l.own[p][0]
			l.own[p] = slices.Delete(l.own[p], 0, 1)
		}
		l.mu.Unlock()
		if !found {
			return out, pos
		}
		if !flushed {
			l.applyBatch(out)
			out, flushed = out[:0], true
		}
		if run.end() > pos {
			out = l.applyRun(p, run, pos, out)
			pos = run.end()
		}
	}
}

// ownEnds returns, per partition, the offset after the last run of own records waiting to be
// applied (0 where none waits): Sync waits for them too.
func (l *Log) ownEnds() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ends := make([]int64, len(l.own))
	for p, runs := range l.own {
		for _, r := range runs {
			ends[p] = max(ends[p], r.end())
		}
	}
	return ends
}

// hasOwn reports whether runs of p wait for the fetch loop.
func (l *Log) hasOwn(p int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.own[p]) > 0
}

// heldState reports whether p is held and returns the channel closed at the next release.
func (l *Log) heldState(p int) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[p] > 0, l.holdChanged
}

// heldPoll is the fetch wait while some of a loop's partitions are held: short, so that a
// released partition is fetched again soon.
const heldPoll = 5 * time.Millisecond

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SyncTo waits until the log has applied partition p up to end (exclusive): the barrier of a
// caller that knows which offset matters, such as a writer that needs everything up to its own
// acknowledged record (the Produce response gives its offset), without asking the broker for
// the end offsets as Sync does.
func (l *Log) SyncTo(ctx context.Context, p int, end int64) error {
	if err := l.waitInited(ctx); err != nil {
		return err
	}
	if p < 0 || p >= l.Partitions() {
		return fmt.Errorf("sync log of topic %q: no partition %d", l.topic, p)
	}
	ends := make([]int64, l.Partitions())
	ends[p] = end
	if err := l.catchUp(ctx, ends); err != nil {
		return fmt.Errorf("sync log of topic %q: %w", l.topic, err)
	}
	return l.waitApplied(ctx, func(next []int64) bool { return next[p] >= end })
}

// Expect tells the log of records the caller is about to write, with their decoded forms
// (Record.Decoded; the others are left out), until Unexpect: a fetch that reads one before the
// caller hands its acknowledgement to Written (under load a barrier's fetch often does: the
// broker has appended it, its Produce answer is still on its way) gives the view the decoded
// form with the record, as Written would, instead of leaving it to decode the bytes again. A
// record read is matched by key and bytes: equal bytes decode alike, so a match is never
// wrong. Call Unexpect with the same records once the write returned.
func (l *Log) Expect(recs []Record) { l.expected.add(recs) }

// Unexpect forgets records Expect was told of.
func (l *Log) Unexpect(recs []Record) { l.expected.remove(recs) }

// ExpectRecord is Expect for one record.
func (l *Log) ExpectRecord(key, value []byte, decoded any) {
	l.expected.add([]Record{{Key: key, Value: value, Decoded: decoded}})
}

// UnexpectRecord is Unexpect for one record.
func (l *Log) UnexpectRecord(key, value []byte, decoded any) {
	l.expected.remove([]Record{{Key: key, Value: value, Decoded: decoded}})
}

// expectedRecords are records being written (Expect), by the hash of their keys: a map keyed
// by the keys themselves would copy each into a string.
type expectedRecords struct {
	n    atomic.Int32 // the records held: a log with none skips the lookup
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64]expectedRecord
	// more are the records whose key's hash m holds for another (the same key written twice
	// at once, or a collision): rare, looked through in order.
	more []expectedRecord
}

type expectedRecord struct {
	hash       uint64
	key, value []byte
	decoded    any
}

// is reports whether e is the entry of the record key, value (the same value slice).
func (e *expectedRecord) is(key, value []byte) bool {
	return len(e.value) == len(value) && (len(value) == 0 || &e.value[0] == &value[0]) && bytes.Equal(e.key, key)
}

// maxExpected bounds the records held: beyond it, a record is not held (a fetch that reads it
// leaves it to be decoded).
const maxExpected = 4096

func (e *expectedRecords) add(recs []Record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		if r.Decoded == nil || r.Value == nil || e.n.Load() >= maxExpected {
			continue
		}
		if e.m == nil {
			e.seed, e.m = maphash.MakeSeed(), map[uint64]expectedRecord{}
		}
		x := expectedRecord{hash: maphash.Bytes(e.seed, r.Key), key: r.Key, value: r.Value, decoded: r.Decoded}
		if _, taken := e.m[x.hash]; taken {
			e.more = append(e.more, x)
		} else {
			e.m[x.hash] = x
		}
		e.n.Add(1)
	}
}

func (e *expectedRecords) remove(recs []Record) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		if r.Decoded == nil || r.Value == nil {
			continue
		}
		h := maphash.Bytes(e.seed, r.Key)
		if x, ok := e.m[h]; ok && x.is(r.Key, r.Value) {
			delete(e.m, h)
			// Another record of the hash takes its place in m.
			if i := slices.IndexFunc(e.more, func(y expectedRecord) bool { return y.hash == h }); i >= 0 {
				e.m[h] = e.more[i]
				e.more = slices.Delete(e.more, i, i+1)
			}
			e.n.Add(-1)
			continue
		}
		if i := slices.IndexFunc(e.more, func(y expectedRecord) bool { return y.is(r.Key, r.Value) }); i >= 0 {
			e.more = slices.Delete(e.more, i, i+1)
			e.n.Add(-1)
		}
	}
	if len(e.more) == 0 {
		e.more = nil
	}
}

// decode gives the fetched records of batch that are expected their decoded forms.
func (e *expectedRecords) decode(batch []kafka.Message) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range batch {
		m := &batch[i]
		if m.WriterData != nil || m.Value == nil {
			continue
		}
		h := maphash.Bytes(e.seed, m.Key)
		x, ok := e.m[h]
		if !ok {
			continue
		}
		if bytes.Equal(x.key, m.Key) && bytes.Equal(x.value, m.Value) {
			m.WriterData = x.decoded
			continue
		}
		for _, y := range e.more {
			if y.hash == h && bytes.Equal(y.key, m.Key) && bytes.Equal(y.value, m.Value) {
				m.WriterData = y.decoded
				break
			}
		}
	}
}
