package mm2

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// SinkPartitions reads a sink connector's offsets on A, in the KIP-875 shape
// ({"kafka_topic","kafka_partition"} -> {"kafka_offset"}), as TranslateGroup takes them: by
// Connect's own rules (connectors.ValidateSink, which also gives its messages), and with a
// negative offset refused as Connect refuses it when it commits. An entry with a null offset
// (a reset) is left out: there is nothing to translate.
func SinkPartitions(offsets []events.ConnectorOffset) (map[TopicPartition]int64, error) {
	entries := make([]events.OffsetEntry, len(offsets))
	for i, o := range offsets {
		entries[i] = events.OffsetEntry{Partition: o.Partition, Offset: o.Offset}
	}
	parsed, err := connectors.ValidateSink(entries)
	if err != nil {
		return nil, fmt.Errorf("sink offsets: %w", err)
	}
	out := make(map[TopicPartition]int64, len(parsed))
	for _, so := range parsed {
		if so.Offset == nil {
			continue
		}
		if *so.Offset < 0 {
			return nil, fmt.Errorf("sink offsets: %s-%d: invalid negative offset %d", so.Topic, so.Partition, *so.Offset)
		}
		out[TopicPartition{Topic: so.Topic, Partition: so.Partition}] = *so.Offset
	}
	return out, nil
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
