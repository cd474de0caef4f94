package handlers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// cleanupTimeout bounds the undo of a failed request. Cleanup runs on a context detached from
// the request's, so a shutdown does not leave a half-undone connector behind.
const cleanupTimeout = 60 * time.Second

// cleanup undoes what a request failed at failed had done, so that the connector's offsets end
// exactly as they were before the request and no config record of it remains: it removes the
// initial offsets written so far, restores the snapshot taken before the wipe and tombstones
// the config records write_config may have written. A cleanup that fails says so, with what is
// left, instead of hiding it.
func (c *Creator) cleanup(ctx context.Context, j *job, failed Step) *events.Cleanup {
	out := &events.Cleanup{}
	if !j.wipeStarted && !j.sinkWritten && len(j.writtenTo) == 0 && !j.configTried {
		out.Summary = events.NothingUndone
		return out
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var done, left []string
	fail := func(what string, err error) {
		if out.Error == "" {
			out.Error = err.Error()
		} else {
			out.Error += "; " + err.Error()
		}
		left = append(left, what)
	}

	if j.configTried {
		keys := []string{"target-state-" + j.name, "connector-" + j.name}
		recs := []offsetstore.Record{{Key: []byte(keys[0]), Partition: 0}, {Key: []byte(keys[1]), Partition: 0}}
		if err := c.write(ctx, c.opts.ConfigTopic, recs); err != nil {
			fail(fmt.Sprintf("config records %s may remain", strings.Join(keys, ", ")), fmt.Errorf("tombstone config records: %w", err))
		} else {
			out.ConfigRecordsRemoved = keys
			done = append(done, "tombstoned "+strings.Join(keys, " and "))
		}
	}

	if j.typ == connectors.Sink {
		if j.sinkWritten || j.wipeStarted {
			if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.DeleteGroup(ctx, j.group) }); err != nil {
				fail(fmt.Sprintf("group %q may hold initial offsets", j.group), fmt.Errorf("delete group %q: %w", j.group, err))
				return finish(out, done, left)
			}
			if j.sinkWritten {
				out.OffsetsRemoved = len(j.sinkOffsets)
				done = append(done, fmt.Sprintf("removed %d initial offsets of group %s", len(j.sinkOffsets), j.group))
			}
			if len(j.prevGroup) > 0 {
				if err := c.retry(ctx, func(ctx context.Context) error {
					return c.opts.Store.CommitGroupOffsets(ctx, j.group, j.prevGroup)
				}); err != nil {
					fail(fmt.Sprintf("%d previous offsets of group %q were not restored (see previous_offsets)", len(j.prevGroup), j.group),
						fmt.Errorf("restore offsets of group %q: %w", j.group, err))
					return finish(out, done, left)
				}
				out.OffsetsRestored = len(j.prevGroup)
				done = append(done, fmt.Sprintf("restored %d previous offsets", len(j.prevGroup)))
			}
		}
		return finish(out, done, left)
	}

	for _, topic := range j.writtenTo {
		tombs := make([]offsetstore.Record, len(j.records))
		for i, r := range j.records {
			tombs[i] = offsetstore.Record{Key: r.Key, Partition: -1}
		}
		if err := c.write(ctx, topic, tombs); err != nil {
			fail(fmt.Sprintf("initial offsets may remain in topic %s", topic), fmt.Errorf("tombstone initial offsets in topic %q: %w", topic, err))
			continue
		}
		out.OffsetsRemoved += len(tombs)
	}
	if out.OffsetsRemoved > 0 {
		done = append(done, fmt.Sprintf("removed %d initial offsets", out.OffsetsRemoved))
	}
	if j.wipeStarted {
		for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
			prev := j.prevSource[topic]
			if len(prev) == 0 {
				continue
			}
			recs := make([]offsetstore.Record, len(prev))
			for i, r := range prev {
				recs[i] = offsetstore.Record(r)
			}
			if err := c.write(ctx, topic, recs); err != nil {
				fail(fmt.Sprintf("%d previous offsets in topic %s were not restored (see previous_offsets)", len(prev), topic),
					fmt.Errorf("restore offsets in topic %q: %w", topic, err))
				continue
			}
			out.OffsetsRestored += len(prev)
		}
		if out.OffsetsRestored > 0 {
			done = append(done, fmt.Sprintf("restored %d previous offsets", out.OffsetsRestored))
		}
	}
	return finish(out, done, left)
}

func finish(out *events.Cleanup, done, left []string) *events.Cleanup {
	switch {
	case len(done) == 0 && len(left) == 0:
		out.Summary = "nothing to undo"
	case len(left) == 0:
		out.Summary = strings.Join(done, "; ")
	default:
		out.Summary = "cleanup incomplete"
		if len(done) > 0 {
			out.Summary += ": " + strings.Join(done, "; ")
		}
		out.Left = strings.Join(left, "; ")
	}
	return out
}

// previousOffsets is the snapshot in the GET /connectors/{name}/offsets shape.
func (j *job) previousOffsets() *events.ConnectorOffsets {
	out := &events.ConnectorOffsets{Offsets: []events.ConnectorOffset{}}
	if j.typ == connectors.Sink {
		for _, g := range j.prevGroup {
			out.Offsets = append(out.Offsets, SinkOffset(g))
		}
		return out
	}
	// The connector's own topic comes last so that its value wins, as Connect's reads do.
	lists := make([][]offsetstore.SourceRecord, 0, len(j.prevTopics))
	for _, topic := range j.prevTopics {
		lists = append(lists, j.prevSource[topic])
	}
	out.Offsets = unionSourceOffsets(lists...)
	return out
}

// unionSourceOffsets decodes the records of several offsets topics into the GET offsets
// shape; for a key present in more than one list, the later list's value wins.
func unionSourceOffsets(lists ...[]offsetstore.SourceRecord) []events.ConnectorOffset {
	out := []events.ConnectorOffset{}
	seen := map[string]int{}
	for _, recs := range lists {
		for _, r := range recs {
			o, ok := SourceOffset(r)
			if !ok {
				continue
			}
			if i, dup := seen[string(r.Key)]; dup {
				out[i] = o
				continue
			}
			seen[string(r.Key)] = len(out)
			out = append(out, o)
		}
	}
	return out
}

// SinkOffset is a group offset in the GET offsets shape; the partition's keys are in the order
// Connect's REST view prints them (HashMap order: kafka_partition, kafka_topic).
func SinkOffset(g offsetstore.GroupOffset) events.ConnectorOffset {
	return events.ConnectorOffset{
		Partition: jsonvalue.Map{
			{Key: "kafka_partition", Value: jsonvalue.Number(fmt.Sprint(g.Partition))},
			{Key: "kafka_topic", Value: g.Topic},
		},
		Offset: jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(fmt.Sprint(g.Offset))}},
	}
}

// SourceOffset decodes one offsets-topic record into the GET offsets shape. ok is false for a
// key Connect would skip when listing partitions.
func SourceOffset(r offsetstore.SourceRecord) (events.ConnectorOffset, bool) {
	_, partition, ok := offsetstore.DecodeKey(r.Key)
	if !ok || partition == nil {
		return events.ConnectorOffset{}, false
	}
	offset, err := jsonvalue.DecodeMap(r.Value)
	if err != nil {
		return events.ConnectorOffset{}, false
	}
	return events.ConnectorOffset{Partition: partition, Offset: offset}, true
}
