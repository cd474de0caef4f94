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

// FetchPartition fetches one partition of topic from offset (or kafka.FirstOffset /
// kafka.LastOffset), asking for at most maxBytes (a broker still returns a first record batch
// larger than that: KIP-74) and waiting up to maxWait for a first record. It returns the
// records at or after offset, copied out of the response's pooled buffers, and the offset to
// fetch next (offset itself when nothing came). An error of the partition (a kafka.Error) is
// returned as is.
func FetchPartition(ctx context.Context, cl *kafka.Client, topic string, partition int, offset, maxBytes int64, maxWait time.Duration) ([]kafka.Message, int64, error) {
	// The answer's bytes may take a while to arrive, but a broker that has not answered well
	// after maxWait has lost the request: ask again rather than wait the producer's long bound.
	ctx, cancel := context.WithTimeout(ctx, maxWait+fetchAnswerTimeout)
	defer cancel()
	res, err := cl.Fetch(ctx, &kafka.FetchRequest{
		Topic: topic, Partition: partition, Offset: offset,
		MinBytes: 1, MaxBytes: max(maxBytes, 1), MaxWait: maxWait,
	})
	if err != nil {
		return nil, offset, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, err)
	}
	if res.Error != nil {
		if res.Records != nil {
			discardRecords(res.Records)
		}
		if errors.Is(res.Error, kafka.OffsetOutOfRange) && res.LogStartOffset > offset {
			// Retention removed the records: go on at the log start, as a consumer with
			// auto.offset.reset=earliest would.
			return nil, res.LogStartOffset, nil
		}
		return nil, offset, fmt.Errorf("fetch partition %d of topic %q: %w", partition, topic, res.Error)
	}
	if res.Records == nil {
		return nil, offset, nil
	}
	from := max(offset, 0) // a special offset was resolved by the client: take every record
	out, next, err := readRecords(res.Records, topic, partition, from, nil, nil, nil)
	if err != nil {
		discardRecords(res.Records)
		return out, next, err
	}
	switch {
	case len(out) == 0 && offset < 0:
		next = offset
	case next == offset && res.HighWatermark > offset:
		// Nothing at or after offset below the high watermark (aborted or compacted away).
		next = res.HighWatermark
	}
	return out, next, nil
}
