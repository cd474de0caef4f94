package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// intentMaxBytes is the largest intent record (max.message.bytes of the intent topic): an
// intent carries the connector's previous offsets, which can be large for a big MirrorMaker 2
// connector.
const intentMaxBytes = 64 << 20

// intentLog is the agent's compacted intent topic (key: connector name), shared by every
// replica: handlers.IntentStore on top of a materialised view.
type intentLog struct {
	log *kafkaio.Log
	// producer writes intents, batched with the other writes of concurrent requests.
	producer *kafkaio.Producer
	topic    string

	// resultOut tells whether a request has its result out (claims of such requests are
	// finished); syncResults reads the result topic to its end, for an answer that must see
	// every result out now (Claim).
	resultOut   func(source, id string) bool
	syncResults func(ctx context.Context) error

	logger *slog.Logger

	// refused, when not nil, is told of a write's error when the broker refused it for an
	// ACL (the producer's *kafkaio.AuthzError; set by the agent: a permission check now).
	refused func(error) error

	// wmu orders the writes to the topic: under it, a write is queued on the producer (which
	// fixes its place in the partition) and lastWrite records, per key, the sequence number of
	// the latest write this replica queued, until it is settled. A removal is retried only
	// while it is still its key's latest write, so that it never lands after a newer record of
	// its key.
	wmu       sync.Mutex
	seq       uint64
	lastWrite map[string]uint64
	// finishing counts the removals queued after results (finish) not yet settled.
	finishing sync.WaitGroup

	mu      sync.Mutex
	intents map[string]*handlers.Intent
	// claims are the live claims by connector name, in log order; claimNames maps a claim
	// key to its name (claims.go).
	claims     map[string][]claimEntry
	claimNames map[string]string
}

func newIntentLog(opts offsetstore.Options, topic string, producer *kafkaio.Producer, resultOut func(source, id string) bool) (*intentLog, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	il := &intentLog{intents: map[string]*handlers.Intent{}, producer: producer, topic: topic, resultOut: resultOut,
		claims: map[string][]claimEntry{}, claimNames: map[string]string{}, lastWrite: map[string]uint64{}, logger: logger}
	l, err := kafkaio.NewLog(opts.Cluster(), topic, il.apply)
	if err != nil {
		return nil, err
	}
	// A request reads its connector's claims and intent after SyncTo of its claim: the
	// claims, intents and removals this replica writes need not wake the fetch loops.
	l.QuietTail()
	il.log = l
	return il, nil
}

func (il *intentLog) apply(msgs []kafka.Message) {
	il.mu.Lock()
	defer il.mu.Unlock()
	for i := range msgs {
		if isClaimKey(msgs[i].Key) {
			il.applyClaimLocked(&msgs[i])
			continue
		}
		name := string(msgs[i].Key)
		if msgs[i].Value == nil {
			delete(il.intents, name)
			continue
		}
		if in, ok := msgs[i].WriterData.(*handlers.Intent); ok {
			il.intents[name] = in // this replica's own write (Put, Queue): nothing to parse
			continue
		}
		var in handlers.Intent
		if err := json.Unmarshal(msgs[i].Value, &in); err != nil {
			continue // not ours to judge; an unreadable intent cannot be acted on
		}
		il.intents[name] = &in
	}
}

// Get implements handlers.IntentStore.
func (il *intentLog) Get(name string) (*handlers.Intent, bool) {
	il.mu.Lock()
	defer il.mu.Unlock()
	in, ok := il.intents[name]
	return in, ok
}

// CatchUp implements handlers.IntentStore: it reads the intent topic (and so the partition of
// name's intent and claims) to its end. A replica's view may lag the topic (a replica that has
// just taken a partition over may not have read what its previous owner wrote last); Get is
// then true to everything written before the call.
func (il *intentLog) CatchUp(ctx context.Context, name string) error {
	if err := il.log.Sync(ctx); err != nil {
		return fmt.Errorf("read intent topic %q to its end: %w", il.topic, err)
	}
	return nil
}

// intentMessage returns the key (the connector's name) and value (json.Marshal's encoding) of
// in's record. An intent without config records or snapshots (a new connector's: every
// request of a fleet's first migration) is encoded by hand, key and value in one allocation:
// encoding/json's reflection was a tenth of a small request's encoding work. Others, rarer and
// larger, keep json.Marshal. TestIntentEncoding holds both to json.Marshal's bytes.
func intentMessage(in *handlers.Intent) (key, value []byte, err error) {
	if len(in.Config) > 0 || len(in.Snapshot) > 0 || len(in.GroupSnapshot) > 0 {
		b, err := json.Marshal(in)
		return []byte(in.Name), b, err
	}
	n := len(in.Name)*2 + len(in.RequestID) + len(in.RequestSource) + len(in.Type) + len(in.ConfigTopic) +
		len(in.OffsetsTopic) + len(in.Group) + 160
	for _, t := range in.Topics {
		n += len(t) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, in.Name...)
	key = b[:len(in.Name):len(in.Name)] // an append to the key never writes into the value
	b = append(b, '{')
	if in.Version != 0 {
		b = strconv.AppendInt(append(b, `"v":`...), int64(in.Version), 10)
		b = append(b, ',')
	}
	b = jsonvalue.AppendStringHTML(append(b, `"name":`...), in.Name)
	b = jsonvalue.AppendStringHTML(append(b, `,"request_id":`...), in.RequestID)
	b = jsonvalue.AppendStringHTML(append(b, `,"request_source":`...), in.RequestSource)
	b = jsonvalue.AppendStringHTML(append(b, `,"type":`...), in.Type)
	if in.ConfigTopic != "" {
		b = jsonvalue.AppendStringHTML(append(b, `,"config_topic":`...), in.ConfigTopic)
	}
	if in.OffsetsTopic != "" {
		b = jsonvalue.AppendStringHTML(append(b, `,"offsets_topic":`...), in.OffsetsTopic)
	}
	if in.Existed {
		b = append(b, `,"existed":true`...)
	}
	if len(in.Topics) > 0 {
		b = append(b, `,"topics":[`...)
		for i, t := range in.Topics {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonvalue.AppendStringHTML(b, t)
		}
		b = append(b, ']')
	}
	if in.Group != "" {
		b = jsonvalue.AppendStringHTML(append(b, `,"group":`...), in.Group)
	}
	b = append(b, '}')
	return key, b[len(in.Name):], nil
}

// Put implements handlers.IntentStore: the intent is acknowledged by the broker before the
// request's first destructive write.
func (il *intentLog) Put(ctx context.Context, in *handlers.Intent) error {
	k, b, err := intentMessage(in)
	if err != nil {
		return fmt.Errorf("encode intent: %w", err)
	}
	if _, err := il.writeFor(ctx, in.Name, kafka.Message{Key: k, Value: b, WriterData: in}); err != nil {
		return err
	}
	il.mu.Lock()
	il.intents[in.Name] = in
	il.mu.Unlock()
	return nil
}

// Queue implements handlers.IntentStore: Put, returning once the intent's write is queued on
// the producer; wait waits for its acknowledgement.
func (il *intentLog) Queue(ctx context.Context, in *handlers.Intent) (wait func(context.Context) error) {
	k, b, err := intentMessage(in)
	if err != nil {
		return func(context.Context) error { return fmt.Errorf("encode intent: %w", err) }
	}
	w, queued, seqs, err := il.enqueue(ctx, in.Name, []kafka.Message{{Key: k, Value: b, WriterData: in}}, nil)
	if err != nil {
		return func(context.Context) error { return err }
	}
	return func(ctx context.Context) error {
		if err := il.acknowledged(ctx, w, queued, seqs); err != nil {
			return err
		}
		il.mu.Lock()
		il.intents[in.Name] = in
		il.mu.Unlock()
		return nil
	}
}

// partitionOf returns the partition of connector name's intent (the one kafka.Hash picks for
// the key name), which also holds the name's claims, so that all of a connector's intent and
// claim records share one order.
func (il *intentLog) partitionOf(name string) (int, error) {
	n := il.log.Partitions()
	if n == 0 {
		return 0, errNoPartitions
	}
	return kafkaio.HashPartition(name, n), nil
}

// enqueue queues msgs (records of connector name's partition) on the producer and returns
// their sequence numbers. With keep, only the messages whose sequence number in keep is still
// their key's latest write are queued (the others are dropped and get 0): a retry that must
// not overtake a newer write.
func (il *intentLog) enqueue(ctx context.Context, name string, msgs []kafka.Message, keep []uint64) (*kafkaio.Pending, []kafka.Message, []uint64, error) {
	return il.enqueueAs(ctx, name, msgs, keep, false)
}

// enqueueAs is enqueue; with awaited, the write is one its caller waits for at once, until the
// broker answers (kafkaio.Producer.EnqueueAwaited: an idle partition is sent on the caller's
// goroutine).
func (il *intentLog) enqueueAs(ctx context.Context, name string, msgs []kafka.Message, keep []uint64, awaited bool) (*kafkaio.Pending, []kafka.Message, []uint64, error) {
	p, err := il.partitionOf(name)
	if err != nil {
		return nil, nil, nil, err
	}
	il.wmu.Lock()
	defer il.wmu.Unlock()
	var queued []kafka.Message
	var seqs []uint64
	for i, m := range msgs {
		if keep != nil && il.lastWrite[string(m.Key)] != keep[i] {
			continue
		}
		m.Topic, m.Partition = il.topic, p
		il.seq++
		il.lastWrite[string(m.Key)] = il.seq
		queued, seqs = append(queued, m), append(seqs, il.seq)
		// Another request's barrier may fetch it before Written has it: it then takes the
		// decoded form too (acknowledged forgets it).
		il.log.ExpectRecord(m.Key, m.Value, m.WriterData)
	}
	if len(queued) == 0 {
		return nil, nil, nil, nil
	}
	if awaited {
		return il.producer.EnqueueAwaited(ctx, queued), queued, seqs, nil
	}
	return il.producer.Enqueue(ctx, queued), queued, seqs, nil
}

// settle forgets the writes seqs of msgs that are still their keys' latest.
func (il *intentLog) settle(msgs []kafka.Message, seqs []uint64) {
	il.wmu.Lock()
	defer il.wmu.Unlock()
	for i, m := range msgs {
		if il.lastWrite[string(m.Key)] == seqs[i] {
			delete(il.lastWrite, string(m.Key))
		}
	}
}

// written hands the acknowledged records of w to the log, which applies them at their place
// in the partition without fetching them again, with what they were encoded from (the
// messages' WriterData: an intent, a claim) as their decoded form.
func (il *intentLog) written(w *kafkaio.Pending, msgs []kafka.Message) {
	recs := make([]kafkaio.Record, len(msgs))
	for i, m := range msgs {
		recs[i] = kafkaio.Record{Key: m.Key, Value: m.Value, Partition: m.Partition, Decoded: m.WriterData}
	}
	il.log.Written(w.Partition(0), w.Offset(0), recs, kafkaio.InOrder(len(msgs)))
}

// writeFor writes msgs to the partition of connector name's intent (partitionOf) and waits
// for the broker's answer (a claim, its withdrawal, an intent written before the first
// destructive write: each is known written or not before the request goes on), sending them
// itself when the partition's queue is idle. All of them go in one batch.
func (il *intentLog) writeFor(ctx context.Context, name string, msgs ...kafka.Message) (*kafkaio.Pending, error) {
	w, queued, seqs, err := il.enqueueAs(ctx, name, msgs, nil, true)
	if err != nil {
		return nil, err
	}
	if err := il.acknowledged(ctx, w, queued, seqs); err != nil {
		return nil, err
	}
	return w, nil
}

// acknowledged waits for the write w of msgs (sequence numbers seqs), settles it and hands
// what the broker acknowledged to the log.
func (il *intentLog) acknowledged(ctx context.Context, w *kafkaio.Pending, msgs []kafka.Message, seqs []uint64) error {
	errs := w.Wait(ctx)
	il.settle(msgs, seqs)
	defer func() {
		for _, m := range msgs {
			il.log.UnexpectRecord(m.Key, m.Value, m.WriterData)
		}
	}()
	if errs != nil {
		if il.refused != nil {
			return il.refused(errs[0])
		}
		return errs[0]
	}
	il.written(w, msgs)
	return nil
}

// Delete implements handlers.IntentStore.
func (il *intentLog) Delete(ctx context.Context, name string) error {
	if _, err := il.writeFor(ctx, name, kafka.Message{Key: []byte(name)}); err != nil {
		return err
	}
	il.mu.Lock()
	delete(il.intents, name)
	il.mu.Unlock()
	return nil
}

// sweep removes the intents whose request already has its result out: an agent died between
// publishing a result and removing the intent. Done at every new assignment, soon after such a
// crash, so a stale intent never outlives the dedupe window and is never mistaken for an
// interrupted request.
func (il *intentLog) sweep(ctx context.Context, resultOut func(source, id string) bool) error {
	il.mu.Lock()
	var stale []string
	for name, in := range il.intents {
		if resultOut(in.RequestSource, in.RequestID) {
			stale = append(stale, name)
		}
	}
	il.mu.Unlock()
	var errs []error
	for _, name := range stale {
		errs = append(errs, il.deleteRetrying(ctx, name))
	}
	for _, c := range il.staleClaims(resultOut) {
		errs = append(errs, il.releaseRetrying(ctx, c.Claim, c.RequestSource, c.RequestID))
	}
	return errors.Join(errs...)
}

// finish removes the intent and the claim of a request whose result is out, off the
// request's path: both tombstones are queued on the producer before finish returns, so that
// they land before anything the connector's next request writes (its claim, its intent), and
// a background goroutine waits for them (wait). A removal that fails is retried only while no
// newer write of its key was queued, so it never removes a newer intent; one that still
// fails leaves an intent or claim that is recognised as stale (its result is out) by the next
// request for the connector and by the sweep.
func (il *intentLog) finish(ctx context.Context, name, source, id string) {
	var msgs []kafka.Message
	il.mu.Lock()
	if in, ok := il.intents[name]; ok && in.RequestID == id && in.RequestSource == source {
		msgs = append(msgs, kafka.Message{Key: []byte(name)})
	}
	key := claimKey(name, source, id)
	if _, ok := il.claimNames[key]; ok {
		msgs = append(msgs, kafka.Message{Key: []byte(key)})
	}
	il.mu.Unlock()
	if len(msgs) == 0 {
		return
	}
	w, queued, seqs, err := il.enqueue(ctx, name, msgs, nil)
	if err != nil {
		il.logger.Warn("remove intent", "connector", name, "request_id", id, "err", err)
		return
	}
	il.finishing.Go(func() { il.settleFinish(ctx, name, source, id, w, queued, seqs) })
}

// settleFinish waits for the removals finish queued, applies them to the view and retries
// those that failed while they are still their keys' latest writes.
func (il *intentLog) settleFinish(ctx context.Context, name, source, id string, w *kafkaio.Pending, msgs []kafka.Message, seqs []uint64) {
	b := kafkaio.Backoff{Base: 50 * time.Millisecond, Max: time.Second}
	for attempt := 1; ; attempt++ {
		errs := w.Wait(ctx)
		if errs == nil {
			il.settle(msgs, seqs)
			il.written(w, msgs)
			il.removed(name, source, id)
			return
		}
		// One batch of one partition: the records failed together.
		if attempt == finishAttempts || !kafkaio.Sleep(ctx, b.Delay(attempt)) {
			il.settle(msgs, seqs)
			il.logger.Warn("remove intent", "connector", name, "request_id", id, "err", errs[0])
			return
		}
		// Another replica may have written the connector's next intent meanwhile (once this
		// result is out, the next request may hold the claim there): as far as the view
		// knows, the intent's tombstone must not follow it.
		il.mu.Lock()
		in, ok := il.intents[name]
		il.mu.Unlock()
		if k := slices.IndexFunc(msgs, func(m kafka.Message) bool { return string(m.Key) == name }); k >= 0 && ok &&
			(in.RequestID != id || in.RequestSource != source) {
			il.settle(msgs[k:k+1], seqs[k:k+1])
			msgs, seqs = slices.Delete(slices.Clone(msgs), k, k+1), slices.Delete(slices.Clone(seqs), k, k+1)
		}
		next, queued, queuedSeqs, err := il.enqueue(ctx, name, msgs, seqs)
		if err != nil {
			il.settle(msgs, seqs)
			il.logger.Warn("remove intent", "connector", name, "request_id", id, "err", err)
			return
		}
		if next == nil {
			return // superseded by newer writes of the keys
		}
		w, msgs, seqs = next, queued, queuedSeqs
	}
}

// finishAttempts bounds the tries of finish's removals.
const finishAttempts = 5

// removed drops request (source, id)'s intent and claim from the view once their tombstones
// are acknowledged; an intent of another request that the view already holds stays.
func (il *intentLog) removed(name, source, id string) {
	il.mu.Lock()
	defer il.mu.Unlock()
	if in, ok := il.intents[name]; ok && in.RequestID == id && in.RequestSource == source {
		delete(il.intents, name)
	}
	il.applyClaimLocked(&kafka.Message{Key: []byte(claimKey(name, source, id))})
}

// wait waits for the removals queued by finish.
func (il *intentLog) wait() { il.finishing.Wait() }

// deleteRetrying is Delete with a few retries of transient errors, for the removals the agent
// makes outside a request's stages (those retry through the Creator's classifier).
func (il *intentLog) deleteRetrying(ctx context.Context, name string) error {
	return retryAgentWrite(ctx, func(ctx context.Context) error { return il.Delete(ctx, name) })
}

// retryAgentWrite retries a write to the agent's own topics a few times.
func retryAgentWrite(ctx context.Context, op func(context.Context) error) error {
	b := kafkaio.Backoff{Base: 50 * time.Millisecond, Max: time.Second, Attempts: 5}
	return kafkaio.Retry(ctx, b, nil, op)
}
