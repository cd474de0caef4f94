package handlers

import (
	"context"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// plan computes, without writing anything, what the remaining stages of a validated request
// would write.
func (c *Creator) plan(ctx context.Context, j *job) *events.Plan {
	p := &events.Plan{Tombstones: []events.PlannedRecord{}, Records: []events.PlannedRecord{}}
	setErr := func(err error) {
		if p.Error == "" {
			p.Error = err.Error()
		}
	}
	if j.req.Data.HasInitialOffsets {
		if j.typ == connectors.Sink {
			p.Group = j.group
			prev, err := c.opts.Store.GroupOffsets(ctx, j.group)
			if err != nil {
				setErr(err)
			}
			p.GroupDeleted = len(prev) > 0
			for _, o := range j.sinkOffsets {
				p.GroupOffsets = append(p.GroupOffsets, events.PlannedGroupOffset(o))
			}
		} else {
			for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
				if err := c.opts.Store.Sync(ctx, topic); err != nil {
					setErr(err)
				}
				for _, r := range c.opts.Store.SourceOffsets(topic, j.name) {
					p.Tombstones = append(p.Tombstones, events.PlannedRecord{Topic: topic, Partition: r.Partition, Key: string(r.Key)})
				}
			}
			for _, topic := range j.writeTopics(c.opts.OffsetsTopic) {
				n, err := c.opts.Store.Partitions(ctx, topic)
				if err != nil {
					setErr(err)
					continue
				}
				for _, r := range j.records {
					v := string(r.Value)
					p.Records = append(p.Records, events.PlannedRecord{Topic: topic, Partition: offsetstore.PartitionFor(r.Key, n), Key: string(r.Key), Value: &v})
				}
			}
		}
	}
	// Secret-looking values are hidden here as in every result event; the real write
	// carries them verbatim.
	for _, r := range configRecords(j.name, j.state, c.redactedConfig(j)) {
		v := string(r.Value)
		p.ConfigRecords = append(p.ConfigRecords, events.PlannedRecord{Topic: c.opts.ConfigTopic, Partition: 0, Key: string(r.Key), Value: &v})
	}
	return p
}
