package migrate

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// sinkTrack follows one sink connector's group on B.
type sinkTrack struct {
	c           *CutoverConnector
	final, idle bool
}

// judge sets the verdicts of the sink's partitions from its group's committed offsets on B.
func (s *sinkTrack) judge(offs []kafkaio.GroupOffset) {
	committed := map[string]int64{}
	for _, o := range offs {
		committed[o.Topic+"/"+strconv.Itoa(int(o.Partition))] = o.Offset
	}
	placed := map[string]bool{}
	final := true
	for _, p := range s.c.Partitions {
		topic, part, err := sinkTopicPartition(p.Partition)
		if err != nil {
			p.Verdict, p.Detail = VerdictMismatch, err.Error()
			continue
		}
		k := topic + "/" + strconv.Itoa(int(part))
		if p.Placed == nil && p.Translation == translationNotPlaced {
			continue // found on B in an earlier read: judged below
		}
		placed[k] = true
		want := sinkOffset(p.Placed)
		got, ok := committed[k]
		p.Evidence = EvidenceOffsets
		switch {
		case !ok && want < 0:
			p.FirstOnB, p.Verdict = nil, VerdictWaiting
			p.Detail = fmt.Sprintf("reset placed (no offset); group %q has committed nothing for it yet", s.c.Group)
		case !ok:
			p.FirstOnB, p.Verdict = nil, VerdictMismatch
			p.Detail = fmt.Sprintf("group %q on B has no committed offset for it; %d was placed", s.c.Group, want)
		case want < 0:
			p.FirstOnB, p.Verdict = kafkaOffset(got), VerdictVerified
			p.Detail = fmt.Sprintf("reset placed (no offset); group %q committed %d", s.c.Group, got)
		case got == want:
			p.FirstOnB, p.Verdict = kafkaOffset(got), VerdictWaiting
			p.Detail = fmt.Sprintf("group %q on B is at the offset placed, %d; nothing consumed after it yet", s.c.Group, want)
		case got > want:
			p.FirstOnB, p.Verdict = kafkaOffset(got), VerdictVerified
			p.Detail = fmt.Sprintf("group %q on B committed %d, past the %d placed", s.c.Group, got, want)
		default:
			p.FirstOnB, p.Verdict = kafkaOffset(got), VerdictMismatch
			p.Detail = fmt.Sprintf("group %q on B committed %d, before the %d placed", s.c.Group, got, want)
		}
		if p.Verdict == VerdictWaiting {
			final = false
		}
	}
	for _, o := range offs {
		k := o.Topic + "/" + strconv.Itoa(int(o.Partition))
		if placed[k] {
			continue
		}
		p := s.notPlaced(o.Topic, o.Partition)
		// A's group had no offset there: B's starts it by its auto.offset.reset, as A's would
		// have. Nothing was placed to continue from, so nothing proves or disproves it.
		p.FirstOnB, p.Verdict, p.Evidence = kafkaOffset(o.Offset), VerdictUnordered, EvidenceOffsets
		p.Detail = fmt.Sprintf("group %q on B has offset %d for a partition the migration never placed: A's group had no offset there, so B's started it "+
			"by its auto.offset.reset (earliest for Connect's sinks unless overridden), as A's would have; compare by hand if A had consumed it since", s.c.Group, o.Offset)
	}
	s.final = final
}

// translationNotPlaced is the translation of a partition B's group has but the migration never
// placed.
const translationNotPlaced = "not placed"

// notPlaced is the connector's entry for a partition found on B only (added on first sight).
func (s *sinkTrack) notPlaced(topic string, part int32) *CutoverPartition {
	pm := jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number(strconv.Itoa(int(part)))}, {Key: "kafka_topic", Value: topic}}
	k := partitionKey(pm)
	for _, p := range s.c.Partitions {
		if p.Translation == translationNotPlaced && partitionKey(p.Partition) == k {
			return p
		}
	}
	p := &CutoverPartition{Partition: pm, Translation: translationNotPlaced}
	s.c.Partitions = append(s.c.Partitions, p)
	return p
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
