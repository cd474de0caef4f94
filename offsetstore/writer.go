package offsetstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Write tuning. kafka-go's Writer sends one batch at a time per partition (ordered, like
// Connect's max.in.flight=1 producers) and the partitions in parallel. kafka-go preallocates
// BatchSize messages per batch, so the count stays moderate: 2,000 offsets records are ~200 KiB.
const (
	writeBatchSize  = 2_000
	writeBatchBytes = 1 << 20
	// writeBatchTimeout is how long kafka-go waits for more records before sending a batch
	// that is not full; large writes fill batches by size, small ones (config records,
	// single offsets) should not wait.
	writeBatchTimeout = 50 * time.Microsecond
	// writeChunk bounds how many records are queued before Write looks at ctx again: kafka-go
	// cannot withdraw queued records, so Write waits for each chunk to settle to count them.
	writeChunk = 50_000
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

// explicitBalancer sends each message to its Partition field: kafka-go's Writer ignores
// Message.Partition unless the Balancer reads it.
type explicitBalancer struct{}

func (explicitBalancer) Balance(msg kafka.Message, _ ...int) int { return msg.Partition }

func newWriter(opts Options, batchSize int) *kafka.Writer {
	w := &kafka.Writer{
		Addr:         kafka.TCP(opts.Brokers...),
		Balancer:     explicitBalancer{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    batchSize,
		BatchBytes:   writeBatchBytes,
		BatchTimeout: writeBatchTimeout,
		// One attempt: handlers.Retry retries, so that one classifier decides what is
		// transient and every retry is counted (offsetagent_retries_total).
		MaxAttempts: 1,
	}
	if opts.Transport != nil {
		w.Transport = opts.Transport
	}
	return w
}

// smallWrite is the size up to which Write uses the small-batch writer. kafka-go allocates a
// batch's full capacity (BatchSize messages) for every batch it starts, so a writer sized for
// 100,000-record writes makes every two-record config write allocate and clear ~300 KB.
const smallWrite = 64

// writerFor picks the writer whose batch size suits a write of n records.
func (s *Store) writerFor(n int) *kafka.Writer {
	if n <= smallWrite {
		return s.small
	}
	return s.writer
}

// Write writes recs to topic with acks=all, in order per partition, batched and with the
// partitions in flight in parallel. It returns once every record is acknowledged. On failure it
// returns a *WriteError saying which records were acknowledged, so callers can clean up precisely.
// Cancelling ctx stops Write from queueing further records; records already queued are waited for.
func (s *Store) Write(ctx context.Context, topic string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	n, err := partitionCount(ctx, s.client, topic)
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
		return s.produce(ctx, topic, recs, parts)
	}

	// kafka-go's Message is ~150 bytes: build them one chunk at a time in a reused buffer, so a
	// 100,000-record write does not hold 100,000 of them at once.
	w := s.writerFor(len(recs))
	msgs := make([]kafka.Message, min(len(recs), writeChunk))
	var failed []int
	var first error
	for start := 0; start < len(recs); start += writeChunk {
		end := min(start+writeChunk, len(recs))
		if err := ctx.Err(); err != nil {
			failed = append(failed, indexes(start, len(recs))...)
			first = cmpErr(first, err)
			break
		}
		chunk := msgs[:end-start]
		for i := range chunk {
			r := &recs[start+i]
			chunk[i] = kafka.Message{Topic: topic, Partition: int(parts[start+i]), Key: r.Key, Value: r.Value}
		}
		// WithoutCancel: once queued, kafka-go sends the records whatever ctx does; returning early
		// would lose track of which were acknowledged.
		err := w.WriteMessages(context.WithoutCancel(ctx), chunk...)
		var werrs kafka.WriteErrors
		switch {
		case err == nil:
		case errors.As(err, &werrs):
			for i, e := range werrs {
				if e != nil {
					failed = append(failed, start+i)
					first = cmpErr(first, e)
				}
			}
		default:
			failed = append(failed, indexes(start, end)...)
			first = cmpErr(first, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &WriteError{
		Written: len(recs) - len(failed),
		Failed:  failed,
		Err:     fmt.Errorf("write to topic %q: %w", topic, first),
	}
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

// Large writes bypass kafka.Writer, which looks the topic's metadata up once per message (a
// cached round trip that still allocates ~450 bytes) and preallocates BatchSize messages per
// batch: they go straight to Produce requests, one partition at a time in order (one request in
// flight per partition, like Connect's max.in.flight=1 producer) and the partitions in parallel.
const (
	produceBatchRecords = 4_000
	produceBatchBytes   = 1 << 20
)

// produce writes recs (more than smallWrite of them) to their partitions parts.
func (s *Store) produce(ctx context.Context, topic string, recs []Record, parts []int32) error {
	byPart := map[int32][]int{}
	for i, p := range parts {
		byPart[p] = append(byPart[p], i)
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
	for p, idx := range byPart {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := 0; start < len(idx); {
				end, size := start, 0
				for end < len(idx) && end-start < produceBatchRecords && (end == start || size+recordSize(recs[idx[end]]) <= produceBatchBytes) {
					size += recordSize(recs[idx[end]])
					end++
				}
				if err := ctx.Err(); err != nil {
					fail(idx[start:], err)
					return
				}
				batch := make([]kafka.Record, end-start)
				for i, ri := range idx[start:end] {
					r := &recs[ri]
					batch[i].Key = kafka.NewBytes(r.Key)
					if r.Value != nil {
						batch[i].Value = kafka.NewBytes(r.Value)
					}
				}
				res, err := s.client.Produce(ctx, &kafka.ProduceRequest{
					Topic: topic, Partition: int(p), RequiredAcks: kafka.RequireAll,
					Records: kafka.NewRecordReader(batch...),
				})
				if err == nil {
					err = res.Error
				}
				if err != nil {
					// Later records of the partition are not sent: they must not overtake these.
					fail(idx[start:], err)
					return
				}
				start = end
			}
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	slices.Sort(failed)
	return &WriteError{
		Written: len(recs) - len(failed),
		Failed:  failed,
		Err:     fmt.Errorf("write to topic %q: %w", topic, first),
	}
}

// recordSize approximates a record's size in a produce request.
func recordSize(r Record) int { return len(r.Key) + len(r.Value) + 24 }
