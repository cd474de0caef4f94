package handlers

import (
	"context"
	"strings"

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
				p.GroupOffsets = append(p.GroupOffsets, events.PlannedGroupOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
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
			topics := j.writeTopics(c.opts.OffsetsTopic)
			recs := j.sourceRecords()
			p.Records = make([]events.PlannedRecord, 0, len(topics)*len(recs))
			// One string holds every record's key and value, and one slice the values, for
			// every topic: tens of thousands of small copies would cost as much again.
			keys, values := plannedBytes(recs)
			for _, topic := range topics {
				n, err := c.opts.Store.Partitions(ctx, topic)
				if err != nil {
					setErr(err)
					continue
				}
				for i, r := range recs {
					p.Records = append(p.Records, events.PlannedRecord{Topic: topic, Partition: offsetstore.PartitionFor(r.Key, n), Key: keys[i], Value: &values[i]})
				}
			}
		}
	}
	// Secret-looking values are hidden here as in every result event; the real write
	// carries them verbatim.
	if j.offsetsOnly {
		return p
	}
	for _, r := range configRecords(j.name, j.state, c.redactedConfig(j)) {
		v := string(r.Value)
		p.ConfigRecords = append(p.ConfigRecords, events.PlannedRecord{Topic: c.opts.ConfigTopic, Partition: 0, Key: string(r.Key), Value: &v})
	}
	return p
}

// plannedBytes is every record's key and value as strings that share one allocation.
func plannedBytes(records []offsetstore.Record) (keys, values []string) {
	n := 0
	for _, r := range records {
		n += len(r.Key) + len(r.Value)
	}
	var b strings.Builder
	b.Grow(n)
	for _, r := range records {
		b.Write(r.Key)
		b.Write(r.Value)
	}
	all := b.String()
	keys, values = make([]string, len(records)), make([]string, len(records))
	at := 0
	for i, r := range records {
		keys[i], values[i] = all[at:at+len(r.Key)], all[at+len(r.Key):at+len(r.Key)+len(r.Value)]
		at += len(r.Key) + len(r.Value)
	}
	return keys, values
}
