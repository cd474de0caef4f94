package offsetstore

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
	produceapi "github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

// Record is one record to write. A nil Value is a tombstone. Partition < 0 means the partition is
// computed like Kafka's default partitioner (PartitionFor over the topic's partition count), so a
// key always lands where Connect would put it (spec §3.3).
type Record struct {
	Key, Value []byte
	Partition  int
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

// smallWrite is the size up to which Write sends through the shared Producer; larger writes
// go straight to Produce requests of their own (produce).
const smallWrite = 64

// Write writes recs to topic with acks=all, in order per partition, batched and with the
// partition leaders in flight in parallel. It returns once every record is acknowledged. On failure it
// returns a *WriteError saying which records were acknowledged, so callers can clean up precisely.
// Cancelling ctx stops Write from queueing further records; records already queued are waited for.
func (s *Store) Write(ctx context.Context, topic string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	leaders, err := s.producer.leaders.get(ctx, topic)
	n := len(leaders)
	if err != nil {
		return &WriteError{Failed: indexes(0, len(recs)), Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	parts := make([]int32, len(recs))
	for i, r := range recs {
		p := r.Partition
		if p < 0 {
			p = PartitionFor(r.Key, n)
		}
		if p >= n {
			return &WriteError{Failed: indexes(0, len(recs)), Err: fmt.Errorf("write to topic %q: record %d: partition %d of %d", topic, i, p, n)}
		}
		parts[i] = int32(p)
	}

	if len(recs) > smallWrite {
		return s.produce(ctx, topic, recs, parts, leaders)
	}

	// Small writes (a connector's config records, a few offsets) go through the shared
	// Producer, together with what concurrent requests write meanwhile.
	msgs := make([]kafka.Message, len(recs))
	for i := range recs {
		msgs[i] = kafka.Message{Topic: topic, Partition: int(parts[i]), Key: recs[i].Key, Value: recs[i].Value}
	}
	// WithoutCancel: once queued, the records are sent whatever ctx does; returning early
	// would lose track of which were acknowledged.
	errs := s.producer.Produce(context.WithoutCancel(ctx), msgs)
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

// Writes of more than one partition bypass kafka.Writer, which sends one Produce request per
// partition, looks the topic's metadata up once per message (a cached round trip that still
// allocates ~450 bytes) and preallocates BatchSize messages per batch. They go as Produce
// requests that each carry many partitions, one request per partition leader and round, the way
// Connect's producer batches per broker: ten offsets on ten partitions are one round trip, not
// ten. A partition's records go in order, at most produceBatchRecords / produceBatchBytes of them
// per request and one request in flight per partition (Connect's max.in.flight=1 producer); a
// leader's partitions are split over parallel requests of at most produceRequestBytes.
const (
	produceBatchRecords = 4_000
	produceBatchBytes   = 1 << 20
	produceRequestBytes = 4 << 20
	// produceTimeoutMs is how long the broker may wait for the in-sync replicas (acks=all).
	produceTimeoutMs = 30_000
)

// produce writes recs to their partitions parts, whose leaders (broker IDs) are leaders.
func (s *Store) produce(ctx context.Context, topic string, recs []Record, parts []int32, leaders []int) error {
	// Per leader, per partition: the indexes of its records, in order.
	byLeader := map[int]map[int32][]int{}
	for i, p := range parts {
		l := leaders[p]
		if byLeader[l] == nil {
			byLeader[l] = map[int32][]int{}
		}
		byLeader[l][p] = append(byLeader[l][p], i)
	}
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
	for _, pending := range byLeader {
		wg.Go(func() { s.produceRounds(ctx, topic, recs, pending, fail) })
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	s.producer.leaders.forget(topic)
	slices.Sort(failed)
	return &WriteError{
		Written: len(recs) - len(failed),
		Failed:  failed,
		Err:     fmt.Errorf("write to topic %q: %w", topic, first),
	}
}

// produceChunk is the next records of one partition in a Produce request.
type produceChunk struct {
	partition int32
	idx       []int // indexes into recs
	size      int
}

// produceRounds sends one leader's pending records (per partition, record indexes in order):
// each round takes every partition's next chunk, packs the chunks into requests of at most
// produceRequestBytes and sends those in parallel. A partition that fails stops there: its
// later records must not overtake the failed ones, and fail gets them all.
func (s *Store) produceRounds(ctx context.Context, topic string, recs []Record, pending map[int32][]int, fail func([]int, error)) {
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			for _, idx := range pending {
				fail(idx, err)
			}
			return
		}
		var requests [][]produceChunk
		var cur []produceChunk
		curSize := 0
		for p, idx := range pending {
			end, size := 0, 0
			for end < len(idx) && end < produceBatchRecords && (end == 0 || size+recordSize(recs[idx[end]]) <= produceBatchBytes) {
				size += recordSize(recs[idx[end]])
				end++
			}
			if len(cur) > 0 && curSize+size > produceRequestBytes {
				requests = append(requests, cur)
				cur, curSize = nil, 0
			}
			cur = append(cur, produceChunk{partition: p, idx: idx[:end], size: size})
			curSize += size
		}
		requests = append(requests, cur)

		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, chunks := range requests {
			wg.Go(func() {
				errs := s.produceRequest(ctx, topic, recs, chunks)
				mu.Lock()
				defer mu.Unlock()
				for i, c := range chunks {
					rest := pending[c.partition][len(c.idx):]
					if errs[i] != nil {
						fail(pending[c.partition], errs[i])
						delete(pending, c.partition)
					} else if len(rest) == 0 {
						delete(pending, c.partition)
					} else {
						pending[c.partition] = rest
					}
				}
			})
		}
		wg.Wait()
	}
}

// produceRequest sends chunks (partitions of one leader) in one Produce request with acks=all and
// returns each chunk's error.
func (s *Store) produceRequest(ctx context.Context, topic string, recs []Record, chunks []produceChunk) []error {
	req := &rawproduce.Request{Acks: int16(kafka.RequireAll), Timeout: produceTimeoutMs,
		Topics: []rawproduce.RequestTopic{{Topic: topic, Partitions: make([]rawproduce.RequestPartition, len(chunks))}}}
	size := 0
	for _, c := range chunks {
		size += 4 + batchHeaderSize + 16*len(c.idx)
		for _, ri := range c.idx {
			size += len(recs[ri].Key) + len(recs[ri].Value)
		}
	}
	b := batchBuilder{buf: make([]byte, 0, size)}
	for i, c := range chunks {
		from := len(b.buf)
		b.begin()
		for _, ri := range c.idx {
			b.add(recs[ri].Key, recs[ri].Value, nil)
		}
		req.Topics[0].Partitions[i] = rawPartition(c.partition, b.finish()[from:])
	}
	errs := make([]error, len(chunks))
	setAll := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	msg, err := transportOf(s.client).RoundTrip(ctx, s.client.Addr, req)
	if err != nil {
		return setAll(err)
	}
	res, ok := msg.(*produceapi.Response)
	if !ok {
		return setAll(fmt.Errorf("produce: unexpected response %T", msg))
	}
	byPartition := map[int32]*produceapi.ResponsePartition{}
	for t := range res.Topics {
		if res.Topics[t].Topic != topic {
			continue
		}
		for p := range res.Topics[t].Partitions {
			rp := &res.Topics[t].Partitions[p]
			byPartition[rp.Partition] = rp
		}
	}
	for i, c := range chunks {
		switch rp, ok := byPartition[c.partition]; {
		case !ok:
			errs[i] = fmt.Errorf("produce: no response for partition %d", c.partition)
		case rp.ErrorCode != 0:
			errs[i] = partitionError(rp.ErrorCode, rp.ErrorMessage)
		}
	}
	return errs
}

// partitionError is a broker's error code for one partition, with its message when it sent one.
func partitionError(code int16, message string) error {
	err := kafka.Error(code)
	if message == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, message)
}

// recordSize approximates a record's size in a produce request.
func recordSize(r Record) int { return len(r.Key) + len(r.Value) + 24 }
