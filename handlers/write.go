package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Connect's text when a sink connector's group still has members (docs/connect-internals.md, "Sink connector offsets").
const msgGroupNotEmpty = "Failed to reset consumer group offsets for connector %s either because its tasks haven't stopped completely yet or the connector was resumed before the request to alter its offsets could be successfully completed. If the connector is in a stopped state, this operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted to get rid of the zombie sink tasks."

// wipeOffsets snapshots the connector's current offsets and removes them: for a source
// connector a tombstone for every live key in the global topic and in its own topic, reusing
// the stored key bytes and partition (docs/connect-internals.md, "How Connect reads the topic"); for
// a sink connector the consumer group.
func (c *Creator) wipeOffsets(ctx context.Context, j *job) error {
	if j.typ == connectors.Sink {
		members, err := c.groupMembers(ctx, j.group)
		if err != nil {
			return err
		}
		if members > 0 {
			return internal(fmt.Sprintf(msgGroupNotEmpty, j.name))
		}
		if err := c.takeSnapshot(ctx, j); err != nil {
			return err
		}
		prev := j.prevGroup
		if len(prev) == 0 {
			return nil
		}
		j.wipeStarted = true
		if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.DeleteGroup(ctx, j.group) }); err != nil {
			if errors.Is(err, offsetstore.ErrGroupNotEmpty) {
				return internal(fmt.Sprintf(msgGroupNotEmpty, j.name))
			}
			return fmt.Errorf("delete group %q: %w", j.group, err)
		}
		j.wiped = len(prev)
		return nil
	}

	if err := c.takeSnapshot(ctx, j); err != nil {
		return err
	}
	for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
		prev := j.prevSource[topic]
		if len(prev) == 0 {
			continue
		}
		tombs := make([]offsetstore.Record, len(prev))
		for i, r := range prev {
			tombs[i] = offsetstore.Record{Key: r.Key, Partition: r.Partition}
		}
		landed, err := c.stepWrite(ctx, j, StepWipeOffsets, topic, tombs)
		j.wipeStarted = j.wipeStarted || landed
		if err != nil {
			return fmt.Errorf("tombstone %d offsets in topic %q: %w", len(tombs), topic, err)
		}
		j.wiped += len(tombs)
	}
	return nil
}

// writeOffsets writes the initial offsets: source records to the connector's own topic first
// and then the global one, as ConnectorOffsetBackingStore does; sink offsets as a commit of
// the connector's consumer group.
func (c *Creator) writeOffsets(ctx context.Context, j *job) error {
	if j.typ == connectors.Sink {
		if len(j.sinkOffsets) == 0 {
			return nil
		}
		// A commit the coordinator refused for every partition before committing any (an
		// ACL, say) left nothing to undo (kafkaio.MayHaveWritten).
		landed, err := c.landed(ctx, func(ctx context.Context) error {
			return c.opts.Store.CommitGroupOffsets(ctx, j.group, j.sinkOffsets)
		})
		j.sinkWritten = landed
		if err != nil {
			return fmt.Errorf("commit offsets of group %q: %w", j.group, err)
		}
		j.written = len(j.sinkOffsets)
		return nil
	}
	n := j.sourceCount()
	if n == 0 {
		return nil
	}
	for _, topic := range j.writeTopics(c.opts.OffsetsTopic) {
		var (
			landed bool
			err    error
		)
		if j.encoded != nil && c.opts.Fault == nil {
			landed, err = c.landed(ctx, func(ctx context.Context) error { return c.opts.Store.WriteEncoded(ctx, topic, j.encoded) })
		} else {
			// Crash tests cut the write in two (stepWrite): encoded records go as records.
			landed, err = c.stepWrite(ctx, j, StepWriteOffsets, topic, j.sourceRecords())
		}
		if landed {
			j.writtenTo = append(j.writtenTo, topic)
		}
		if err != nil {
			return fmt.Errorf("write %d offsets to topic %q: %w", n, topic, err)
		}
	}
	j.written = n
	if j.encoded != nil {
		// The batches are the records' only copy besides the views' (about the request's
		// size): kept until the end of the request, they would be the largest part of its
		// memory while the views take them in.
		j.encoded, j.encodedWritten = nil, true
	}
	return nil
}

// writeConfig writes target-state-<name> and then connector-<name> in one ordered write to the
// config topic's single partition. The target state goes first so that no worker starts the
// connector before it sees PAUSED or STOPPED (KIP-980, docs/connect-internals.md, "Write order").
func (c *Creator) writeConfig(ctx context.Context, j *job) error {
	recs := configRecords(j.name, j.state, j.config)
	// Each record carries the request's mark: a rollback after a crash acts on a config key
	// only while its latest record is this request's (recoverIntent).
	mark := offsetstore.RequestMark(j.req.Source, j.req.ID)
	for i := range recs {
		recs[i].Headers = mark
	}
	j.prevConfig = c.configSnapshot(j.name)
	j.targetStateK = string(recs[0].Key)
	landed, err := c.stepWrite(ctx, j, StepWriteConfig, c.opts.ConfigTopic, recs)
	j.configTried = landed
	if err != nil {
		return fmt.Errorf("write connector %q to config topic %q: %w", j.name, c.opts.ConfigTopic, err)
	}
	return nil
}

// configRecords are the two config-topic records of a connector: the target state in its
// two-field form and the config with every property as a string.
func configRecords(name, state string, config events.Config) []offsetstore.Record {
	v1 := state
	if v1 == "STOPPED" {
		v1 = "PAUSED" // pre-3.5 workers do not know STOPPED (docs/connect-internals.md, "Target states")
	}
	// The records are written straight from the strings, as AppendJSON writes a jsonvalue.Map
	// of them (TestConfigRecords), without boxing each value. Both keys and both values are
	// one buffer, sliced once it is complete, each slice capped at its end so that an append
	// to one never writes into the next.
	size := len("target-state-connector-") + 2*len(name) + 32 + len(v1) + len(state) + 20
	for _, e := range config {
		size += len(e.Key) + len(e.Value) + 6
	}
	buf := make([]byte, 0, size)
	buf = append(append(buf, "target-state-"...), name...)
	k0 := len(buf)
	buf = append(append(buf, "connector-"...), name...)
	tsAt := len(buf)
	buf = append(buf, `{"state":`...)
	buf = offsetstore.AppendJSONString(buf, v1)
	buf = append(buf, `,"state.v2":`...)
	buf = offsetstore.AppendJSONString(buf, state)
	buf = append(buf, '}')
	connAt := len(buf)
	buf = append(buf, `{"properties":{`...)
	decoded := make(offsetstore.DecodedConnector, len(config))
	for i, e := range config {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = offsetstore.AppendJSONString(buf, e.Key)
		buf = append(buf, ':')
		buf = offsetstore.AppendJSONString(buf, e.Value)
		decoded[e.Key] = e.Value
	}
	buf = append(buf, "}}"...)
	tsKey, connKey := buf[:k0:k0], buf[k0:tsAt:tsAt]
	ts, conn := buf[tsAt:connAt:connAt], buf[connAt:len(buf):len(buf)]
	return []offsetstore.Record{
		{Key: tsKey, Value: ts, Partition: 0, Decoded: offsetstore.DecodedTargetState(state)},
		{Key: connKey, Value: conn, Partition: 0, Decoded: decoded},
	}
}

// write sends recs to topic with retries. Writes are idempotent here (the same bytes, or
// tombstones), so retrying a partly acknowledged batch is safe.
func (c *Creator) write(ctx context.Context, topic string, recs []offsetstore.Record) error {
	_, err := c.writeLanded(ctx, topic, recs)
	return err
}

// writeLanded is write that also says whether any of its records may be in the topic: false
// only when every attempt was refused outright or never sent (kafkaio.MayHaveWritten), so
// that a cleanup does not undo, nor report as left, what never landed.
func (c *Creator) writeLanded(ctx context.Context, topic string, recs []offsetstore.Record) (bool, error) {
	return c.landed(ctx, func(ctx context.Context) error { return c.opts.Store.Write(ctx, topic, recs) })
}

// landed runs the write op with retries and reports whether any attempt may have left records
// in its topic. No attempt begins once ctx has ended: the destructive stages' ctx ends at the
// request's giveup, and a write begun after it could land after the request's sender reported
// it failed.
func (c *Creator) landed(ctx context.Context, op func(context.Context) error) (landed bool, err error) {
	err = c.retry(ctx, func(ctx context.Context) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := op(ctx)
		landed = landed || kafkaio.MayHaveWritten(err)
		return err
	})
	return landed, err
}

// stepWrite is writeLanded for a stage's multi-record writes. With a fault hook installed
// (crash tests only) it writes in two halves with the point "mid:<step>" between them, so a
// test can stop the process in the middle of a multi-record write.
func (c *Creator) stepWrite(ctx context.Context, j *job, step Step, topic string, recs []offsetstore.Record) (landed bool, err error) {
	if c.opts.Fault == nil || len(recs) < 2 {
		return c.writeLanded(ctx, topic, recs)
	}
	half := len(recs) / 2
	if landed, err := c.writeLanded(ctx, topic, recs[:half]); err != nil {
		return landed, err
	}
	c.fault(j, "mid:"+string(step))
	_, err = c.writeLanded(ctx, topic, recs[half:])
	return true, err
}

func (c *Creator) groupMembers(ctx context.Context, group string) (int, error) {
	var n int
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		n, err = c.opts.Store.GroupMembers(ctx, group)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("describe group %q: %w", group, err)
	}
	return n, nil
}
