package mm2

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Keys of a sink connector's offsets in the KIP-875 shape (Connect's SinkUtils).
const (
	kafkaTopicKey     = "kafka_topic"
	kafkaPartitionKey = "kafka_partition"
	kafkaOffsetKey    = "kafka_offset"
)

// SinkPartitions reads a sink connector's offsets on A, in the KIP-875 shape
// ({"kafka_topic","kafka_partition"} -> {"kafka_offset"}), as TranslateGroup takes them. An
// entry with a null offset (a reset) is left out: there is nothing to translate.
func SinkPartitions(offsets []events.ConnectorOffset) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64, len(offsets))
	for i, o := range offsets {
		if o.Offset == nil {
			continue
		}
		topic, ok := o.Partition.Get(kafkaTopicKey)
		name, isString := topic.(string)
		if !ok || !isString || name == "" {
			return nil, fmt.Errorf("sink offset %d: no %s string", i, kafkaTopicKey)
		}
		partition, err := intField(o.Partition, kafkaPartitionKey, 32)
		if err != nil {
			return nil, fmt.Errorf("sink offset %d: %w", i, err)
		}
		offset, err := intField(o.Offset, kafkaOffsetKey, 64)
		if err != nil {
			return nil, fmt.Errorf("sink offset %d: %w", i, err)
		}
		out[TopicPartition{Topic: name, Partition: int32(partition)}] = offset
	}
	return out, nil
}

func intField(m jsonvalue.Map, key string, bits int) (int64, error) {
	v, ok := m.Get(key)
	if !ok {
		return 0, fmt.Errorf("no %s", key)
	}
	var text string
	switch v := v.(type) {
	case jsonvalue.Number:
		text = string(v)
	case string:
		text = v
	default:
		return 0, fmt.Errorf("%s is %T, not an integer", key, v)
	}
	n, err := strconv.ParseInt(text, 10, bits)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a non-negative integer", key, text)
	}
	return n, nil
}

// ConnectorOffsets returns the offsets to write on B in the KIP-875 sink shape, sorted by
// topic and partition; missing partitions are left out.
func (t Translation) ConnectorOffsets() []events.ConnectorOffset {
	var gos []offsetstore.GroupOffset
	for tp, off := range t.Offsets() {
		gos = append(gos, offsetstore.GroupOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
	}
	slices.SortFunc(gos, func(a, b offsetstore.GroupOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	out := make([]events.ConnectorOffset, 0, len(gos))
	for _, g := range gos {
		out = append(out, handlers.SinkOffset(g))
	}
	return out
}
