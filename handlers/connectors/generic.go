package connectors

import (
	"hash/maphash"
	"math"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/chunks"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The generic KIP-875 rules every connector's offsets pass before its own rules.
// Sources: apache/kafka connect/runtime/.../util/SinkUtils.java (parseSinkConnectorOffsets),
// .../storage/OffsetUtils.java (validateFormat), .../runtime/Worker.java
// (normalizeSourceConnectorOffsets, alterSinkConnectorOffsets), .../rest/entities/ConnectorOffsets.java
// (toMap); docs/connect-internals.md, "Offsets topic records", "The alter body" and "Checks of an
// alter, in order".

// Keys of a sink connector's KIP-875 partition and offset.
const (
	kafkaTopicKey     = "kafka_topic"
	kafkaPartitionKey = "kafka_partition"
	kafkaOffsetKey    = "kafka_offset"
)

// SinkOffset is one parsed sink entry: a consumer-group offset to commit, or (Offset nil) to delete.
type SinkOffset struct {
	Topic     string
	Partition int32
	// Offset is nil when the entry resets the partition (deleteConsumerGroupOffsets).
	Offset *int64
}

// ValidateSink applies SinkUtils.parseSinkConnectorOffsets (docs/connect-internals.md, "Checks of
// an alter, in order", step 3) to every entry in order and returns the first failure as a 400
// *Error with Connect's text. Values are read as Connect reads them: the topic is String.valueOf of
// any non-null value, the partition and offset are Integer.parseInt / Long.parseLong of
// String.valueOf, so 3 and "3" are both accepted and 3.0 is not.
//
// Entries naming the same topic-partition collapse into one at the first one's position with the last
// one's offset. Connect keeps one of them too, but which one depends on HashMap iteration order.
// Negative offsets are returned as they are: Connect only rejects them when it commits (see
// CheckSinkOffsets).
func ValidateSink(offsets []events.OffsetEntry) ([]SinkOffset, error) {
	out := make([]SinkOffset, 0, len(offsets))
	index := map[[2]any]int{}
	for _, e := range offsets {
		p := e.Partition
		if p == nil {
			return nil, badRequest("The partition for a sink connector offset cannot be null or missing")
		}
		topicValue, hasTopic := p.Get(kafkaTopicKey)
		partitionValue, hasPartition := p.Get(kafkaPartitionKey)
		if !hasTopic || !hasPartition {
			return nil, badRequest("The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'")
		}
		if topicValue == nil {
			return nil, badRequest("Kafka topic names must be valid strings and may not be null")
		}
		if partitionValue == nil {
			return nil, badRequest("Kafka partitions must be valid numbers and may not be null")
		}
		topic := offsetstore.JavaString(topicValue, false)
		partitionText := offsetstore.JavaString(partitionValue, false)
		partition, ok := parseJavaInteger(partitionText, 32)
		if !ok {
			return nil, badRequest("Failed to parse the following Kafka partition value in the provided offsets: '" +
				partitionText + "'. Partition values for sink connectors need to be integers.")
		}
		so := SinkOffset{Topic: topic, Partition: int32(partition)}
		if e.Offset != nil {
			offsetValue, has := e.Offset.Get(kafkaOffsetKey)
			if !has {
				return nil, badRequest("The offset for a sink connector should either be null or contain the key 'kafka_offset'")
			}
			offsetText := offsetstore.JavaString(offsetValue, false)
			offset, ok := parseJavaInteger(offsetText, 64)
			if !ok {
				return nil, badRequest("Failed to parse the following Kafka offset value in the provided offsets: '" +
					offsetText + "'. Offset values for sink connectors need to be integers.")
			}
			so.Offset = &offset
		}
		key := [2]any{so.Topic, so.Partition}
		if i, seen := index[key]; seen {
			out[i].Offset = so.Offset
			continue
		}
		index[key] = len(out)
		out = append(out, so)
	}
	return out, nil
}

// CheckSinkOffsets rejects negative offsets as Connect does when it commits them: new
// OffsetAndMetadata throws "Invalid negative offset" inside the worker, which wraps it into a 500 with
// the text "Failed to modify offsets for sink connector <connector>" (Worker.modifySinkConnectorOffsets).
func CheckSinkOffsets(connector string, offsets []SinkOffset) error {
	for _, o := range offsets {
		if o.Offset != nil && *o.Offset < 0 {
			return connectFailure("Failed to modify offsets for sink connector " + connector)
		}
	}
	return nil
}

// ValidateSource applies OffsetUtils.validateFormat to each entry's partition, then its offset, in
// order: values must be null or primitive. The texts are Connect's:
//   - a nested object: "Offsets may only contain primitive types as values, but field <k> contains MAP"
//   - an array: "... contains ARRAY"
//   - an integer outside a Java long, which Jackson reads as a BigInteger that Connect has no schema
//     type for: "... contains class java.math.BigInteger".
//
// Our one addition: a number too large for a double (Jackson makes it Infinity, which JSON cannot
// carry back) is rejected with our own text. Failures are 400, as KIP-995 asks for an invalid
// initial_offsets; Connect's PATCH answers the same texts with 500 (docs/connect-internals.md, "Status codes").
//
// A null partition passes, as in Connect: it is written as ["<name>",null], which no task reads.
// Connectors whose rules need a partition reject it in their Validate.
//
// Large requests are checked in parallel ranges; the first failing range's first failure is the
// one reported, as in a check in order.
func ValidateSource(offsets []events.OffsetEntry) error {
	errs := make([]error, chunks.Count(len(offsets), parallelMin))
	chunks.Each(len(offsets), parallelMin, func(i, lo, hi int) {
		for _, e := range offsets[lo:hi] {
			if err := validateFormat(e.Partition); err != nil {
				errs[i] = err
				return
			}
			if err := validateFormat(e.Offset); err != nil {
				errs[i] = err
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parallelMin is the least number of offsets worth a goroutine of their own.
const parallelMin = 8192

func validateFormat(m jsonvalue.Map) error {
	const prefix = "Offsets may only contain primitive types as values, but field "
	for _, f := range m {
		switch v := f.Value.(type) {
		case jsonvalue.Map:
			return badRequest(prefix + f.Key + " contains MAP")
		case []any:
			return badRequest(prefix + f.Key + " contains ARRAY")
		case jsonvalue.Number:
			if offsetstore.IsIntegral(v) {
				if _, ok := int64Of(v); !ok {
					return badRequest(prefix + f.Key + " contains class java.math.BigInteger")
				}
			} else if math.IsInf(offsetstore.Float64Of(v), 0) {
				return badRequest("Offsets may only contain finite numbers, but field " + f.Key + " contains " +
					string(v) + ", which is too large for a double")
			}
		}
	}
	return nil
}

// Dedupe applies "duplicate partitions: the last one wins" (ConnectorOffsets.toMap fills a HashMap):
// entries with equal partitions (Java Map.equals: same keys and values, in any key order) collapse
// into one that keeps the first entry's position and partition and takes the last entry's offset, as
// HashMap.put keeps the original key object. Null partitions are equal to each other. Without
// duplicates it returns offsets itself.
//
// Partitions are compared by their canonical texts (canonicalKey). The texts' 64-bit hashes are
// computed in parallel ranges and indexed in order; only partitions whose hashes are equal have
// their texts compared, so no text is kept.
func Dedupe(offsets []events.OffsetEntry) []events.OffsetEntry {
	return dedupe(offsets, maphash.Bytes)
}

// dedupe is Dedupe with partitionHash computing the hashes of the canonical partition texts.
func dedupe(offsets []events.OffsetEntry, partitionHash func(maphash.Seed, []byte) uint64) []events.OffsetEntry {
	seed := maphash.MakeSeed()
	hashes := make([]uint64, len(offsets))
	chunks.Each(len(offsets), parallelMin, func(_, lo, hi int) {
		var buf [256]byte
		for i := lo; i < hi; i++ {
			hashes[i] = partitionHash(seed, appendCanonicalKey(buf[:0], offsets[i].Partition))
		}
	})
	// index maps a hash to the position of the first partition with it; partitions that share
	// a hash but differ are in more. Until the first duplicate, positions in offsets are those
	// of the result, and a request without duplicates (the usual one) is returned as it is.
	index := make(map[uint64]int32, len(offsets))
	var more map[uint64][]int32
	add := func(h uint64, at int) {
		if more == nil {
			more = map[uint64][]int32{}
		}
		more[h] = append(more[h], int32(at))
	}
	dup := -1
	for n := range offsets {
		h := hashes[n]
		i, ok := index[h]
		if !ok {
			index[h] = int32(n)
			continue
		}
		if _, found := sameOf(offsets, append([]int32{i}, more[h]...), offsets[n].Partition); found {
			dup = n
			break
		}
		add(h, n)
	}
	if dup < 0 {
		return offsets
	}
	out := append(make([]events.OffsetEntry, 0, len(offsets)), offsets[:dup]...)
	for n := dup; n < len(offsets); n++ {
		e, h := offsets[n], hashes[n]
		i, ok := index[h]
		if !ok {
			index[h] = int32(len(out))
			out = append(out, e)
			continue
		}
		if at, found := sameOf(out, append([]int32{i}, more[h]...), e.Partition); found {
			out[at].Offset = e.Offset
			continue
		}
		add(h, len(out))
		out = append(out, e)
	}
	return out
}

// sameOf returns the position among candidates (positions in out) of the partition equal to p.
func sameOf(out []events.OffsetEntry, candidates []int32, p jsonvalue.Map) (int32, bool) {
	want := canonicalKey(p)
	for _, c := range candidates {
		if canonicalKey(out[c].Partition) == want {
			return c, true
		}
	}
	return 0, false
}
