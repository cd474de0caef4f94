package kafkaio

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// Producer sends the small writes of concurrent callers together, the way Kafka's own producer
// does with linger.ms=0: each partition leader has one Produce request in flight at a time,
// and the writes that arrive meanwhile, whatever their topics and partitions, go together in
// the next one. An idle producer sends a write at once; under load, a hundred requests'
// intents, config records and results cost a few Produce requests instead of hundreds. A
// write returns once the broker acknowledged its own records (acks=all).
//
// One request in flight per leader also keeps every partition's writes in the order they
// were made.
type Producer struct {
	client  *kafka.Client
	leaders *leaderCache
	// own are the connections the queued writes' requests go on (produce_conn.go).
	own *ownConns

	mu     sync.Mutex
	queues map[int]*leaderQueue // by leader broker ID
	// held counts the holds (Hold) not released: while it is above 0, no sender starts or
	// takes a batch, so that the writes queued meanwhile go together.
	held int
}

type leaderQueue struct {
	items []*produceItem
	busy  bool // a sender goroutine runs for the queue
	// waiters are the awaited writes (EnqueueAwaited) that found the queue busy: the goroutine
	// that sends it hands the queue over to one of them (handOver) instead of sending their
	// records itself, so that the waiter sends them and reads their answer on its own goroutine.
	waiters []*Pending
}

// produceItem is one caller's records for one partition.
type produceItem struct {
	topic     string
	partition int32
	leader    int // the partition leader's broker ID when routed
	recs      []itemRecord
	// one holds recs while the item has one record (most items).
	one [1]itemRecord
	// probe: the item is a Write probe of its topic (partition -1, no records; EnqueueProbes):
	// its err is the broker's answer, nil when the Write is allowed.
	probe bool
	size  int
	// deadline, when not zero, is the end of the item's write (Write's ctx deadline): it is
	// not sent from then on, and the Produce request that carries it asks the broker to answer
	// before it (boundedBatch, produceTimeout).
	deadline time.Time

	err error
	// base is the offset of the item's first record once acknowledged without err.
	base int64
	// answered is set once err and base are final; group counts the item until then.
	answered atomic.Bool
	group    *answerGroup
}

// itemRecord is a queued record: what a Produce request carries of a kafka.Message (a third
// of its size: every item holds one, and a busy agent's items were a tenth of its allocated
// bytes).
type itemRecord struct {
	Key, Value []byte
	Headers    []kafka.Header
}

// answerGroup is closed once every item of one write (or of one set of probes) is answered:
// the items of a write share it, instead of a channel each (a request's ten offsets on as many
// partitions were ten).
type answerGroup struct {
	left atomic.Int32
	done chan struct{}
}

// join counts it in g, making g's channel for its first item.
func (g *answerGroup) join(it *produceItem) {
	if g.done == nil {
		g.done = make(chan struct{})
	}
	it.group = g
	g.left.Add(1)
}

// finish marks it answered (its err and base set before) and closes its group's channel when
// it was the group's last.
func (it *produceItem) finish() {
	it.answered.Store(true)
	if it.group.left.Add(-1) == 0 {
		close(it.group.done)
	}
}

// Limits of one Produce request, shared by queued (Produce) and ordered (Write) writes.
const (
	// batchBytes bounds the records of one partition in one request (brokers refuse a batch
	// above the topic's max.message.bytes, 1 MiB by default); a single larger write goes
	// alone. batchRecords bounds their count. requestBytes bounds a whole request.
	batchBytes   = 512 << 10
	batchRecords = 4_000
	requestBytes = 4 << 20
	// produceInFlight bounds the Produce requests of one write in flight to one leader at
	// once: one on the wire while the next is encoded. More buy no speed on a few cores, and
	// each holds a buffer of up to requestBytes.
	produceInFlight = 2
	// produceTimeoutMs is how long the broker may wait for the in-sync replicas (acks=all);
	// roundTripTimeout bounds a whole round trip, a little longer.
	produceTimeoutMs = 30_000
	roundTripTimeout = 35 * time.Second
	// answerMargin is how much earlier than its write's deadline a bounded Produce request's
	// own timeout ends (at most; a quarter of the time left when that is less), so that the
	// broker's answer, sent when the timeout ends, reaches the writer before the deadline.
	answerMargin = time.Second
)

// produceTimeout is the timeout_ms of a Produce request whose answer is wanted by answerBy
// (zero: no such bound): produceTimeoutMs, or, when answerBy is sooner, the time left before it
// less answerMargin. Kafka's broker waits for the in-sync replicas (acks=all) no longer than
// that and then answers: a write bounded by a deadline is settled, appended or not, before it.
func produceTimeout(answerBy time.Time) int32 {
	if answerBy.IsZero() {
		return produceTimeoutMs
	}
	left := time.Until(answerBy)
	left -= min(answerMargin, left/4)
	return int32(max(1, min(produceTimeoutMs, left.Milliseconds())))
}

// NewProducer returns a Producer on the brokers and transport of opts. It never dials.
func NewProducer(opts Options) *Producer {
	cl := NewClient(opts)
	return &Producer{client: cl, leaders: newLeaderCache(cl), own: newOwnConns(cl), queues: map[int]*leaderQueue{}}
}

// Produce writes msgs (Topic, Key, Value and Headers), each to its Partition or, when that is
// negative, to the partition kafka-go's Hash balancer picks for its key (FNV-1a, as a
// kafka.Writer with Balancer &kafka.Hash{} does). It returns one error per message, nil when
// every message was acknowledged; a message refused for lack of an ACL gets an *AuthzError
// naming Write on its topic. A message whose context ends before its acknowledgement gets
// ctx.Err(); it may still be written.
func (p *Producer) Produce(ctx context.Context, msgs []kafka.Message) []error {
	errs, _ := p.produce(ctx, msgs)
	return errs
}

// Pending is a write queued by Enqueue, not yet known to be acknowledged.
type Pending struct {
	p     *Producer
	errs  []error
	owner []*produceItem
	order []*produceItem
	// at[i] is msgs[i]'s index among the records of its item.
	at []int
	// one holds the slices of a write of one message (a claim, an intent, a result): most
	// writes are, and they then cost no slices of their own.
	one struct {
		errs  [1]error
		owner [1]*produceItem
		order [1]*produceItem
		at    [1]int
	}
	// send are the idle queues of the write's items that its Wait sends itself (sendInline).
	send []*leaderQueue
	// awaited: Wait returns once the broker answered, whatever its ctx does (EnqueueAwaited).
	awaited bool
	// takeover receives the busy queues of the write handed over to its Wait (handOver): made,
	// with room for every queue, when the write found one busy.
	takeover chan *leaderQueue
	// group is closed once every item is answered.
	group answerGroup
}

// Enqueue queues msgs as Produce does and returns without waiting for the broker: each
// message has its place in its partition's queue when Enqueue returns, so a write queued
// later (by any caller) lands after it in the partition, whenever either is acknowledged. A
// caller that must not wait for a write, but must keep it before the writes that follow (a
// tombstone that must never remove a newer record of its key), enqueues it and waits
// elsewhere. ctx bounds the partition-leader lookup only. A queued write is sent even if
// nobody waits for it.
func (p *Producer) Enqueue(ctx context.Context, msgs []kafka.Message) *Pending {
	return p.enqueueBy(ctx, msgs, time.Time{}, false)
}

// EnqueueAwaited is Enqueue for a caller that waits for the write at once (Wait) and needs
// its outcome, as Write's callers do: when the partitions' queues are idle, its Wait sends them
// on the caller's goroutine (no sender goroutine is started and handed over to), as it does
// when a queue that was busy is handed to it with nothing but its records left (handOver), and
// it then returns only once the broker answered, whatever ctx does meanwhile (a write on the
// wire is never abandoned half-known). ctx's deadline bounds the write: its records are not
// sent past it, and the broker is asked to answer before it (produceTimeout). ctx also bounds
// the partition-leader lookup.
func (p *Producer) EnqueueAwaited(ctx context.Context, msgs []kafka.Message) *Pending {
	deadline, _ := ctx.Deadline()
	w := p.enqueueBy(ctx, msgs, deadline, true)
	w.awaited = true
	return w
}

// enqueueBy is Enqueue for a write that ends at deadline (zero: never): its items are not sent
// from then on, and the Produce requests that carry them ask the broker to answer before it.
// With inline, the write's caller waits for it at once, on a context that cannot end (so
// that the round trips it makes are not cut short): the idle queues of its items are then
// sent by its Wait, on the caller's goroutine, instead of a sender goroutine started for
// them (sendInline).
func (p *Producer) enqueueBy(ctx context.Context, msgs []kafka.Message, deadline time.Time, inline bool) *Pending {
	w := &Pending{p: p}
	if len(msgs) == 1 {
		w.errs, w.owner, w.order, w.at = w.one.errs[:], w.one.owner[:], w.one.order[:0], w.one.at[:]
	} else {
		// owner and order (at most one item per message) share an allocation.
		n := len(msgs)
		items := make([]*produceItem, 2*n)
		w.errs, w.owner, w.order, w.at = make([]error, n), items[:n:n], items[n:n:2*n], make([]int, n)
	}
	w.owner, w.order, w.at = p.route(ctx, msgs, w.owner, w.order, w.at, &w.group, func(i int, err error) { w.errs[i] = err })
	for _, it := range w.order {
		it.deadline = deadline
	}
	var waiter *Pending
	if inline {
		waiter = w
	}
	w.send = p.enqueue(w.order, inline, waiter)
	return w
}

// Wait waits until every message of the write is acknowledged, or refused, or ctx ends (a
// write queued by EnqueueAwaited: until the broker answered). It returns one error per message,
// nil when every message was acknowledged; a message whose context ended first gets ctx.Err()
// (it may still be written).
func (w *Pending) Wait(ctx context.Context) []error {
	for _, q := range w.send {
		w.p.sendInline(q, w.order)
	}
	w.send = nil
	ended := ctx.Done()
	if w.awaited {
		ended = nil
	}
	if len(w.order) > 0 {
	wait:
		for {
			select {
			case <-w.group.done:
				break wait
			case q := <-w.takeover:
				w.p.sendInline(q, w.order)
			case <-ended:
				break wait
			}
		}
	}
	var errs []error // allocated at the first failure
	fail := func(i int, err error) {
		if errs == nil {
			errs = slices.Clone(w.errs)
		}
		errs[i] = err
	}
	for i, it := range w.owner {
		if it == nil {
			if w.errs[i] != nil {
				fail(i, w.errs[i])
			}
			continue
		}
		if !it.answered.Load() {
			fail(i, ctx.Err())
		} else if it.err != nil {
			w.p.leaders.forget(it.topic)
			fail(i, refusal(w.p.client, fmt.Errorf("write to topic %q: %w", it.topic, it.err), OpWrite, ResourceTopic, it.topic))
		}
	}
	return errs
}

// Partition returns the partition of message i.
func (w *Pending) Partition(i int) int {
	if w.owner[i] == nil {
		return -1
	}
	return int(w.owner[i].partition)
}

// Offset returns the offset of message i once Wait returned nil for it.
func (w *Pending) Offset(i int) int64 { return w.owner[i].base + int64(w.at[i]) }

// produce is Produce that also returns each message's item (nil for those that failed before
// being queued); an item acknowledged without error holds the offset of its first record.
func (p *Producer) produce(ctx context.Context, msgs []kafka.Message) ([]error, []*produceItem) {
	w := p.Enqueue(ctx, msgs)
	return w.Wait(ctx), w.owner
}

// produceBy is produce for a write that ends at deadline (zero: never): its messages are not
// sent from then on, and their Produce requests ask the broker to answer before it. A message
// sent before it is waited for until the broker answers (or the round trip fails): its outcome
// is then known, and a broker that answers late has appended it before it answers, so what
// follows (a rollback) sees it.
func (p *Producer) produceBy(ctx context.Context, msgs []kafka.Message, deadline time.Time) ([]error, []*produceItem) {
	w := p.enqueueBy(ctx, msgs, deadline, ctx.Done() == nil)
	return w.Wait(ctx), w.owner
}

// route groups msgs into one item per partition: owner[i] is msgs[i]'s item (nil when fail
// was told why it cannot be written) and at[i] its index among the item's records, order the
// items in first-seen order; every item joins group. owner and at, when not nil, have room for one entry per message
// and order for one per item; they are used instead of new slices.
func (p *Producer) route(ctx context.Context, msgs []kafka.Message, owner, order []*produceItem, at []int, group *answerGroup, fail func(int, error)) ([]*produceItem, []*produceItem, []int) {
	// A queued write is a few records of a few topics and partitions: their leaders and items
	// are looked up in short lists, not maps (three maps a call were most of a small write's
	// allocations).
	type topicLeaders struct {
		topic   string
		leaders []int
		err     error
	}
	var tbuf [2]topicLeaders
	topics := tbuf[:0]
	var slab []produceItem
	if owner == nil {
		owner = make([]*produceItem, len(msgs))
		at = make([]int, len(msgs))
	}
	if order == nil && len(msgs) > 1 {
		order = make([]*produceItem, 0, len(msgs)) // at most one item per message
	}
	for i := range msgs {
		m := &msgs[i]
		k := slices.IndexFunc(topics, func(t topicLeaders) bool { return t.topic == m.Topic })
		if k < 0 {
			t := topicLeaders{topic: m.Topic}
			t.leaders, t.err = p.leaders.get(ctx, m.Topic)
			k = len(topics)
			topics = append(topics, t)
		}
		ls := topics[k].leaders
		if err := topics[k].err; err != nil {
			fail(i, refusal(p.client, fmt.Errorf("write to topic %q: %w", m.Topic, err), OpWrite, ResourceTopic, m.Topic))
			continue
		}
		part := m.Partition
		if part < 0 && m.Key == nil {
			part = 0 // kafka.Hash's round robin's first pick
		} else if part < 0 {
			part = HashPartition(m.Key, len(ls))
		}
		if part >= len(ls) {
			fail(i, fmt.Errorf("write to topic %q: partition %d of %d", m.Topic, part, len(ls)))
			continue
		}
		var it *produceItem
		for _, o := range order {
			if o.partition == int32(part) && o.topic == m.Topic {
				it = o
				break
			}
		}
		if it == nil {
			if slab == nil && len(msgs) > 1 {
				// The items of a write of several messages come from one allocation: it has
				// no more items than messages, so the slab never moves.
				slab = make([]produceItem, 0, len(msgs))
			}
			if slab != nil {
				slab = append(slab, produceItem{})
				it = &slab[len(slab)-1]
			} else {
				it = &produceItem{}
			}
			it.topic, it.partition, it.leader = m.Topic, int32(part), ls[part]
			group.join(it)
			it.recs = it.one[:0]
			order = append(order, it)
		}
		at[i] = len(it.recs)
		it.recs = append(it.recs, itemRecord{Key: m.Key, Value: m.Value, Headers: m.Headers})
		it.size += len(m.Key) + len(m.Value) + 24
		for _, h := range m.Headers {
			it.size += len(h.Key) + len(h.Value) + 8
		}
		owner[i] = it
	}
	return owner, order, at
}

// HashPartition is the partition a new kafka.Hash balances a record of key to among n
// partitions: Sarama's hashPartitioner (FNV-1a of the key, as an int32, modulo n, made
// positive), computed without kafka.Hash's list of the partitions, pooled hasher and (for a
// string) key copy. A nil key, which kafka.Hash sends round robin, is the caller's to place
// (its first pick is partition 0). TestHashPartitionMatchesKafkaHash holds it to kafka.Hash.
func HashPartition[K ~string | ~[]byte](key K, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	p := int32(h) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}

// enqueue adds items (each to the queue of its partition's leader) and starts the senders of
// idle queues, or, with inline, returns those queues for the caller to send (sendInline). All
// of a call's items are queued at once, so that a sender started by the first cannot take it
// alone into a Produce of its own.
func (p *Producer) enqueue(items []*produceItem, inline bool, waiter *Pending) (send []*leaderQueue) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var start []*leaderQueue
	for _, it := range items {
		q := p.queues[it.leader]
		if q == nil {
			q = &leaderQueue{}
			p.queues[it.leader] = q
		}
		q.items = append(q.items, it)
		if !q.busy && p.held == 0 {
			q.busy = true
			if inline {
				send = append(send, q)
			} else {
				start = append(start, q)
			}
		} else if waiter != nil && !slices.Contains(q.waiters, waiter) {
			if waiter.takeover == nil {
				waiter.takeover = make(chan *leaderQueue, len(items))
			}
			q.waiters = append(q.waiters, waiter)
		}
	}
	for _, q := range start {
		go p.send(q)
	}
	return send
}

// sendInline is send on the caller's goroutine, for a queue the caller found idle when it
// queued mine, or was handed (handOver), which it waits for: it sends q's items, as many as fit
// in one request at a time (others' queued before or meanwhile included), until mine are
// answered, and then hands the rest to the write waiting for them, if it is theirs alone, or
// to a sender goroutine. A write of one caller at a time (the agent's request path, one request
// at a time) thus costs no goroutine and no hand-over to one and back.
func (p *Producer) sendInline(q *leaderQueue, mine []*produceItem) {
	for {
		p.mu.Lock()
		if p.held > 0 {
			q.busy = false // the last release starts it again
			p.mu.Unlock()
			return
		}
		if answered(mine, q, p.queues) {
			if len(q.items) == 0 {
				q.busy, q.waiters = false, nil
			} else if !p.handOver(q) {
				go p.send(q)
			}
			p.mu.Unlock()
			return
		}
		batch := takeBatch(q)
		if len(batch) == 0 {
			q.busy, q.waiters = false, nil
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.roundTrip(batch)
	}
}

// answered reports whether every item of items queued on q (queues: by leader) is answered.
func answered(items []*produceItem, q *leaderQueue, queues map[int]*leaderQueue) bool {
	for _, it := range items {
		if queues[it.leader] != q {
			continue
		}
		if !it.answered.Load() {
			return false
		}
	}
	return true
}

// Hold keeps the producer from sending until release is called: the writes queued meanwhile
// (by any caller) go in the same Produce requests. A caller that queues several writes it
// will wait for together (a request's intent and its Write probes) holds the producer
// around them, so that the first does not leave alone in a request of its own while the
// second is still being queued. Holds last microseconds; release must be called once.
func (p *Producer) Hold() (release func()) {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(p.release) }
}

// release ends one hold; the last one starts the senders of the queues left waiting.
func (p *Producer) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held--; p.held > 0 {
		return
	}
	for _, q := range p.queues {
		if !q.busy && len(q.items) > 0 {
			q.busy = true
			go p.send(q)
		}
	}
}

// handOver hands busy q to the write waiting on it (q.waiters) when q's items are that write's
// alone: its Wait sends them from then on, on its own goroutine (sendInline), and goes on
// from their answer without a wake-up. (A write that found the queue busy behind another's
// round trip, one request's claim behind the previous request's result, is the common case.)
// With other items queued, the sender keeps the queue: a hand-over between every two batches
// would wait for the waiter's goroutine to be scheduled, each time. p.mu is held; the waiters
// whose records were sent are dropped.
func (p *Producer) handOver(q *leaderQueue) bool {
	for len(q.waiters) > 0 && answered(q.waiters[0].order, q, p.queues) {
		q.waiters[0] = nil
		q.waiters = q.waiters[1:]
	}
	if len(q.waiters) == 0 || len(q.items) == 0 {
		q.waiters = nil
		return false
	}
	w := q.waiters[0]
	for _, it := range q.items {
		if it.group != &w.group {
			return false
		}
	}
	select {
	case w.takeover <- q:
		q.waiters[0] = nil
		q.waiters = q.waiters[1:]
		return true
	default: // no room (it cannot happen: one slot per queue); the caller sends q
		return false
	}
}

// send sends q's items, as many as fit in one request at a time, until q is empty.
func (p *Producer) send(q *leaderQueue) {
	for {
		p.mu.Lock()
		if p.held > 0 {
			q.busy = false // the last release starts it again
			p.mu.Unlock()
			return
		}
		if len(q.items) > 0 && p.handOver(q) {
			p.mu.Unlock()
			return
		}
		batch := takeBatch(q)
		if len(batch) == 0 {
			q.busy, q.waiters = false, nil
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.roundTrip(batch)
	}
}

// takeBatch removes from q the longest prefix of its items that fits in one request: no more
// than requestBytes in all, and no partition's merged records above
// batchBytes (an item larger than that goes alone). It always takes at least one.
func takeBatch(q *leaderQueue) []*produceItem {
	sizes := map[topicPartition]int{}
	total, n := 0, 0
	for _, it := range q.items {
		k := topicPartition{it.topic, it.partition}
		s, seen := sizes[k]
		if n > 0 && (total+it.size > requestBytes || (seen && s+it.size > batchBytes)) {
			break
		}
		sizes[k] = s + it.size
		total += it.size
		n++
	}
	batch := q.items[:n:n]
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	return batch
}

// roundTrip sends batch in one Produce request and completes its items.
func (p *Producer) roundTrip(batch []*produceItem) {
	answerBy, batch := boundedBatch(batch, time.Now())
	if len(batch) == 0 {
		return
	}
	var parts []partitionRecords
	at := map[topicPartition]int{}
	for _, it := range batch {
		k := topicPartition{it.topic, it.partition}
		i, ok := at[k]
		if !ok {
			i = len(parts)
			at[k] = i
			parts = append(parts, partitionRecords{topicPartition: k, probe: it.probe})
		}
		parts[i].items = append(parts[i].items, it)
		parts[i].size += it.size
	}
	errs, bases := p.produceOnce(context.Background(), answerBy, parts, nil, batch[0].leader)
	for i, pr := range parts {
		if errs[i] != nil && len(pr.items) > 1 && !pr.probe && refusesRecords(errs[i]) {
			p.sendAlone(answerBy, pr)
			continue
		}
		next := bases[i]
		for _, it := range pr.items {
			it.err, it.base = errs[i], next
			next += int64(len(it.recs))
			it.finish()
		}
	}
}

// sendAlone sends the items of a partition that the broker refused as a whole, one item per
// Produce request and in their order, so that one caller's bad records (too large together
// with the others, invalid, not authorised) fail that caller only.
func (p *Producer) sendAlone(answerBy time.Time, pr partitionRecords) {
	for _, it := range pr.items {
		alone := []partitionRecords{{topicPartition: pr.topicPartition, items: []*produceItem{it}, size: it.size}}
		errs, bases := p.produceOnce(context.Background(), answerBy, alone, nil, it.leader)
		it.err, it.base = errs[0], bases[0]
		it.finish()
	}
}

// boundedBatch completes, unsent, the items of batch whose deadline has passed at now (they
// are known not written: no write begins past its deadline), and returns the others with the
// time by which their Produce request asks the broker to answer: the earliest deadline among
// them, zero for none (items without a deadline sent with bounded ones get the earlier answer
// too).
func boundedBatch(batch []*produceItem, now time.Time) (answerBy time.Time, live []*produceItem) {
	live = batch[:0:0]
	for _, it := range batch {
		if !it.deadline.IsZero() && !now.Before(it.deadline) {
			it.err = notSent(fmt.Errorf("not sent: its deadline passed: %w", context.DeadlineExceeded))
			it.finish()
			continue
		}
		if !it.deadline.IsZero() && (answerBy.IsZero() || it.deadline.Before(answerBy)) {
			answerBy = it.deadline
		}
		live = append(live, it)
	}
	return answerBy, live
}

// refusesRecords reports whether a partition's error is the broker refusing what was sent
// (as opposed to a transient condition, which the callers retry as a whole).
func refusesRecords(err error) bool {
	reason, _ := Classify(err)
	return reason == ReasonPermanent
}
