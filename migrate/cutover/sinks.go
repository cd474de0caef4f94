package cutover

import (
	"context"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// sinkTrack follows one sink connector's group on B.
type sinkTrack struct {
	c           *Connector
	final, idle bool
}

// logStart is the first offset B holds of a sink partition's topic (its log start), or why it
// could not be read.
type logStart struct {
	offset int64
	err    error
}

// logStarts reads, on B, the log start of each partition the sinks' offsets were placed in,
// each topic partition once however many sinks read it: a sink placed below it skips what
// retention (or a mirror that began later) left out. The verification reads them once per
// pass for every undecided sink, not once per sink: a topic that 50 sinks read cost 50
// ListOffsets per partition and pass (kafka-go sends one request per partition).
func logStarts(ctx context.Context, cl *kafka.Client, sinks []*sinkTrack) map[string]logStart {
	reqs := map[string][]kafka.OffsetRequest{}
	asked := map[string]bool{}
	for _, s := range sinks {
		if s.final {
			continue
		}
		for _, p := range s.c.Partitions {
			if p.Placed == nil {
				continue
			}
			topic, part, err := fleet.SinkTopicPartition(p.Partition)
			if err != nil {
				continue
			}
			k := topic + "/" + strconv.Itoa(int(part))
			if asked[k] {
				continue
			}
			asked[k] = true
			reqs[topic] = append(reqs[topic], kafka.OffsetRequest{Partition: int(part), Timestamp: kafka.FirstOffset})
		}
	}
	out := map[string]logStart{}
	if len(reqs) == 0 {
		return out
	}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: reqs})
	for topic, parts := range reqs {
		for _, r := range parts {
			k := topic + "/" + strconv.Itoa(r.Partition)
			out[k] = logStart{err: fmt.Errorf("no answer for topic %q partition %d", topic, r.Partition)}
			if err != nil {
				out[k] = logStart{err: err}
			}
		}
	}
	if err != nil {
		return out
	}
	for topic, parts := range res.Topics {
		for _, po := range parts {
			k := topic + "/" + strconv.Itoa(po.Partition)
			if _, asked := out[k]; !asked {
				continue
			}
			if po.Error != nil {
				out[k] = logStart{err: po.Error}
				continue
			}
			out[k] = logStart{offset: po.FirstOffset}
		}
	}
	return out
}

// judge sets the verdicts of the sink's partitions from its group's committed offsets on B
// and the log starts of their topics there (starts, by "topic/partition"; nil: not read).
func (s *sinkTrack) judge(offs []kafkaio.GroupOffset, starts map[string]logStart) {
	committed := map[string]int64{}
	for _, o := range offs {
		committed[o.Topic+"/"+strconv.Itoa(int(o.Partition))] = o.Offset
	}
	placed := map[string]bool{}
	final := true
	for _, p := range s.c.Partitions {
		topic, part, err := fleet.SinkTopicPartition(p.Partition)
		if err != nil {
			p.Verdict, p.Detail = VerdictMismatch, fleet.Plain(err.Error())
			continue
		}
		k := topic + "/" + strconv.Itoa(int(part))
		if p.Placed == nil && p.Translation == translationNotPlaced {
			continue // found on B in an earlier read: judged below
		}
		placed[k] = true
		want := fleet.SinkOffset(p.Placed)
		got, ok := committed[k]
		p.Evidence = EvidenceOffsets
		// Verified in an earlier read while B still held the offset placed: the records were
		// consumed before retention removed them.
		consumed := p.Verdict == VerdictVerified && p.LogStartOnB != nil && want >= 0 && *p.LogStartOnB <= want
		start, known := starts[k]
		if known && start.err == nil && !consumed {
			p.LogStartOnB = &start.offset
		}
		if known && start.err == nil && want >= 0 && start.offset > want && !consumed {
			// The records from the offset placed to the log start are not on B (retention
			// deleted them, or a mirror began after them): the sink's consumer is out of range
			// and resets (auto.offset.reset), past them.
			at := "has not consumed them"
			p.FirstOnB = nil
			if ok {
				at = fmt.Sprintf("is at %d", got)
				p.FirstOnB = fleet.KafkaOffset(got)
			}
			p.Verdict = VerdictMismatch
			p.Detail = fleet.Textf("B's log start of topic %q partition %d is %d, past the offset placed, %d: records %d..%d (%d) are not on B, so the sink "+
				"skips them (its consumer resets by auto.offset.reset); group %q %s", topic, part, start.offset, want, want, start.offset-1, start.offset-want, s.c.Group, at)
			continue
		}
		switch {
		case !ok && want < 0:
			p.FirstOnB, p.Verdict = nil, VerdictWaiting
			p.Detail = fleet.Textf("reset placed (no offset); group %q has committed nothing for it yet", s.c.Group)
		case !ok:
			p.FirstOnB, p.Verdict = nil, VerdictMismatch
			p.Detail = fleet.Textf("group %q on B has no committed offset for it; %d was placed", s.c.Group, want)
		case want < 0:
			p.FirstOnB, p.Verdict = fleet.KafkaOffset(got), VerdictVerified
			p.Detail = fleet.Textf("reset placed (no offset); group %q committed %d", s.c.Group, got)
		case got == want:
			p.FirstOnB, p.Verdict = fleet.KafkaOffset(got), VerdictWaiting
			p.Detail = fleet.Textf("group %q on B is at the offset placed, %d; nothing consumed after it yet", s.c.Group, want)
		case got > want:
			p.FirstOnB, p.Verdict = fleet.KafkaOffset(got), VerdictVerified
			p.Detail = fleet.Textf("group %q on B committed %d, past the %d placed", s.c.Group, got, want)
		default:
			p.FirstOnB, p.Verdict = fleet.KafkaOffset(got), VerdictMismatch
			p.Detail = fleet.Textf("group %q on B committed %d, before the %d placed", s.c.Group, got, want)
		}
		if known && start.err != nil && p.Verdict != VerdictMismatch {
			note := fmt.Sprintf("B's log start of the partition could not be read (%v): whether records before it were skipped is not known", start.err)
			p.Detail = p.Detail.Append("; %s", note)
			if p.Verdict == VerdictVerified {
				final = false // read it again
			}
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
		p.FirstOnB, p.Verdict, p.Evidence = fleet.KafkaOffset(o.Offset), VerdictUnordered, EvidenceOffsets
		p.Detail = fleet.Textf("group %q on B has offset %d for a partition the migration never placed: A's group had no offset there, so B's started it "+
			"by its auto.offset.reset (earliest for Connect's sinks unless overridden), as A's would have; compare by hand if A had consumed it since", s.c.Group, o.Offset)
	}
	s.final = final
}

// translationNotPlaced is the translation of a partition B's group has but the migration never
// placed.
const translationNotPlaced = "not placed"

// notPlaced is the connector's entry for a partition found on B only (added on first sight).
func (s *sinkTrack) notPlaced(topic string, part int32) *Partition {
	pm := jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number(strconv.Itoa(int(part)))}, {Key: "kafka_topic", Value: topic}}
	k := jsonvalue.SortedText(pm)
	for _, p := range s.c.Partitions {
		if p.Translation == translationNotPlaced && jsonvalue.SortedText(p.Partition) == k {
			return p
		}
	}
	p := &Partition{Partition: pm, Translation: translationNotPlaced}
	s.c.Partitions = append(s.c.Partitions, p)
	return p
}
