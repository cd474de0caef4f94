package kafkaio

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Record is one record to write. A nil Value is a tombstone. Partition < 0 asks the writer's
// caller to choose the partition (offsetstore computes Kafka's default partitioner).
type Record struct {
	Key, Value []byte
	Partition  int
	// Headers are the record's headers (nil for most records; offsetstore marks the config
	// records a request writes with the request's identity).
	Headers []kafka.Header
}

// recordSize approximates a record's size in a produce request.
func recordSize(r Record) int {
	n := len(r.Key) + len(r.Value) + 24
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 4
	}
	return n
}

// WriteError reports a Write that failed part way. Records of one partition are sent in order,
// but partitions are independent, so the acknowledged records need not be a prefix of the call.
type WriteError struct {
	// Written is how many records were acknowledged by the broker.
	Written int
	// Failed holds the indexes (into the records passed to Write), ascending, of the records
	// that were not acknowledged: they may or may not be in the topic.
	Failed []int
	// Err is the first cause.
	Err error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("%d of %d records written: %v", e.Written, e.Written+len(e.Failed), e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// SmallWrite is the size up to which Write queues its records with those of concurrent
// callers (Produce); larger writes go in Produce requests of their own.
const SmallWrite = 64

// Acked is one run of a write's records that the broker acknowledged: for Write, recs[Idx[k]]
// is at offset Base+k of Partition; for WriteEncoded, Batch is the record batch acknowledged
// (from its baseOffset field on, which holds 0: its records are at Base on) and Idx is nil.
type Acked struct {
	Partition int32
	Base      int64
	Idx       []int
	Batch     []byte
}

// Leaders returns the leader broker ID of every partition of topic, indexed by partition;
// the answer is reused for a moment (see leaderCache). The slice must not be changed.
func (p *Producer) Leaders(ctx context.Context, topic string) ([]int, error) {
	return p.leaders.get(ctx, topic)
}

// Write writes recs to topic, recs[i] to partition parts[i], with acks=all, in order per
// partition. It returns once every record is acknowledged. On failure it returns a
// *WriteError saying which records were acknowledged, so callers can clean up precisely.
// Cancelling ctx stops Write from sending further records; records already sent are waited for.
//
// Up to smallWrite records go through Produce, together with what concurrent callers write
// meanwhile. Larger writes are sent leader by leader in rounds: each round sends every
// partition's next batch, packed into requests of at most requestBytes sent in parallel, so
// that ten offsets on ten partitions are one round trip, not ten, and a partition has one
// request in flight at a time (Connect's max.in.flight=1 producer).
//
// acked, when not nil, is told of every acknowledged run of records with its offsets, before
// Write returns, possibly from several goroutines at once.
func (p *Producer) Write(ctx context.Context, topic string, recs []Record, parts []int32, acked func(Acked)) error {
	if len(recs) == 0 {
		return nil
	}
	if acked == nil {
		acked = func(Acked) {}
	}
	if len(recs) > SmallWrite {
		return p.writeRounds(ctx, topic, recs, parts, acked)
	}
	msgs := make([]kafka.Message, len(recs))
	for i := range recs {
		msgs[i] = kafka.Message{Topic: topic, Partition: int(parts[i]), Key: recs[i].Key, Value: recs[i].Value, Headers: recs[i].Headers}
	}
	// WithoutCancel: once queued, the records are sent whatever ctx does; returning early
	// would lose track of which were acknowledged.
	errs, owner := p.produce(context.WithoutCancel(ctx), msgs)
	reportItems(msgs, errs, owner, acked)
	if errs == nil {
		return nil
	}
	var failed []int
	var first error
	for i, e := range errs {
		if e != nil {
			failed = append(failed, i)
			first = cmpErr(first, e)
		}
	}
	return &WriteError{Written: len(recs) - len(failed), Failed: failed, Err: first}
}

// reportItems tells acked of the acknowledged items of a produce call: msgs[i] went in
// owner[i], which keeps msgs' order within its partition.
func reportItems(msgs []kafka.Message, errs []error, owner []*produceItem, acked func(Acked)) {
	runs := map[*produceItem][]int{}
	var order []*produceItem
	for i, it := range owner {
		if it == nil || (errs != nil && errs[i] != nil) {
			continue
		}
		if _, ok := runs[it]; !ok {
			order = append(order, it)
		}
		runs[it] = append(runs[it], i)
	}
	for _, it := range order {
		acked(Acked{Partition: it.partition, Base: it.base, Idx: runs[it]})
	}
}

// WriteEncoded is Write for records already encoded in batches (BatchEncoder), sent as they
// are, in rounds as Write sends many records (each round takes a partition's next batch),
// with the same guarantees. The topic must have enc.Partitions() partitions. The indexes of a
// *WriteError are the records' numbers in enc (Encoded.Records); acked is told of each
// acknowledged batch (Acked.Batch).
func (p *Producer) WriteEncoded(ctx context.Context, topic string, enc *Encoded, acked func(Acked)) error {
	if enc.Len() == 0 {
		return nil
	}
	if acked == nil {
		acked = func(Acked) {}
	}
	leaders, err := p.leaders.get(ctx, topic)
	if err == nil && len(leaders) != enc.Partitions() {
		err = fmt.Errorf("%d partitions, records encoded for %d", len(leaders), enc.Partitions())
	}
	if err != nil {
		return &WriteError{Failed: indexes(0, enc.Len()), Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	byLeader := map[int]map[int32]partQueue{}
	for part, bs := range enc.batches {
		if len(bs) == 0 {
			continue
		}
		l := leaders[part]
		if byLeader[l] == nil {
			byLeader[l] = map[int32]partQueue{}
		}
		byLeader[l][int32(part)] = partQueue{batches: bs}
	}
	return p.sendRounds(ctx, topic, nil, enc.Len(), byLeader, acked)
}

// writeRounds is Write for many records.
func (p *Producer) writeRounds(ctx context.Context, topic string, recs []Record, parts []int32, acked func(Acked)) error {
	leaders, err := p.leaders.get(ctx, topic)
	if err != nil {
		return &WriteError{Failed: indexes(0, len(recs)), Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	// Per leader, per partition: the indexes of its records, in order.
	byLeader := map[int]map[int32]partQueue{}
	for i, part := range parts {
		if int(part) >= len(leaders) {
			return &WriteError{Failed: indexes(0, len(recs)), Err: fmt.Errorf("write to topic %q: record %d: partition %d of %d", topic, i, part, len(leaders))}
		}
		l := leaders[part]
		if byLeader[l] == nil {
			byLeader[l] = map[int32]partQueue{}
		}
		q := byLeader[l][part]
		q.idx = append(q.idx, i)
		byLeader[l][part] = q
	}
	return p.sendRounds(ctx, topic, recs, len(recs), byLeader, acked)
}

// partQueue is what a large write has left to send to one partition: the indexes of its
// records (Write) or its encoded batches (WriteEncoded), in order.
type partQueue struct {
	idx     []int
	batches []encodedBatch
}

func (q partQueue) empty() bool { return len(q.idx) == 0 && len(q.batches) == 0 }

// numbers returns the numbers of the records left: their indexes in the call's records, or in
// the Encoded.
func (q partQueue) numbers() []int {
	if len(q.batches) == 0 {
		return q.idx
	}
	last := q.batches[len(q.batches)-1]
	return indexes(q.batches[0].first, last.first+last.n)
}

// after returns what is left once pr, the queue's next part, was sent.
func (q partQueue) after(pr partitionRecords) partQueue {
	if pr.encoded.buf != nil {
		q.batches = q.batches[1:]
	} else {
		q.idx = q.idx[len(pr.idx):]
	}
	return q
}

// sendRounds sends the queues of byLeader (per leader, per partition), leader by leader in
// parallel, and returns a *WriteError naming the records (of n in all) not acknowledged.
func (p *Producer) sendRounds(ctx context.Context, topic string, recs []Record, n int, byLeader map[int]map[int32]partQueue, acked func(Acked)) error {
	var (
		mu     sync.Mutex
		failed []int
		first  error
	)
	fail := func(idx []int, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, idx...)
		first = cmpErr(first, err)
	}
	var wg sync.WaitGroup
	bufs := &produceBufs{}
	for _, pending := range byLeader {
		wg.Go(func() { p.leaderRounds(ctx, topic, recs, pending, bufs, fail, acked) })
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	p.leaders.forget(topic)
	slices.Sort(failed)
	return &WriteError{
		Written: n - len(failed),
		Failed:  failed,
		Err:     fmt.Errorf("write to topic %q: %w", topic, first),
	}
}

// leaderRounds sends one leader's pending records (per partition, in order) in rounds. A
// partition that fails stops there: its later records must not overtake the failed ones, and
// fail gets them all.
func (p *Producer) leaderRounds(ctx context.Context, topic string, recs []Record, pending map[int32]partQueue, bufs *produceBufs, fail func([]int, error), acked func(Acked)) {
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			for _, q := range pending {
				fail(q.numbers(), err)
			}
			return
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		slots := make(chan struct{}, produceInFlight)
		for _, parts := range nextRound(topic, recs, pending) {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				errs, bases := p.produceOnce(ctx, parts, bufs)
				for i, pr := range parts {
					if errs[i] == nil {
						a := Acked{Partition: pr.partition, Base: bases[i], Idx: pr.idx}
						if pr.encoded.buf != nil {
							a.Batch = pr.encoded.batch()
						}
						acked(a)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				for i, pr := range parts {
					q := pending[pr.partition]
					rest := q.after(pr)
					switch {
					case errs[i] != nil:
						fail(q.numbers(), errs[i])
						delete(pending, pr.partition)
					case rest.empty():
						delete(pending, pr.partition)
					default:
						pending[pr.partition] = rest
					}
				}
			})
		}
		wg.Wait()
	}
}

// nextRound takes every pending partition's next batch (up to batchRecords records and
// batchBytes, or its next encoded batch) and packs the batches into requests of at most
// requestBytes.
func nextRound(topic string, recs []Record, pending map[int32]partQueue) [][]partitionRecords {
	var requests [][]partitionRecords
	var cur []partitionRecords
	curSize := 0
	for part, q := range pending {
		pr := partitionRecords{topicPartition: topicPartition{topic, part}}
		if len(q.batches) > 0 {
			pr.encoded, pr.size = q.batches[0], len(q.batches[0].buf)
		} else {
			idx := q.idx
			end, size := 0, 0
			for end < len(idx) && end < batchRecords && (end == 0 || size+recordSize(recs[idx[end]]) <= batchBytes) {
				size += recordSize(recs[idx[end]])
				end++
			}
			pr.recs, pr.idx, pr.size = recs, idx[:end], size
		}
		if len(cur) > 0 && curSize+pr.size > requestBytes {
			requests = append(requests, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, pr)
		curSize += pr.size
	}
	return append(requests, cur)
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func indexes(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
