package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// fetchAnswerTimeout bounds how long FetchPartition waits beyond maxWait for an answer.
const fetchAnswerTimeout = 10 * time.Second

// Fetched is one fetch of one partition.
type Fetched struct {
	// Messages are the records at or after the offset asked for, copied out of the response's
	// pooled buffers (a null key or value stays nil, an empty one is empty).
	Messages []kafka.Message
	// Next is the offset to fetch next: the offset asked for when nothing came, the log start
	// when retention had removed it.
	Next int64
	// HighWatermark is the partition's high watermark in the answer (0 when it has none).
	HighWatermark int64
}

// FetchPartition fetches one partition of topic from offset (or kafka.FirstOffset /
// kafka.LastOffset), asking for at most maxBytes (a broker still returns a first record batch
// larger than that: KIP-74) and waiting up to maxWait for a first record. An offset below the
// log start moves to the log start, as a consumer with auto.offset.reset=earliest would. An
// error of the partition (a kafka.Error) is returned wrapped.
func FetchPartition(ctx context.Context, cl *kafka.Client, topic string, partition int, offset, maxBytes int64, maxWait time.Duration) (Fetched, error) {
	// The answer's bytes may take a while to arrive, but a broker that has not answered well
	// after maxWait has lost the request: ask again rather than wait the producer's long bound.
	ctx, cancel := context.WithTimeout(ctx, maxWait+fetchAnswerTimeout)
	defer cancel()
	res, err := cl.Fetch(ctx, &kafka.FetchRequest{
		Topic: topic, Partition: partition, Offset: offset,
		MinBytes: 1, MaxBytes: max(maxBytes, 1), MaxWait: maxWait,
	})
	if err != nil {
		return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, err)
	}
	if res.Error != nil {
		if res.Records != nil {
			discardRecords(res.Records)
		}
		if errors.Is(res.Error, kafka.OffsetOutOfRange) && res.LogStartOffset > offset {
			// Retention removed the records: go on at the log start, as a consumer with
			// auto.offset.reset=earliest would.
			return Fetched{Next: res.LogStartOffset, HighWatermark: res.HighWatermark}, nil
		}
		return Fetched{Next: offset}, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, res.Error)
	}
	if res.Records == nil {
		return Fetched{Next: offset, HighWatermark: res.HighWatermark}, nil
	}
	from := max(offset, 0) // a special offset was resolved by the client: take every record
	out, next, err := readRecords(res.Records, topic, partition, from, nil, nil, nil)
	if err != nil {
		discardRecords(res.Records)
		return Fetched{Messages: out, Next: next, HighWatermark: res.HighWatermark}, err
	}
	switch {
	case len(out) == 0 && offset < 0:
		next = offset
	case next == offset && res.HighWatermark > offset:
		// Nothing at or after offset below the high watermark (aborted or compacted away).
		next = res.HighWatermark
	}
	return Fetched{Messages: out, Next: next, HighWatermark: res.HighWatermark}, nil
}
