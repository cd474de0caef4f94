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

// cleanup undoes what a failed request had done, so that the connector's offsets end
// exactly as they were before the request and no config record of it remains. Each stage that
// writes has an undo (stage.undo); they run in reverse stage order: tombstone the config
// records write_config may have written, remove the initial offsets written so far, restore
// the snapshot taken before the wipe. A cleanup that fails says so, with what is left, instead
// of hiding it.
func (c *Creator) cleanup(ctx context.Context, j *job) *events.Cleanup {
	u := &undo{out: &events.Cleanup{}}
	if !j.wipeStarted && !j.sinkWritten && len(j.writtenTo) == 0 && !j.configTried {
		u.out.Summary = events.NothingUndone
		return u.out
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	all := stages()
	for i := len(all) - 1; i >= 0 && !u.stop; i-- {
		if all[i].undo != nil {
			all[i].undo(c, ctx, j, u)
		}
	}
	return u.finish()
}

// undo collects what a cleanup did and what it left.
type undo struct {
	out        *events.Cleanup
	done, left []string
	// stop ends the cleanup: a later undo would make things worse (e.g. restoring a group
	// that could not be emptied).
	stop bool
	// previous, when not nil, is what the connector's offsets were before an interrupted
	// request whose rollback left them to another writer's connector (leaveOffsets).
	previous *events.ConnectorOffsets
}

// fail records that what remains because of err.
func (u *undo) fail(what string, err error) {
	if u.out.Error == "" {
		u.out.Error = err.Error()
	} else {
		u.out.Error += "; " + err.Error()
	}
	u.left = append(u.left, what)
}

// undoWriteConfig puts back the config records write_config wrote as it found them:
// tombstoned, or the earlier value of a key that had one (a target state left behind for the
// name). Which records are the request's is judged as the rollback of an interrupted request
// judges it (judgeConfig, recoverIntent): only keys whose latest record carries the request's
// mark, and nothing of a connector another writer created meanwhile: its offsets neither (the
// undos of the earlier stages do not run), and what the request wrote of them is said as left.
func (c *Creator) undoWriteConfig(ctx context.Context, j *job, u *undo) {
	if !j.configTried {
		return
	}
	v, err := c.judgeConfig(ctx, j.name, j.req.Source, j.req.ID, false, j.prevConfig)
	if err == nil && !v.foreign {
		err = c.putBackConfig(ctx, j.name, v.recs, u)
	}
	if err != nil {
		keys := configKeys(j.name)
		u.fail(fmt.Sprintf("config records %s, %s may remain", keys[0], keys[1]), err)
		return
	}
	if !v.foreign {
		return
	}
	c.opts.Logger.Warn("connector exists and was not written by the request rolled back; leaving it as it is",
		"connector", j.name, "request_id", j.req.ID)
	u.done = append(u.done, fmt.Sprintf("left connector %s as it is: another writer's", j.name))
	if j.wipeStarted || j.sinkWritten || len(j.writtenTo) > 0 {
		u.left = append(u.left, fmt.Sprintf("the offsets this request wrote for connector %s: another writer created the connector meanwhile, "+
			"so they are left to it (previous_offsets holds what was there before; PATCH /connectors/%s/offsets puts it back once the connector is stopped)",
			j.name, j.name))
	}
	u.stop = true
}

// undoWriteOffsets removes the initial offsets written so far: a sink connector's group is
// deleted, a source connector's records are tombstoned in every topic written to.
func (c *Creator) undoWriteOffsets(ctx context.Context, j *job, u *undo) {
	if j.typ == connectors.Sink {
		if !j.sinkWritten {
			return
		}
		if !c.deleteGroup(ctx, j, u) {
			return
		}
		u.out.OffsetsRemoved = len(j.sinkOffsets)
		u.done = append(u.done, fmt.Sprintf("removed %d initial offsets of group %s", len(j.sinkOffsets), j.group))
		return
	}
	recs := j.sourceRecords()
	for _, topic := range j.writtenTo {
		var tombs []offsetstore.Record
		if j.encodedWritten {
			// Every record was acknowledged and its batches let go: the connector's keys in
			// the topic are those records (the wipe removed the others), as a rollback of an
			// interrupted request finds them (recoverIntent).
			var err error
			if tombs, err = c.liveKeys(ctx, topic, j.name); err != nil {
				u.fail(fmt.Sprintf("initial offsets may remain in topic %s", topic), err)
				continue
			}
		} else {
			tombs = make([]offsetstore.Record, len(recs))
			for i, r := range recs {
				tombs[i] = offsetstore.Record{Key: r.Key, Partition: -1}
			}
		}
		if err := c.write(ctx, topic, tombs); err != nil {
			u.fail(fmt.Sprintf("initial offsets may remain in topic %s", topic), fmt.Errorf("tombstone initial offsets in topic %q: %w", topic, err))
			continue
		}
		u.out.OffsetsRemoved += len(tombs)
	}
	if u.out.OffsetsRemoved > 0 {
		u.done = append(u.done, fmt.Sprintf("removed %d initial offsets", u.out.OffsetsRemoved))
	}
}

// liveKeys returns a tombstone for every live key of connector name in topic, once the
// store's view of topic has read it to its end.
func (c *Creator) liveKeys(ctx context.Context, topic, name string) ([]offsetstore.Record, error) {
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, topic) }); err != nil {
		return nil, fmt.Errorf("read offsets topic %q: %w", topic, err)
	}
	live := c.opts.Store.SourceOffsets(topic, name)
	tombs := make([]offsetstore.Record, len(live))
	for i, r := range live {
		tombs[i] = offsetstore.Record{Key: r.Key, Partition: r.Partition}
	}
	return tombs, nil
}

// undoWipe writes back the snapshot taken before the wipe. A sink connector's group is
// emptied first unless undoWriteOffsets already did, since the wipe may have stopped part way.
func (c *Creator) undoWipe(ctx context.Context, j *job, u *undo) {
	if !j.wipeStarted {
		return
	}
	if j.typ == connectors.Sink {
		if !j.sinkWritten && !c.deleteGroup(ctx, j, u) {
			return
		}
		if len(j.prevGroup) == 0 {
			return
		}
		if err := c.retry(ctx, func(ctx context.Context) error {
			return c.opts.Store.CommitGroupOffsets(ctx, j.group, j.prevGroup)
		}); err != nil {
			u.fail(fmt.Sprintf("%d previous offsets of group %q were not restored (see previous_offsets)", len(j.prevGroup), j.group),
				fmt.Errorf("restore offsets of group %q: %w", j.group, err))
			return
		}
		u.out.OffsetsRestored = len(j.prevGroup)
		u.done = append(u.done, fmt.Sprintf("restored %d previous offsets", len(j.prevGroup)))
		return
	}
	for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
		prev := j.prevSource[topic]
		if len(prev) == 0 {
			continue
		}
		recs := make([]offsetstore.Record, len(prev))
		for i, r := range prev {
			recs[i] = offsetstore.Record{Key: r.Key, Value: r.Value, Partition: r.Partition}
		}
		if err := c.write(ctx, topic, recs); err != nil {
			u.fail(fmt.Sprintf("%d previous offsets in topic %s were not restored (see previous_offsets)", len(prev), topic),
				fmt.Errorf("restore offsets in topic %q: %w", topic, err))
			continue
		}
		u.out.OffsetsRestored += len(prev)
	}
	if u.out.OffsetsRestored > 0 {
		u.done = append(u.done, fmt.Sprintf("restored %d previous offsets", u.out.OffsetsRestored))
	}
}

// deleteGroup deletes the sink connector's group; on failure the cleanup stops there.
func (c *Creator) deleteGroup(ctx context.Context, j *job, u *undo) bool {
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.DeleteGroup(ctx, j.group) }); err != nil {
		u.fail(fmt.Sprintf("group %q may hold initial offsets", j.group), fmt.Errorf("delete group %q: %w", j.group, err))
		u.stop = true
		return false
	}
	return true
}

// finish writes the summary of what was done and left.
func (u *undo) finish() *events.Cleanup {
	out, done, left := u.out, u.done, u.left
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
