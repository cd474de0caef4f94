package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// SinkOffset is a sink offset's kafka_offset (-1 when it has none).
func SinkOffset(m jsonvalue.Map) int64 {
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

// SinkTopicPartition reads a sink partition map's kafka_topic and kafka_partition.
func SinkTopicPartition(m jsonvalue.Map) (string, int32, error) {
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

// KafkaOffset is a sink offset {"kafka_offset": n}.
func KafkaOffset(n int64) jsonvalue.Map {
	return jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(strconv.FormatInt(n, 10))}}
}

// Rekey rewrites the logical name under which a Debezium connector's offsets are kept: the
// partition member Key holding From holds To instead (decided by the hazard check of its
// family when the edits change the name, applied to the offsets placed on B).
type Rekey struct {
	Key  string `json:"key"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Apply returns offs with every partition whose Key is From under To instead; the maps of
// offs are not changed. A nil Rekey returns offs.
func (r *Rekey) Apply(offs []events.ConnectorOffset) []events.ConnectorOffset {
	if r == nil {
		return offs
	}
	out := make([]events.ConnectorOffset, len(offs))
	for i, o := range offs {
		out[i] = o
		if v, _ := o.Partition.Get(r.Key); v != r.From {
			continue
		}
		p := slices.Clone(o.Partition)
		for j := range p {
			if p[j].Key == r.Key {
				p[j].Value = r.To
			}
		}
		out[i].Partition = p
	}
	return out
}

// Inverse is the way back: B's partitions under A's logical name (nil for nil).
func (r *Rekey) Inverse() *Rekey {
	if r == nil {
		return nil
	}
	return &Rekey{Key: r.Key, From: r.To, To: r.From}
}
