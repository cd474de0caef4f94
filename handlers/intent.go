package handlers

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Intent is written before a request's first destructive step and removed once its result is
// out. It holds what is needed to put the connector back exactly as it was: if the agent dies
// mid-request, the redelivered request (or the next one for the connector) finds the intent,
// rolls the interrupted attempt back and runs from a clean state. No connector is ever left
// half-created and no initial offsets of an unfinished request survive.
//
// An intent may be written before the request's existence check settles (the optimistic
// intent, written while the read-to-end barriers run), so its presence alone does not mean
// that the request wrote anything. What makes the rollback exact (recoverIntent):
//   - Existed records that the connector was in the view the intent was built from. Such a
//     request cannot pass the existence check without first replacing its intent (writeIntent
//     does, before the first write, when the check's answer differs), so an intent with Existed
//     belongs to a request that wrote nothing: its rollback touches nothing.
//   - The config records a request writes carry its mark (offsetstore.RequestMark); a rollback
//     tombstones or restores only the keys whose latest record carries the mark, and touches
//     nothing of a connector whose live record is not the request's.
//   - Offsets are put back from Snapshot, taken before the request's wipe, and only where they
//     differ from it: a request that wrote none changes nothing.
type Intent struct {
	// Version is intentVersion for intents written since config records carry request marks;
	// 0 for older ones.
	Version       int    `json:"v,omitempty"`
	Name          string `json:"name"`
	RequestID     string `json:"request_id"`
	RequestSource string `json:"request_source"`
	Type          string `json:"type"`
	// ConfigTopic and OffsetsTopic name the Connect cluster the request writes: its
	// config.storage.topic and offset.storage.topic, on the Kafka cluster of the intent topic.
	// Agents of two Connect clusters that share an intent topic (and a request topic: a
	// consumer group that mixes them, see agent.checkGroup) never act on each other's intents
	// (ownIntent). Empty in intents written before they were recorded, which are taken as the
	// reader's.
	ConfigTopic  string `json:"config_topic,omitempty"`
	OffsetsTopic string `json:"offsets_topic,omitempty"`
	// Existed: the connector had a config in the view the intent was built from.
	Existed bool `json:"existed,omitempty"`
	// Config is the connector's live connector- and target-state- records as the view held
	// them (values as far as the view keeps them: offsetstore.ConfigRecord).
	Config []ConfigSnapshot `json:"config,omitempty"`
	// Topics are the offsets topics the request touches (global first); Group the sink group.
	Topics []string `json:"topics,omitempty"`
	Group  string   `json:"group,omitempty"`
	// Snapshot is the connector's source records before the wipe; GroupSnapshot its group offsets.
	Snapshot      []SnapshotRecord          `json:"snapshot,omitempty"`
	GroupSnapshot []offsetstore.GroupOffset `json:"group_snapshot,omitempty"`
}

// intentVersion is the Version of intents whose requests mark the config records they write.
const intentVersion = 2

// ConfigSnapshot is one live config-topic record of the connector as it was found. Value is
// nil for a valid connector record (an intent with such a record has Existed set and never
// restores it).
type ConfigSnapshot struct {
	Key   string `json:"key"`
	Value []byte `json:"value,omitempty"`
}

// configKeys are the config-topic keys a request writes for connector name, in write order:
// both from one allocation (a slice and two strings were three, twice a request).
func configKeys(name string) [2]string {
	const target = "target-state-"
	both := target + name + "connector-" + name
	return [2]string{both[:len(target)+len(name)], both[len(target)+len(name):]}
}

// configSnapshot reads the connector's config records from the store's view.
func (c *Creator) configSnapshot(name string) []ConfigSnapshot {
	var out []ConfigSnapshot
	for _, key := range configKeys(name) {
		if r := c.opts.Store.ConfigRecord(key); r.Live {
			out = append(out, ConfigSnapshot{Key: key, Value: r.Value})
		}
	}
	return out
}

// sameConfig reports whether two config snapshots hold the same records.
func sameConfig(a, b []ConfigSnapshot) bool {
	return slices.EqualFunc(a, b, func(x, y ConfigSnapshot) bool { return x.Key == y.Key && bytes.Equal(x.Value, y.Value) })
}

// restoreConfig returns the records that put key back as snap holds it: its value, or a
// tombstone when it had none.
func restoreConfig(key string, snap []ConfigSnapshot) offsetstore.Record {
	for _, s := range snap {
		if s.Key == key && s.Value != nil {
			return offsetstore.Record{Key: []byte(key), Value: s.Value, Partition: 0}
		}
	}
	return offsetstore.Record{Key: []byte(key), Partition: 0}
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
	// Get returns the intent recorded for a connector name, as far as the store's view has
	// read.
	Get(name string) (*Intent, bool)
	// CatchUp reads what holds connector name's intent to its end (the agent: the intent
	// topic, and so the partition of the name's intent and claims), so that Get then returns
	// every intent written before the call. A claim does as much (Claims.Claim reads the
	// partition up to the claim).
	CatchUp(ctx context.Context, name string) error
	Put(ctx context.Context, in *Intent) error
	// Queue is Put that returns once the intent's write is queued, before the broker
	// acknowledged it: wait waits for the acknowledgement, and returns Put's error. A write
	// queued later (the request's Write probes, queued while the store's writes are held:
	// Store.HoldWrites) can go in the same request to the broker. wait is called once.
	Queue(ctx context.Context, in *Intent) (wait func(context.Context) error)
	Delete(ctx context.Context, name string) error
}

// intentFor builds the intent of j after its snapshot was taken.
func (c *Creator) intentFor(j *job) *Intent {
	return c.newIntent(j, j.prevTopics, j.prevSource, j.prevGroup)
}

// newIntent builds j's intent for the given snapshot.
func (c *Creator) newIntent(j *job, topics []string, source map[string][]offsetstore.SourceRecord, group []offsetstore.GroupOffset) *Intent {
	in := &Intent{Version: intentVersion, Name: j.name, RequestID: j.req.ID, RequestSource: j.req.Source, Type: string(j.typ),
		ConfigTopic: c.opts.ConfigTopic, OffsetsTopic: c.opts.OffsetsTopic, Config: c.configSnapshot(j.name)}
	_, in.Existed = c.opts.Store.ConnectorConfig(j.name)
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
	in *Intent
	// snap is the global offsets topic's records the intent holds (nil without offsets).
	snap []offsetstore.SourceRecord
	// wait waits for the write, with the Creator's retries; result calls it once.
	wait    func() error
	settled bool
	err     error
}

// result waits for the intent's write (once) and returns its error.
func (o *optimisticIntent) result() error {
	if !o.settled {
		o.err, o.settled = o.wait(), true
	}
	return o.err
}

// startOptimisticIntent queues j's intent from the current view; its write goes on while the
// request reads the config topic to its end, and writeIntent waits for it. It applies to
// source connectors without their own offsets topic and to requests without initial
// offsets, whose snapshot the view holds (a sink's lives in its group).
func (c *Creator) startOptimisticIntent(ctx context.Context, j *job) {
	if c.opts.Intents == nil || j.req.DryRun || j.connectorTopic != "" ||
		(j.typ == connectors.Sink && j.req.Data.HasInitialOffsets) {
		return
	}
	o := &optimisticIntent{}
	var topics []string
	var source map[string][]offsetstore.SourceRecord
	if j.req.Data.HasInitialOffsets {
		o.snap = c.opts.Store.SourceOffsets(c.opts.OffsetsTopic, j.name)
		topics = []string{c.opts.OffsetsTopic}
		source = map[string][]offsetstore.SourceRecord{c.opts.OffsetsTopic: o.snap}
	}
	in := c.newIntent(j, topics, source, nil)
	o.in = in
	queued := c.opts.Intents.Queue(ctx, in)
	o.wait = func() error {
		// The queued write is the first attempt; the retries write again.
		return c.retry(ctx, func(ctx context.Context) error {
			if queued != nil {
				wait := queued
				queued = nil
				return wait(ctx)
			}
			return c.opts.Intents.Put(ctx, in)
		})
	}
	j.optimistic = o
}

// settleOptimisticIntent waits for a background intent write that was not used, so that the
// agent's removal of the intent after the result cannot overtake it.
func (j *job) settleOptimisticIntent() {
	if j.optimistic != nil {
		_ = j.optimistic.result() // a failed write is only settled here: nothing was written after it
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
			err = j.globalSynced(ctx)
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

// recoverIntent rolls back an interrupted request recorded by in, to exactly the state before
// it, and touches nothing the request did not write; u collects what it undid:
//   - an intent whose request already has a result out is stale (the agent died between
//     publishing the result and removing the intent): it is only removed;
//   - an intent of another Connect cluster (agents of two clusters sharing one intent topic)
//     is not this agent's to roll back or remove: an error, so that the request waiting on it
//     is not answered (recoverOwed) while that cluster's agents can still roll it back;
//   - an intent that found the connector existing belongs to a request that was rejected at,
//     or had not yet passed, the existence check (a request that passes it replaces such an
//     intent before its first write): it is only removed;
//   - a connector whose live connector record is not the request's (another writer created
//     it after the request's existence check, or it was there before the check saw it) is
//     never touched, its offsets included: they carry no mark of their writer, and another
//     writer's own (the connector's tasks, Connect's PATCH /connectors/<name>/offsets of a
//     stopped connector) cannot be told from the request's. What differs from the intent's
//     snapshot is left to that connector and said in u's left (leaveOffsets);
//   - otherwise each config record whose latest record carries the request's mark is put back
//     as the intent found it (tombstoned when there was none), and the connector's offsets are
//     put back to the snapshot taken before the wipe, writing only the keys that differ from
//     it: nobody but the request writes the offsets of a connector that does not exist.
func (c *Creator) recoverIntent(ctx context.Context, in *Intent, u *undo) error {
	deleteIntent := func() error {
		return c.retry(ctx, func(ctx context.Context) error { return c.opts.Intents.Delete(ctx, in.Name) })
	}
	if c.opts.ResultOut != nil && c.opts.ResultOut(in.RequestSource, in.RequestID) {
		return deleteIntent()
	}
	if !c.ownIntent(in) {
		return fmt.Errorf("its intent belongs to another Connect cluster (config topic %q, offsets topic %q; this agent writes %q and %q), "+
			"whose agents alone can roll it back: give each Connect cluster's agents an intent topic of their own (OFFSETAGENT_INTENT_TOPIC)",
			in.ConfigTopic, in.OffsetsTopic, c.opts.ConfigTopic, c.opts.OffsetsTopic)
	}
	if in.Existed {
		c.opts.Logger.Info("removing intent of a request that found its connector existing", "connector", in.Name, "request_id", in.RequestID)
		return deleteIntent()
	}
	// An intent of an earlier version belongs to a request that did not mark its config
	// records: a live connector is then left as it is, and the target state of one that is
	// not live is taken as the request's.
	legacy := in.Version < intentVersion
	v, err := c.judgeConfig(ctx, in.Name, in.RequestSource, in.RequestID, legacy, in.Config)
	if err != nil {
		return err
	}
	if v.foreign {
		c.opts.Logger.Warn("connector exists and was not written by the request rolled back; leaving it as it is",
			"connector", in.Name, "request_id", in.RequestID)
		u.done = append(u.done, fmt.Sprintf("left connector %s as it is: another writer's", in.Name))
		if err := c.leaveOffsets(ctx, in, u); err != nil {
			return err
		}
		return deleteIntent()
	}
	c.opts.Logger.Warn("rolling back interrupted request", "connector", in.Name, "request_id", in.RequestID)
	if err := c.putBackConfig(ctx, in.Name, v.recs, u); err != nil {
		return err
	}
	if err := c.restoreOffsets(ctx, in, u); err != nil {
		return err
	}
	if u.out.OffsetsRemoved > 0 {
		u.done = append(u.done, fmt.Sprintf("removed %d offsets it wrote", u.out.OffsetsRemoved))
	}
	if u.out.OffsetsRestored > 0 {
		u.done = append(u.done, fmt.Sprintf("restored %d previous offsets", u.out.OffsetsRestored))
	}
	return deleteIntent()
}

// ownIntent reports whether in belongs to the Connect cluster c writes (Intent.ConfigTopic);
// an intent that does not name its cluster (written before intents did) is taken as c's.
func (c *Creator) ownIntent(in *Intent) bool {
	return (in.ConfigTopic == "" || in.ConfigTopic == c.opts.ConfigTopic) &&
		(in.OffsetsTopic == "" || in.OffsetsTopic == c.opts.OffsetsTopic)
}

// restoreOffsets puts the connector's offsets (a sink's group) back to in's snapshot.
func (c *Creator) restoreOffsets(ctx context.Context, in *Intent, u *undo) error {
	if in.Type == string(connectors.Sink) {
		return c.restoreGroup(ctx, in, u)
	}
	for _, topic := range in.Topics {
		if err := c.restoreTopic(ctx, in, topic, u); err != nil {
			return err
		}
	}
	return nil
}

// leaveOffsets says in u's left how many of the connector's offsets differ from in's
// snapshot, for a connector another writer created over an interrupted request: they are left
// to it (recoverIntent says why), with what puts the earlier ones back. A request without
// initial offsets changed none.
func (c *Creator) leaveOffsets(ctx context.Context, in *Intent, u *undo) error {
	differ := 0
	if in.Type == string(connectors.Sink) {
		if in.Group != "" {
			now, same, err := c.groupDiff(ctx, in)
			if err != nil {
				return err
			}
			if !same {
				differ = max(len(now), len(in.GroupSnapshot))
			}
		}
	} else {
		for _, topic := range in.Topics {
			tombs, recs, err := c.topicDiff(ctx, in, topic)
			if err != nil {
				return err
			}
			differ += len(tombs) + len(recs)
		}
	}
	if differ == 0 {
		return nil
	}
	c.opts.Logger.Error("offsets of a connector another writer created differ from before an interrupted request: left to it",
		"connector", in.Name, "request_id", in.RequestID, "offsets", differ)
	u.left = append(u.left, fmt.Sprintf("%d offsets of connector %s differ from before the interrupted request %s: another writer created the connector "+
		"while the request ran, and offset records carry no mark of their writer, so what the request wrote cannot be told from what that "+
		"connector or its owner wrote; they are left to it. Check them (GET /connectors/%s/offsets); the offsets from before the request "+
		"(previous_offsets when this result is that request's own) go back with PATCH /connectors/%s/offsets once the connector is stopped",
		differ, in.Name, in.RequestID, in.Name, in.Name))
	u.previous = snapshotOffsets(in)
	return nil
}

// snapshotOffsets is in's snapshot in the GET offsets shape (previous_offsets).
func snapshotOffsets(in *Intent) *events.ConnectorOffsets {
	out := &events.ConnectorOffsets{Offsets: []events.ConnectorOffset{}}
	if in.Type == string(connectors.Sink) {
		for _, g := range in.GroupSnapshot {
			out.Offsets = append(out.Offsets, SinkOffset(g))
		}
		return out
	}
	lists := make([][]offsetstore.SourceRecord, len(in.Topics))
	for _, s := range in.Snapshot {
		if i := slices.Index(in.Topics, s.Topic); i >= 0 {
			lists[i] = append(lists[i], offsetstore.SourceRecord{Key: s.Key, Value: s.Value, Partition: s.Partition})
		}
	}
	out.Offsets = unionSourceOffsets(lists...)
	return out
}

// configVerdict is what judgeConfig found of a connector's config records.
type configVerdict struct {
	// foreign: the live connector record is another writer's, not the request's alone.
	foreign bool
	// recs put back, as the request found them, the keys whose latest record is the
	// request's, the connector record first; none for a foreign connector.
	recs []offsetstore.Record
}

// judgeConfig reads the config topic to its end and judges which config records of connector
// name are request (source, id)'s: a key is the request's when its latest record carries the
// request's mark (offsetstore.RequestMark), or, for legacy (an intent written before the
// marks), when it is live. It is the one judgement of which config records are a request's,
// for the rollback of an interrupted request (recoverIntent) and the cleanup of a failed
// write_config (undoWriteConfig). A connector whose live connector record is not the
// request's alone is another writer's (foreign): nothing of it is the request's to put back.
// The connector record goes first, as Connect deletes a connector, so that no worker sees a
// connector whose target state went away under it.
func (c *Creator) judgeConfig(ctx context.Context, name, source, id string, legacy bool, snap []ConfigSnapshot) (configVerdict, error) {
	var v configVerdict
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, c.opts.ConfigTopic) }); err != nil {
		return v, fmt.Errorf("read config topic %q: %w", c.opts.ConfigTopic, err)
	}
	// A malformed connector record (its bytes kept: Value) is no connector to Connect, which
	// skips it; a request may have passed its existence check over it.
	if conn := c.opts.Store.ConfigRecord("connector-" + name); conn.Live && conn.Value == nil &&
		(legacy || !conn.Writer.IsRequest(source, id)) {
		v.foreign = true
		return v, nil
	}
	keys := configKeys(name)
	for _, key := range slices.Backward(keys[:]) {
		if r := c.opts.Store.ConfigRecord(key); r.Live && (legacy || r.Writer.IsRequest(source, id)) {
			v.recs = append(v.recs, restoreConfig(key, snap))
		}
	}
	return v, nil
}

// putBackConfig writes recs (configVerdict.recs) to the config topic; u collects what was
// tombstoned and restored.
func (c *Creator) putBackConfig(ctx context.Context, name string, recs []offsetstore.Record, u *undo) error {
	if len(recs) == 0 {
		return nil
	}
	if err := c.write(ctx, c.opts.ConfigTopic, recs); err != nil {
		return fmt.Errorf("restore config records of %q: %w", name, err)
	}
	var removed, restored []string
	for _, r := range recs {
		if r.Value == nil {
			removed = append(removed, string(r.Key))
		} else {
			restored = append(restored, string(r.Key))
		}
	}
	u.out.ConfigRecordsRemoved = append(u.out.ConfigRecordsRemoved, removed...)
	if len(removed) > 0 {
		u.done = append(u.done, "tombstoned "+strings.Join(removed, " and "))
	}
	if len(restored) > 0 {
		u.done = append(u.done, "restored "+strings.Join(restored, " and "))
	}
	return nil
}

// restoreGroup puts a sink connector's group back to the intent's snapshot, unless it holds
// exactly that already.
func (c *Creator) restoreGroup(ctx context.Context, in *Intent, u *undo) error {
	if in.Group == "" {
		return nil
	}
	now, same, err := c.groupDiff(ctx, in)
	if err != nil {
		return err
	}
	if same {
		return nil // the request changed nothing of the group
	}
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
	u.out.OffsetsRemoved += len(now)
	u.out.OffsetsRestored += len(in.GroupSnapshot)
	return nil
}

// groupDiff reads the offsets of in's sink group and tells whether they are its snapshot's.
func (c *Creator) groupDiff(ctx context.Context, in *Intent) (now []offsetstore.GroupOffset, same bool, err error) {
	if err := c.retry(ctx, func(ctx context.Context) (err error) {
		now, err = c.opts.Store.GroupOffsets(ctx, in.Group)
		return err
	}); err != nil {
		return nil, false, fmt.Errorf("list offsets of group %q: %w", in.Group, err)
	}
	return now, sameGroupOffsets(now, in.GroupSnapshot), nil
}

// sameGroupOffsets reports whether two lists hold the same committed entries (offset, leader
// epoch and metadata), in any order.
func sameGroupOffsets(a, b []offsetstore.GroupOffset) bool {
	if len(a) != len(b) {
		return false
	}
	type tp struct {
		topic     string
		partition int32
	}
	want := make(map[tp]offsetstore.GroupOffset, len(b))
	for _, g := range b {
		want[tp{g.Topic, g.Partition}] = g
	}
	for _, g := range a {
		w, ok := want[tp{g.Topic, g.Partition}]
		if !ok || w.Offset != g.Offset || w.Metadata != g.Metadata || epochOf(w) != epochOf(g) {
			return false
		}
	}
	return true
}

// epochOf is g's committed leader epoch, -1 for none.
func epochOf(g offsetstore.GroupOffset) int32 {
	if g.LeaderEpoch == nil {
		return -1
	}
	return *g.LeaderEpoch
}

// restoreTopic puts a source connector's offsets in topic back to the intent's snapshot:
// a tombstone for each live key the snapshot does not hold, the snapshot's record for each key
// whose live record differs from it; nothing when they are the same.
func (c *Creator) restoreTopic(ctx context.Context, in *Intent, topic string, u *undo) error {
	tombs, recs, err := c.topicDiff(ctx, in, topic)
	if err != nil {
		return err
	}
	// Tombstones first, as the request's own rollback writes them: a key the request moved is
	// then never live twice.
	if err := c.write(ctx, topic, append(tombs, recs...)); err != nil {
		return fmt.Errorf("restore offsets in topic %q: %w", topic, err)
	}
	u.out.OffsetsRemoved += len(tombs)
	u.out.OffsetsRestored += len(recs)
	return nil
}

// topicDiff reads topic to its end and returns what puts the connector's offsets in it back
// to in's snapshot: a tombstone for each live key the snapshot does not hold (tombs), the
// snapshot's record for each key whose live record differs from it or is gone (recs).
func (c *Creator) topicDiff(ctx context.Context, in *Intent, topic string) (tombs, recs []offsetstore.Record, err error) {
	if topic != c.opts.OffsetsTopic {
		if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Track(ctx, topic) }); err != nil {
			return nil, nil, fmt.Errorf("read offsets topic %q: %w", topic, err)
		}
	}
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, topic) }); err != nil {
		return nil, nil, fmt.Errorf("read offsets topic %q: %w", topic, err)
	}
	type pk struct {
		partition int
		key       string
	}
	live := map[pk][]byte{}
	for _, r := range c.opts.Store.SourceOffsets(topic, in.Name) {
		live[pk{r.Partition, string(r.Key)}] = r.Value
	}
	kept := map[pk]bool{}
	for _, s := range in.Snapshot {
		if s.Topic != topic {
			continue
		}
		k := pk{s.Partition, string(s.Key)}
		kept[k] = true
		if v, ok := live[k]; !ok || !bytes.Equal(v, s.Value) {
			recs = append(recs, offsetstore.Record{Key: s.Key, Value: s.Value, Partition: s.Partition})
		}
	}
	for _, r := range c.opts.Store.SourceOffsets(topic, in.Name) {
		if !kept[pk{r.Partition, string(r.Key)}] {
			tombs = append(tombs, offsetstore.Record{Key: r.Key, Partition: r.Partition})
		}
	}
	return tombs, recs, nil
}
