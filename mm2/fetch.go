package mm2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
)

// fetchMaxBytes bounds one fetch of one partition; a broker still returns a larger first batch.
const fetchMaxBytes = 1 << 20

// record is one record read from a partition, with its key and value copied out of the
// fetch's pooled buffers. A nil Key or Value is null; an empty one is empty.
type record struct {
	Offset  int64
	Time    time.Time
	Key     []byte
	Value   []byte
	Headers []kafka.Header
}

// sameRecord reports whether a and b carry the same timestamp, key, value and headers: what
// MirrorMaker 2 copies from the source record (MirrorSourceTask.convertRecord).
func sameRecord(a, b record) bool {
	if !a.Time.Equal(b.Time) || (a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) ||
		!bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		ha, hb := a.Headers[i], b.Headers[i]
		if ha.Key != hb.Key || (ha.Value == nil) != (hb.Value == nil) || !bytes.Equal(ha.Value, hb.Value) {
			return false
		}
	}
	return true
}

// fetched is one fetch of one partition: its records at or after the requested offset, the
// offset to fetch next (past control records; the log start when retention removed the
// requested offset) and the last stable offset (the end of what is committed).
type fetched struct {
	records []record
	next    int64
	hw      int64
}

// fetch reads records of topic/partition from offset with one Fetch request that waits for
// next to nothing.
func fetch(ctx context.Context, cl *kafka.Client, topic string, partition int, offset int64) (fetched, error) {
	f, err := kafkaio.FetchPartition(ctx, cl, topic, partition, offset, fetchMaxBytes, time.Millisecond)
	if err != nil {
		return fetched{}, err
	}
	out := fetched{next: f.Next, hw: f.LastStable, records: make([]record, len(f.Messages))}
	for i, m := range f.Messages {
		out.records[i] = record{Offset: m.Offset, Time: m.Time, Key: m.Key, Value: m.Value, Headers: m.Headers}
	}
	return out, nil
}

// logTail reads one partition from its log start to its end, again and again: every readToEnd
// applies the records written since the last one. It is the Go twin of the reads MirrorClient and
// CheckpointStore make of MM2's single-partition topics
// (docs/mirrormaker2.md, "Reading the checkpoints"). It is not safe for
// concurrent use.
type logTail struct {
	cl        *kafka.Client
	topic     string
	partition int
	started   bool
	next      int64
}

// readToEnd reads the records from where the last call stopped up to the partition's end
// offset at the time of the call, handing each to apply in offset order.
func (l *logTail) readToEnd(ctx context.Context, apply func(record)) error {
	end, first, err := l.bounds(ctx)
	if err != nil {
		return err
	}
	if !l.started || l.next < first {
		l.next, l.started = first, true
	}
	for l.next < end {
		f, err := fetch(ctx, l.cl, l.topic, l.partition, l.next)
		if errors.Is(err, kafka.OffsetOutOfRange) {
			// Retention removed what we wanted: go on from the log start, as a consumer with
			// auto.offset.reset=earliest would.
			if _, first, err = l.bounds(ctx); err != nil {
				return err
			}
			l.next = max(l.next, first)
			continue
		}
		if err != nil {
			return err
		}
		for _, r := range f.records {
			apply(r)
		}
		if f.next == l.next {
			// Nothing at or after next below the end: compaction removed the tail.
			f.next = max(f.next, min(f.hw, end))
			if f.next == l.next {
				return fmt.Errorf("read topic %q partition %d: no progress at offset %d below end %d", l.topic, l.partition, l.next, end)
			}
		}
		l.next = f.next
	}
	return nil
}

// bounds returns the partition's end (last stable) and first offsets.
func (l *logTail) bounds(ctx context.Context) (end, first int64, err error) {
	res, err := l.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: kafka.ReadCommitted, Topics: map[string][]kafka.OffsetRequest{
		l.topic: {kafka.FirstOffsetOf(l.partition), kafka.LastOffsetOf(l.partition)}}})
	if err != nil {
		return 0, 0, fmt.Errorf("list offsets of topic %q: %w", l.topic, err)
	}
	for _, po := range res.Topics[l.topic] {
		if po.Partition != l.partition {
			continue
		}
		if po.Error != nil {
			return 0, 0, fmt.Errorf("list offsets of topic %q partition %d: %w", l.topic, l.partition, po.Error)
		}
		return po.LastOffset, po.FirstOffset, nil
	}
	return 0, 0, fmt.Errorf("list offsets of topic %q partition %d: %w", l.topic, l.partition, kafka.UnknownTopicOrPartition)
}
