package rollback

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/mm2"
)

// carryPlan is what goes back to A for one connector: a result per partition of B's progress,
// and the offsets to PATCH on A (those of the partitions in patched).
type carryPlan struct {
	parts   []*PartitionResult
	patch   []events.ConnectorOffset
	patched []*PartitionResult
	// placed is, per sink partition, the offset the migration placed on B, where known: what
	// A replays when the partition is not carried is B's committed offset minus it.
	placed map[*PartitionResult]int64
}

// replay sets pr's replay count: B's committed offset d minus the offset placed, when known.
func (p *carryPlan) replay(pr *PartitionResult) {
	d, ok := kafkaOffset(pr.FromB)
	placed, known := p.placed[pr]
	if ok && known && d >= placed {
		n := d - placed
		pr.Replay = &n
	}
}

// add records pr, and, when offset is not nil, that pr's partition on A gets offset.
func (p *carryPlan) add(pr *PartitionResult, offset jsonvalue.Map) {
	p.parts = append(p.parts, pr)
	if offset != nil {
		p.patch = append(p.patch, events.ConnectorOffset{Partition: pr.Partition, Offset: offset})
		p.patched = append(p.patched, pr)
	}
}

// plan is the carry of c: fromB is B's progress (what the barrier read, or B's offsets now in
// a dry run), onA A's offsets now (those from the stop).
func (r *runner) plan(ctx context.Context, c *Connector, fromB, onA []events.ConnectorOffset) (carryPlan, error) {
	fromB = slices.Clone(fromB)
	slices.SortFunc(fromB, func(a, b events.ConnectorOffset) int {
		return cmp.Compare(canonical(a.Partition), canonical(b.Partition))
	})
	if c.Type == TypeSink {
		return r.planSink(ctx, c, fromB, onA)
	}
	var p carryPlan
	inv := c.Rekey.Inverse()
	for _, o := range fromB {
		if o.Offset == nil {
			continue
		}
		pr := &PartitionResult{Partition: inv.Apply(o.Partition), FromB: o.Offset, ToA: o.Offset, Verdict: Carried,
			Detail: "B's offset as it is (a source's offset is a position in the external system)"}
		if canonical(pr.Partition) != canonical(o.Partition) {
			pr.PartitionOnB = o.Partition
			pr.Detail += fmt.Sprintf("; partition re-keyed back (%s: %s on B, %s on A)", c.Rekey.Key, c.Rekey.To, c.Rekey.From)
		}
		p.add(pr, o.Offset)
	}
	return p, nil
}

// sinkKey is the key of a sink partition, whatever the type of its kafka_partition.
func sinkKey(topic string, partition int32) string { return topic + "/" + strconv.Itoa(int(partition)) }

// planSink is the carry of a sink connector: per partition of B's group by its translation.
func (r *runner) planSink(ctx context.Context, c *Connector, fromB, onA []events.ConnectorOffset) (carryPlan, error) {
	p := carryPlan{placed: map[*PartitionResult]int64{}}
	placed := map[string]Partition{}
	mode := AsRead
	for _, rp := range c.Partitions {
		if topic, part, ok := sinkTP(rp.Partition); ok {
			placed[sinkKey(topic, part)] = rp
		}
		switch {
		case rp.Translation.acrossMM2():
			mode = Exact
		case rp.Translation == FollowedSources && mode == AsRead:
			mode = FollowedSources
		}
	}
	ownOnA := map[string]jsonvalue.Map{}
	for _, o := range onA {
		if topic, part, ok := sinkTP(o.Partition); ok {
			ownOnA[sinkKey(topic, part)] = o.Offset
		}
	}
	var back []across
	for _, o := range fromB {
		pr := &PartitionResult{Partition: o.Partition, FromB: o.Offset}
		topic, part, ok := sinkTP(o.Partition)
		d, ok2 := kafkaOffset(o.Offset)
		if !ok || !ok2 {
			pr.Verdict, pr.Detail = NotCarried, "B's offset is not a sink offset (kafka_topic, kafka_partition, kafka_offset)"
			p.add(pr, nil)
			continue
		}
		rp, known := placed[sinkKey(topic, part)]
		if v, ok := kafkaOffset(rp.Placed); known && ok {
			p.placed[pr] = v
		}
		tr := rp.Translation
		if !known || tr == "" {
			tr = mode
		}
		switch {
		case tr == FollowedSources:
			pr.ToA, pr.Verdict = ownOnA[sinkKey(topic, part)], Carried
			pr.Detail = "followed its sources: A's sink drained its sources' topics on A before the move and nothing was written there since; A's offset is right as it is"
			p.add(pr, nil)
		case tr.acrossMM2():
			back = append(back, across{pr: pr, target: mm2.TopicPartition{Topic: topic, Partition: part}, d: d})
		default:
			pr.ToA, pr.Verdict, pr.Detail = sinkOffset(d), Carried, "B's committed offset as it is (the topic's offsets are the same on A and B)"
			p.add(pr, pr.ToA)
		}
	}
	if len(back) > 0 {
		if err := r.planBack(ctx, c, &p, back, ownOnA); err != nil {
			return carryPlan{}, err
		}
	}
	r.checkLogStarts(ctx, p.parts)
	return p, nil
}

// across is a sink partition on B's copy of A's topic, with B's committed offset d.
type across struct {
	pr     *PartitionResult
	target mm2.TopicPartition
	d      int64
}

// planBack carries the partitions of a sink across MirrorMaker 2 with mm2's Back.
func (r *runner) planBack(ctx context.Context, c *Connector, p *carryPlan, back []across, ownOnA map[string]jsonvalue.Map) error {
	if r.opts.MM2 == nil {
		for _, b := range back {
			b.pr.Verdict = NotCarried
			b.pr.Detail = "across MirrorMaker 2, and no MirrorMaker 2 settings (replication policy, A's brokers) were given to carry it back: A replays what B delivered since the cutover"
			p.replay(b.pr)
			p.add(b.pr, nil)
		}
		return nil
	}
	committed := map[mm2.TopicPartition]int64{}
	for _, b := range back {
		committed[b.target] = b.d
	}
	// The report's exact pairs are cuts: A's committed offset at the cutover and the offset
	// placed on B.
	var cuts []mm2.Cut
	for _, rp := range c.Partitions {
		topic, part, ok := sinkTP(rp.Partition)
		if !ok || !rp.Translation.acrossMM2() || rp.Translation != Exact {
			continue
		}
		up, ok1 := kafkaOffset(rp.OnA)
		down, ok2 := kafkaOffset(rp.Placed)
		source, ok3 := r.opts.MM2.Policy.UpstreamTopic(topic)
		if ok1 && ok2 && ok3 {
			cuts = append(cuts, mm2.Cut{Source: mm2.TopicPartition{Topic: source, Partition: part}, Upstream: up, Downstream: down})
		}
	}
	tr, err := r.opts.MM2.Translator.Back(ctx, c.Group, committed, cuts...)
	if err != nil {
		return fmt.Errorf("carry sink %q back across MirrorMaker 2: %w", c.Name, err)
	}
	byTarget := map[mm2.TopicPartition]mm2.BackPartition{}
	for _, bp := range tr.Partitions {
		byTarget[bp.Target] = bp
	}
	for _, b := range back {
		bp := byTarget[b.target]
		if bp.Source.Topic != "" {
			b.pr.PartitionOnB = b.pr.Partition
			b.pr.Partition = sinkPartition(bp.Source.Topic, bp.Source.Partition)
		}
		b.pr.Detail = bp.Reason
		if bp.Verdict == mm2.BackCarried {
			b.pr.ToA, b.pr.Verdict = sinkOffset(bp.Offset), Carried
			p.add(b.pr, b.pr.ToA)
			continue
		}
		b.pr.Verdict = NotCarried
		if topic, part, ok := sinkTP(b.pr.Partition); ok {
			b.pr.ToA = ownOnA[sinkKey(topic, part)]
		}
		p.replay(b.pr)
		p.add(b.pr, nil)
	}
	return nil
}

// checkLogStarts turns a sink partition whose offset on A is below A's log start into a skip:
// retention on A deleted records while B ran, and A's consumer resets to its log start.
func (r *runner) checkLogStarts(ctx context.Context, parts []*PartitionResult) {
	for _, pr := range parts {
		at, ok := kafkaOffset(pr.ToA)
		topic, part, ok2 := sinkTP(pr.Partition)
		if !ok || !ok2 {
			continue
		}
		if r.starts == nil {
			pr.Detail = joinDetail(pr.Detail, "A's log start not checked (no brokers of A given)")
			continue
		}
		start, err := r.starts.of(ctx, topic, part)
		if err != nil {
			pr.Detail = joinDetail(pr.Detail, "A's log start not checked: "+oneLine(err.Error(), 200))
			continue
		}
		if start > at {
			n := start - at
			pr.Verdict, pr.Skip = Skip, &n
			pr.Detail = joinDetail(pr.Detail, fmt.Sprintf("A's log start of %s is %d, past offset %d where A resumes: A's consumer skips %d records", sinkKey(topic, part), start, at, n))
		}
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
