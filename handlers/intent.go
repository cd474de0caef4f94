package handlers

import (
	"bytes"
	"context"
	"fmt"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Intent is written before a request's first destructive step and removed once its result is
// out. It holds what is needed to put the connector back exactly as it was: if the agent dies
// mid-request, the redelivered request (or the next one for the connector) finds the intent,
// rolls the interrupted attempt back and runs from a clean state. No connector is ever left
// half-created and no initial offsets of an unfinished request survive.
type Intent struct {
	Name          string `json:"name"`
	RequestID     string `json:"request_id"`
	RequestSource string `json:"request_source"`
	Type          string `json:"type"`
	// Topics are the offsets topics the request touches (global first); Group the sink group.
	Topics []string `json:"topics,omitempty"`
	Group  string   `json:"group,omitempty"`
	// Snapshot is the connector's source records before the wipe; GroupSnapshot its group offsets.
	Snapshot      []SnapshotRecord          `json:"snapshot,omitempty"`
	GroupSnapshot []offsetstore.GroupOffset `json:"group_snapshot,omitempty"`
}

// SnapshotRecord is one live offsets-topic record as it was found.
type SnapshotRecord struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
}

// IntentStore keeps intents durably (the agent keeps them in a compacted topic of its own).
type IntentStore interface {
	// Get returns the intent recorded for a connector name.
	Get(name string) (*Intent, bool)
	Put(ctx context.Context, in *Intent) error
	Delete(ctx context.Context, name string) error
}

// intentFor builds the intent of j after its snapshot was taken.
func (c *Creator) intentFor(j *job) *Intent {
	return c.newIntent(j, j.prevTopics, j.prevSource, j.prevGroup)
}

// newIntent builds j's intent for the given snapshot.
func (c *Creator) newIntent(j *job, topics []string, source map[string][]offsetstore.SourceRecord, group []offsetstore.GroupOffset) *Intent {
	in := &Intent{Name: j.name, RequestID: j.req.ID, RequestSource: j.req.Source, Type: string(j.typ)}
	if !j.req.Data.HasInitialOffsets {
		// Without initial offsets the request leaves the connector's offsets alone (KIP-995:
		// today's behaviour), so a rollback must not touch them either: no topics, no group.
		return in
	}
	in.Group = j.group
	if j.typ == connectors.Source {
		in.Topics = j.sourceTopics(c.opts.OffsetsTopic)
		for _, t := range topics {
			for _, r := range source[t] {
				in.Snapshot = append(in.Snapshot, SnapshotRecord{Topic: t, Partition: r.Partition, Key: r.Key, Value: r.Value})
			}
		}
	}
	in.GroupSnapshot = group
	return in
}

// optimisticIntent is an intent written while the read-to-end barriers run, from the view as
// it was before them. It is kept if the snapshot after the barrier is the same (the usual
// case: nobody else writes a connector's offsets while it is being created), which takes the
// intent's round trip off the request's path; otherwise the intent is written again.
type optimisticIntent struct {
	done chan error
	// snap is the global offsets topic's records the intent holds (nil without offsets).
	snap []offsetstore.SourceRecord
}

// startOptimisticIntent writes j's intent in the background from the current view. It
// applies to source connectors without their own offsets topic and to requests without
// initial offsets, whose snapshot the view holds (a sink's lives in its group).
func (c *Creator) startOptimisticIntent(ctx context.Context, j *job) {
	if c.opts.Intents == nil || j.req.DryRun || j.connectorTopic != "" ||
		(j.typ == connectors.Sink && j.req.Data.HasInitialOffsets) {
		return
	}
	o := &optimisticIntent{done: make(chan error, 1)}
	var topics []string
	var source map[string][]offsetstore.SourceRecord
	if j.req.Data.HasInitialOffsets {
		o.snap = c.opts.Store.SourceOffsets(c.opts.OffsetsTopic, j.name)
		topics = []string{c.opts.OffsetsTopic}
		source = map[string][]offsetstore.SourceRecord{c.opts.OffsetsTopic: o.snap}
	}
	in := c.newIntent(j, topics, source, nil)
	go func() { o.done <- c.retry(ctx, func(ctx context.Context) error { return c.opts.Intents.Put(ctx, in) }) }()
	j.optimistic = o
}

// settleOptimisticIntent waits for a background intent write that was not used, so that the
// agent's removal of the intent after the result cannot overtake it.
func (j *job) settleOptimisticIntent() {
	if j.optimistic != nil {
		<-j.optimistic.done
		j.optimistic = nil
	}
}

// sameRecords reports whether two snapshots hold the same records (both in the view's stable
// order).
func sameRecords(a, b []offsetstore.SourceRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Partition != b[i].Partition || !bytes.Equal(a[i].Key, b[i].Key) || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// takeSnapshot reads what the connector has now, without changing anything.
func (c *Creator) takeSnapshot(ctx context.Context, j *job) error {
	if j.snapshotTaken || !j.req.Data.HasInitialOffsets {
		return nil // nothing of the connector's offsets will change
	}
	if j.typ == connectors.Sink {
		var prev []offsetstore.GroupOffset
		if err := c.retry(ctx, func(ctx context.Context) (err error) {
			prev, err = c.opts.Store.GroupOffsets(ctx, j.group)
			return err
		}); err != nil {
			return fmt.Errorf("list offsets of group %q: %w", j.group, err)
		}
		j.prevGroup, j.snapshotTaken = prev, true
		return nil
	}
	j.prevSource = make(map[string][]offsetstore.SourceRecord)
	j.prevTopics = nil
	for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
		var err error
		if topic == c.opts.OffsetsTopic && j.globalSynced != nil {
			err = <-j.globalSynced
			j.globalSynced = nil
		} else {
			err = c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, topic) })
		}
		if err != nil {
			return fmt.Errorf("read offsets topic %q: %w", topic, err)
		}
		j.prevSource[topic] = c.opts.Store.SourceOffsets(topic, j.name)
		j.prevTopics = append(j.prevTopics, topic)
	}
	j.snapshotTaken = true
	return nil
}

// recoverIntent rolls back an interrupted request recorded by in: it tombstones the
// connector's config records, removes every offset the connector has now and restores the
// snapshot. An intent whose request already has a result out is stale (the agent died between
// publishing the result and removing the intent): it is only removed.
func (c *Creator) recoverIntent(ctx context.Context, in *Intent) error {
	deleteIntent := func() error {
		return c.retry(ctx, func(ctx context.Context) error { return c.opts.Intents.Delete(ctx, in.Name) })
	}
	if c.opts.ResultOut != nil && c.opts.ResultOut(in.RequestSource, in.RequestID) {
		return deleteIntent()
	}
	c.opts.Logger.Warn("rolling back interrupted request", "connector", in.Name, "request_id", in.RequestID)
	keys := []offsetstore.Record{{Key: []byte("target-state-" + in.Name), Partition: 0}, {Key: []byte("connector-" + in.Name), Partition: 0}}
	if err := c.write(ctx, c.opts.ConfigTopic, keys); err != nil {
		return fmt.Errorf("tombstone config records of %q: %w", in.Name, err)
	}
	if in.Type == string(connectors.Sink) {
		if in.Group != "" {
			if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.DeleteGroup(ctx, in.Group) }); err != nil {
				return fmt.Errorf("delete group %q: %w", in.Group, err)
			}
			if len(in.GroupSnapshot) > 0 {
				if err := c.retry(ctx, func(ctx context.Context) error {
					return c.opts.Store.CommitGroupOffsets(ctx, in.Group, in.GroupSnapshot)
				}); err != nil {
					return fmt.Errorf("restore offsets of group %q: %w", in.Group, err)
				}
			}
		}
	} else {
		for _, topic := range in.Topics {
			if topic != c.opts.OffsetsTopic {
				if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Track(ctx, topic) }); err != nil {
					return fmt.Errorf("read offsets topic %q: %w", topic, err)
				}
			}
			if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, topic) }); err != nil {
				return fmt.Errorf("read offsets topic %q: %w", topic, err)
			}
			var recs []offsetstore.Record
			for _, r := range c.opts.Store.SourceOffsets(topic, in.Name) {
				recs = append(recs, offsetstore.Record{Key: r.Key, Partition: r.Partition})
			}
			for _, s := range in.Snapshot {
				if s.Topic == topic {
					recs = append(recs, offsetstore.Record{Key: s.Key, Value: s.Value, Partition: s.Partition})
				}
			}
			if err := c.write(ctx, topic, recs); err != nil {
				return fmt.Errorf("restore offsets in topic %q: %w", topic, err)
			}
		}
	}
	return deleteIntent()
}
