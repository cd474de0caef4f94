package offsetstore

import (
	"context"
	"fmt"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// Record is one record to write. A nil Value is a tombstone. Partition < 0 means the partition is
// computed like Kafka's default partitioner (PartitionFor over the topic's partition count), so a
// key always lands where Connect would put it (docs/connect-internals.md, "Partitioning").
type Record = kafkaio.Record

// Write writes recs to topic with acks=all, in order per partition, batched and with the
// partition leaders in flight in parallel. It returns once every record is acknowledged. On
// failure it returns a *kafkaio.WriteError saying which records were acknowledged, so callers
// can clean up precisely. Cancelling ctx stops Write from queueing further records; records
// already queued are waited for.
//
// When the store reads topic, the acknowledged records are applied to its view from recs, at
// their offsets, instead of being fetched and decoded again (kafkaio.Log.Written): the bytes of
// recs are kept by the view and must not be changed after the call.
func (s *Store) Write(ctx context.Context, topic string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	all := allIndexes(len(recs)) // failed and not written, when nothing is sent
	leaders, err := s.producer.Leaders(ctx, topic)
	n := len(leaders)
	if err != nil {
		return &kafkaio.WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	parts := make([]int32, len(recs))
	for i, r := range recs {
		p := r.Partition
		if p < 0 {
			p = PartitionFor(r.Key, n)
		}
		if p >= n {
			return &kafkaio.WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: record %d: partition %d of %d", topic, i, p, n)}
		}
		parts[i] = int32(p)
	}
	l := s.logOf(topic)
	if l == nil {
		return s.producer.Write(ctx, topic, recs, parts, nil)
	}
	if len(recs) > kafkaio.SmallWrite {
		// Keep the view's fetches off the partitions while the records land: it gets them
		// from here.
		release := l.Hold(parts)
		defer release()
		s.expectMore(topic, len(recs))
	} else {
		// A fetch may read these before Written has them (a concurrent request's barrier):
		// it then takes their decoded forms too.
		l.Expect(recs)
		defer l.Unexpect(recs)
	}
	return s.producer.Write(ctx, topic, recs, parts, func(a kafkaio.Acked) {
		l.Written(int(a.Partition), a.Base, recs, a.Idx)
	})
}

// logOf is the log of topic when the store reads it, else nil.
func (s *Store) logOf(topic string) *kafkaio.Log {
	if topic == s.opts.ConfigTopic {
		return s.configLog
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ot := s.offsets[topic]; ot != nil {
		return ot.log
	}
	return nil
}

// expectMore tells the offsets view of topic, when the store has one, that a write of n
// records is coming.
func (s *Store) expectMore(topic string, n int) {
	s.mu.Lock()
	ot := s.offsets[topic]
	s.mu.Unlock()
	if ot != nil {
		ot.view.expectMore(n)
	}
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Encoded is records already encoded in record batches per partition (kafkaio.BatchEncoder),
// for a topic of its partition count.
type Encoded = kafkaio.Encoded

// WriteEncoded is Write for records already encoded in batches, each to the partition it was
// encoded for: the batches are sent as they are, and a view of topic takes them in from the
// same bytes once acknowledged (kafkaio.Log.WrittenBatch). The indexes of a
// *kafkaio.WriteError are the records' numbers in enc (Encoded.Records). A topic whose
// partition count is not enc's (another topic, or partitions added since the encoding) gets
// the records partitioned again for it, through Write.
func (s *Store) WriteEncoded(ctx context.Context, topic string, enc *Encoded) error {
	if enc.Len() == 0 {
		return nil
	}
	leaders, err := s.producer.Leaders(ctx, topic)
	if err != nil {
		all := allIndexes(enc.Len())
		return &kafkaio.WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	if len(leaders) != enc.Partitions() {
		recs := enc.Records()
		for i := range recs {
			recs[i].Partition = -1
		}
		return s.Write(ctx, topic, recs)
	}
	l := s.logOf(topic)
	if l == nil {
		return s.producer.WriteEncoded(ctx, topic, enc, nil)
	}
	// As in Write: the view gets the records from here, not from fetches.
	release := l.Hold(enc.PartitionList())
	defer release()
	s.expectMore(topic, enc.Len())
	return s.producer.WriteEncoded(ctx, topic, enc, func(a kafkaio.Acked) {
		l.WrittenBatch(int(a.Partition), a.Base, a.Batch)
	})
}
