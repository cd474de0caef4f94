package handlers

import (
	"context"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// PlannedRecord is a record a dry run would write, exactly as its bytes would go out.
type PlannedRecord struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Key       string `json:"key"`
	// Value is nil for a tombstone.
	Value *string `json:"value"`
}

// Plan is what a dry run would have done, in execution order.
type Plan struct {
	// Tombstones are the wipe of the connector's current source offsets.
	Tombstones []PlannedRecord `json:"tombstones"`
	// Records are the initial source offsets.
	Records []PlannedRecord `json:"records"`
	// Group is the sink connector's consumer group, deleted and then committed to.
	Group string `json:"group,omitempty"`
	// GroupDeleted says whether the group currently has offsets the wipe would delete.
	GroupDeleted bool                      `json:"group_deleted,omitempty"`
	GroupOffsets []offsetstore.GroupOffset `json:"group_offsets,omitempty"`
	// ConfigRecords are target-state-<name> and connector-<name>.
	ConfigRecords []PlannedRecord `json:"config_records"`
	// Error is set when part of the plan could not be computed (e.g. the broker did not
	// answer); the rest is still shown.
	Error string `json:"error,omitempty"`
}

// plan computes, without writing anything, what the remaining stages of a validated request
// would write.
func (c *Creator) plan(ctx context.Context, j *job) *Plan {
	p := &Plan{Tombstones: []PlannedRecord{}, Records: []PlannedRecord{}}
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
			p.GroupOffsets = j.sinkOffsets
		} else {
			for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
				if err := c.opts.Store.Sync(ctx, topic); err != nil {
					setErr(err)
				}
				for _, r := range c.opts.Store.SourceOffsets(topic, j.name) {
					p.Tombstones = append(p.Tombstones, PlannedRecord{Topic: topic, Partition: r.Partition, Key: string(r.Key)})
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
					p.Records = append(p.Records, PlannedRecord{Topic: topic, Partition: offsetstore.PartitionFor(r.Key, n), Key: string(r.Key), Value: &v})
				}
			}
		}
	}
	// Secret-looking values are hidden here as in every result event; the real write
	// carries them verbatim.
	for _, r := range configRecords(j.name, j.state, j.config.Redacted()) {
		v := string(r.Value)
		p.ConfigRecords = append(p.ConfigRecords, PlannedRecord{Topic: c.opts.ConfigTopic, Partition: 0, Key: string(r.Key), Value: &v})
	}
	return p
}
