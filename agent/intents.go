package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers"
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
	// finished).
	resultOut func(source, id string) bool

	mu      sync.Mutex
	intents map[string]*handlers.Intent
	// claims are the live claims by connector name, in log order; claimNames maps a claim
	// key to its name (claims.go).
	claims     map[string][]claimEntry
	claimNames map[string]string
}

func newIntentLog(opts offsetstore.Options, topic string, producer *kafkaio.Producer, resultOut func(source, id string) bool) (*intentLog, error) {
	il := &intentLog{intents: map[string]*handlers.Intent{}, producer: producer, topic: topic, resultOut: resultOut,
		claims: map[string][]claimEntry{}, claimNames: map[string]string{}}
	l, err := kafkaio.NewLog(opts.Cluster(), topic, il.apply)
	if err != nil {
		return nil, err
	}
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

// Put implements handlers.IntentStore: the intent is acknowledged by the broker before the
// request's first destructive write.
func (il *intentLog) Put(ctx context.Context, in *handlers.Intent) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode intent: %w", err)
	}
	if err := il.write(ctx, kafka.Message{Key: []byte(in.Name), Value: b}); err != nil {
		return err
	}
	il.mu.Lock()
	il.intents[in.Name] = in
	il.mu.Unlock()
	return nil
}

// write writes m to the intent topic, to the partition kafka.Hash picks for its key.
func (il *intentLog) write(ctx context.Context, m kafka.Message) error {
	m.Topic, m.Partition = il.topic, -1
	if errs := il.producer.Produce(ctx, []kafka.Message{m}); errs != nil {
		return errs[0]
	}
	return nil
}

// writeFor writes m to the partition of connector name's intent (the one kafka.Hash picks for
// the key name), so that all of a connector's intent and claim records share one order.
func (il *intentLog) writeFor(ctx context.Context, name string, m kafka.Message) error {
	n := il.log.Partitions()
	if n == 0 {
		return errNoPartitions
	}
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	m.Topic, m.Partition = il.topic, (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(name)}, parts...)
	if errs := il.producer.Produce(ctx, []kafka.Message{m}); errs != nil {
		return errs[0]
	}
	return nil
}

// Delete implements handlers.IntentStore.
func (il *intentLog) Delete(ctx context.Context, name string) error {
	if err := il.write(ctx, kafka.Message{Key: []byte(name)}); err != nil {
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

// finish removes the intent of a request whose result is out.
func (il *intentLog) finish(ctx context.Context, name, source, id string) error {
	in, ok := il.Get(name)
	if !ok || in.RequestID != id || in.RequestSource != source {
		return nil
	}
	return il.deleteRetrying(ctx, name)
}

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
