package migrate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// sinkOffset is a sink offset's kafka_offset (-1 when it has none).
func sinkOffset(m jsonvalue.Map) int64 {
	for _, f := range m {
		if f.Key != "kafka_offset" {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(fmt.Sprint(f.Value), &n); err == nil {
			return n
		}
	}
	return -1
}

// sinkTopicPartition reads a sink partition map's kafka_topic and kafka_partition.
func sinkTopicPartition(m jsonvalue.Map) (string, int32, error) {
	topic, _ := m.Get("kafka_topic")
	part, _ := m.Get("kafka_partition")
	t, ok := topic.(string)
	n, ok2 := part.(jsonvalue.Number)
	if !ok || !ok2 {
		return "", 0, errors.New("not a sink partition (kafka_topic, kafka_partition)")
	}
	p, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("kafka_partition %s: %w", n, err)
	}
	return t, int32(p), nil
}

// kafkaOffset is a sink offset {"kafka_offset": n}.
func kafkaOffset(n int64) jsonvalue.Map {
	return jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(strconv.FormatInt(n, 10))}}
}

// rekey rewrites the logical name under which a Debezium connector's offsets are kept.
type rekey struct {
	key, from, to string
}

// apply returns offs with every partition whose key is from under to instead; the maps of
// offs are not changed.
func (r *rekey) apply(offs []events.ConnectorOffset) []events.ConnectorOffset {
	if r == nil {
		return offs
	}
	out := make([]events.ConnectorOffset, len(offs))
	for i, o := range offs {
		out[i] = o
		if v, _ := o.Partition.Get(r.key); v != r.from {
			continue
		}
		p := slices.Clone(o.Partition)
		for j := range p {
			if p[j].Key == r.key {
				p[j].Value = r.to
			}
		}
		out[i].Partition = p
	}
	return out
}
