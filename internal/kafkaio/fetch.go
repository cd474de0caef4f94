package kafkaio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAnswerTimeout bounds how long FetchPartition waits beyond maxWait for an answer.
const fetchAnswerTimeout = 10 * time.Second

// Fetched is one fetch of one partition.
type Fetched struct {
	// Messages are the records at or after the offset asked for (a null key or value stays
	// nil, an empty one is empty), copied out of the response, except a record that is at
	// least half of it: that one's key and value stay in the response's buffer, which is
	// theirs alone.
	Messages []kafka.Message
	// Next is the offset to fetch next: the offset asked for when nothing came, the log start
	// when retention had removed it.
	Next int64
	// HighWatermark is the partition's high watermark in the answer (0 when it has none).
	HighWatermark int64
	// LastStable is the partition's last stable offset in the answer: the end of what a
	// read_committed reader can read now (below it, every transaction is settled). It is
	// below HighWatermark while a transaction is open; a caller that reads "to the end" reads
	// to LastStable (0 when the answer has none).
	LastStable int64
}

// FetchPartition fetches one partition of topic from offset (or kafka.FirstOffset /
// kafka.LastOffset, the last stable offset), asking for at most maxBytes (a broker still
// returns a first record batch larger than that: KIP-74) and waiting up to maxWait for a first
// record. It reads committed records only (aborts.go): nothing at or past the last stable
// offset, no record of an aborted transaction, no control record. An offset below the log
// start moves to the log start, as a consumer with auto.offset.reset=earliest would. An error
// of the partition (a kafka.Error) is returned wrapped.
func FetchPartition(ctx context.Context, cl *kafka.Client, topic string, partition int, offset, maxBytes int64, maxWait time.Duration) (Fetched, error) {
	return FetchPartitionBounded(ctx, cl, topic, partition, offset, maxBytes, maxWait, FetchBounds{})
}

// FetchBounds bound what FetchPartitionBounded inflates. maxBytes bounds the bytes a broker
// sends, and compressed bytes can inflate to many times as many.
type FetchBounds struct {
	// BatchMax, when not 0, bounds what one compressed record batch may inflate to: the
	// records of one that inflates beyond it are not read; each comes back as a message with
	// no key and no value that TooLarge recognises, so that the caller can answer it and go
	// on, and a few KiB of compressed bytes cannot make the reader hold GiBs.
	BatchMax int64
	// TotalMax, when not 0, bounds the record bytes a fetch returns, compressed batches counted
	// inflated. The first record batch is read whatever its size (within BatchMax), as a broker
	// sends it whatever maxBytes says, but of its records beyond TotalMax only the fetch's
	// first is returned (Fetched.Next is the next one's offset): several large records
	// published in one batch are not all copied out at once to be dropped; a later batch that would bring the total above TotalMax
	// is not inflated (beyond what is left of TotalMax) and not returned: Fetched.Next is its
	// base offset, and the next fetch gets it first. Nothing is skipped or returned twice.
	TotalMax int64
	// Conns, when set, are the connections the Fetch goes on (NewFetchConns).
	Conns *FetchConns
}

// inflateBufs holds the buffers FetchPartitionBounded inflated compressed batches into, once
// their records are copied out, for the next fetches: a request topic's batch of many small
// requests inflates to hundreds of KiB, and a buffer grown by doubling for every fetch was the
// largest part of what a busy fetcher allocated. inflateKeepMax bounds a buffer kept.
var inflateBufs sync.Pool // of *[]byte

const inflateKeepMax = 4 << 20

// FetchPartitionBounded is FetchPartition for records that come from anyone (a request topic),
// within bounds.
func FetchPartitionBounded(ctx context.Context, cl *kafka.Client, topic string, partition int, offset, maxBytes int64, maxWait time.Duration, bounds FetchBounds) (Fetched, error) {
	if maxWait <= 0 {
		maxWait = defaultFetchWait
	}
	// The answer's bytes may take a while to arrive, but a broker that has not answered well
	// after maxWait has lost the request: ask again rather than wait the producer's long bound.
	ctx, cancel := context.WithTimeout(ctx, maxWait+fetchAnswerTimeout)
	defer cancel()
	at := offset
	if offset == kafka.FirstOffset || offset == kafka.LastOffset {
		var err error
		if at, err = resolveOffset(ctx, cl, topic, partition, offset); err != nil {
			return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, err)
		}
	}
	limit := int32(min(max(maxBytes, 1), math.MaxInt32))
	f := newRawFetch(cl, topic)
	// One partition: its own limit bounds the response, and the response-wide one is left
	// open (a broker that stops at the response-wide limit may leave out the partition's
	// aborted transactions: kfake does).
	f.req.MaxWaitMillis, f.req.MaxBytes = int32(maxWait/time.Millisecond), math.MaxInt32
	f.add(partition, at, limit)
	var own *ownConns
	leader := -1
	if bounds.Conns != nil {
		own, leader = bounds.Conns.own, bounds.Conns.leader(ctx, topic, partition)
	}
	res, _, err := f.roundTripOn(ctx, cl, own, leader, nil)
	if err != nil {
		if bounds.Conns != nil {
			bounds.Conns.leaders.forget(topic)
		}
		return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, err)
	}
	var rp *kmsg.FetchResponseTopicPartition
	for i := range res.Topics {
		for j := range res.Topics[i].Partitions {
			if res.Topics[i].Topic == topic && res.Topics[i].Partitions[j].Partition == int32(partition) {
				rp = &res.Topics[i].Partitions[j]
			}
		}
	}
	if rp == nil {
		return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, protocol.ErrNoPartition)
	}
	if rp.ErrorCode != 0 {
		if bounds.Conns != nil {
			bounds.Conns.leaders.forget(topic) // a leader that moved, among others
		}
		perr := kafka.Error(rp.ErrorCode)
		if errors.Is(perr, kafka.OffsetOutOfRange) && rp.LogStartOffset > offset {
			// Retention removed the records: go on at the log start, as a consumer with
			// auto.offset.reset=earliest would.
			return Fetched{Next: rp.LogStartOffset, HighWatermark: rp.HighWatermark, LastStable: lastStable(rp)}, nil
		}
		return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, perr)
	}
	// The response's buffer is this call's alone (nothing reuses it): a record that is most of
	// the response (a large request, a request topic's record of several MiB) keeps its bytes
	// there instead of being copied, so that it is not held twice at once; smaller records are
	// copied, so that one of them kept does not hold the whole response.
	rr := recordReader{keepMin: max(len(rp.RecordBatches)/2, keepInResponseMin), inflateMax: bounds.BatchMax,
		readMax: bounds.TotalMax, aborted: rp.AbortedTransactions}
	if b, ok := inflateBufs.Get().(*[]byte); ok {
		rr.inflated = *bytes.NewBuffer((*b)[:0])
	}
	from := max(offset, 0) // a special offset was resolved above: take every record
	out, next, err := rr.read(rp.RecordBatches, topic, partition, from, nil, nil, nil)
	// The records inflated into rr's buffer were copied out of it (rr does not borrow), so the
	// buffer serves the next fetch.
	rr.inflated.Reset()
	if b := rr.inflated.Bytes(); cap(b) > 0 && cap(b) <= inflateKeepMax {
		inflateBufs.Put(&b)
	}
	lso := lastStable(rp)
	if err != nil {
		return Fetched{Messages: out, Next: next, HighWatermark: rp.HighWatermark, LastStable: lso}, err
	}
	switch {
	case len(out) == 0 && offset < 0:
		next = offset
	case next == offset && lso > offset:
		// Nothing at or after offset below the last stable offset (compacted away). Not past
		// it: an open transaction's records there are read once it is settled.
		next = lso
	}
	return Fetched{Messages: out, Next: next, HighWatermark: rp.HighWatermark, LastStable: lso}, nil
}

// lastStable is the last stable offset of a partition of a fetch response: the high watermark
// from a broker that answers none (-1).
func lastStable(rp *kmsg.FetchResponseTopicPartition) int64 {
	if rp.LastStableOffset < 0 {
		return rp.HighWatermark
	}
	return rp.LastStableOffset
}

// keepInResponseMin is the least size of a record that FetchPartition leaves in the response.
const keepInResponseMin = 64 << 10

// defaultFetchWait is FetchPartition's wait when none is given (kafka-go's Client.Fetch's).
const defaultFetchWait = 500 * time.Millisecond

// resolveOffset returns the first (kafka.FirstOffset) or end (kafka.LastOffset: the last
// stable offset) offset of one partition.
func resolveOffset(ctx context.Context, cl *kafka.Client, topic string, partition int, which int64) (int64, error) {
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: kafka.ReadCommitted,
		Topics: map[string][]kafka.OffsetRequest{topic: {{Partition: partition, Timestamp: which}}}})
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	for _, po := range res.Topics[topic] {
		if po.Partition != partition {
			continue
		}
		if po.Error != nil {
			return 0, fmt.Errorf("list offsets: %w", po.Error)
		}
		if which == kafka.FirstOffset {
			return po.FirstOffset, nil
		}
		return po.LastOffset, nil
	}
	return 0, fmt.Errorf("list offsets: %w", protocol.ErrNoPartition)
}
