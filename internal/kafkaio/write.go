package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Record is one record to write. A nil Value is a tombstone. Partition < 0 asks the writer's
// caller to choose the partition (offsetstore computes Kafka's default partitioner).
type Record struct {
	Key, Value []byte
	Partition  int
	// Headers are the record's headers (nil for most records; offsetstore marks the config
	// records a request writes with the request's identity).
	Headers []kafka.Header
	// Decoded, when not nil, is what the record's bytes decode to for the view that reads its
	// topic: a Log hands it to its apply as the message's WriterData when it applies the
	// record from the written bytes (Written), so that the view need not parse what its owner
	// just encoded. Records read back from the topic have none.
	Decoded any
}

// recordSize approximates a record's size in a produce request.
func recordSize(r Record) int {
	n := len(r.Key) + len(r.Value) + 24
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 4
	}
	return n
}

// WriteError reports a Write that failed part way. Records of one partition are sent in order,
// but partitions are independent, so the acknowledged records need not be a prefix of the call.
type WriteError struct {
	// Written is how many records were acknowledged by the broker.
	Written int
	// Failed holds the indexes (into the records passed to Write), ascending, of the records
	// that were not acknowledged.
	Failed []int
	// NotWritten holds those of Failed, ascending, known not to be in the topic: never sent,
	// or refused by the broker before it appended them (refusedBeforeAppend). The others of
	// Failed may or may not be in the topic (a timeout, a lost connection). A WriteError built
	// without it says that every failed record may be there.
	NotWritten []int
	// Err is the first cause.
	Err error
}

func (e *WriteError) Error() string {
	failed, notWritten := len(e.Failed), len(e.NotWritten)
	what := fmt.Sprintf("%d of %d records written", e.Written, e.Written+failed)
	if notWritten > 0 {
		what += fmt.Sprintf(", %d not (refused or not sent)", notWritten)
	}
	if failed > notWritten {
		what += fmt.Sprintf(", %d unconfirmed (they may be in the topic)", failed-notWritten)
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// MayHaveWritten reports whether a write that returned err may have left any of its records
// in the topic, or a group commit (CommitGroupOffsets) any of its offsets in the group: false
// only when err is a *WriteError with nothing acknowledged and every failed record known not
// written, or a *CommitError with no partition accepted and every refusal one answered before
// the commit (refusedBeforeCommit). A caller that undoes a failed write skips the undo when
// it is false: there is nothing to undo, and an undo that failed would report a leftover that
// is not there.
func MayHaveWritten(err error) bool {
	if err == nil {
		// Every write that succeeded landed; said before the targets of errors.As below are
		// declared, since they escape (two allocations per call, most calls being successes).
		return true
	}
	var we *WriteError
	if errors.As(err, &we) {
		return we.Written > 0 || len(we.NotWritten) < len(we.Failed)
	}
	var ce *CommitError
	if errors.As(err, &ce) {
		return !ce.notCommitted()
	}
	return true
}

// notSentError is the error of a record that was never sent (its partition's leader unknown,
// its partition out of range, the write cut off before its turn): it is not in the topic.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// notSent marks err as the error of records that were never sent.
func notSent(err error) error {
	if err == nil {
		return nil
	}
	return &notSentError{err}
}

// refusedBeforeAppend are the produce errors a broker answers before appending anything
// (Kafka checks them before the log append: the leadership, the ACLs, the records' validity,
// min.insync.replicas). REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND come after the
// append; UNKNOWN_SERVER_ERROR and KAFKA_STORAGE_ERROR say nothing of it; they are not here.
var refusedBeforeAppend = []kafka.Error{
	kafka.InvalidMessage, kafka.UnknownTopicOrPartition, kafka.InvalidMessageSize, kafka.LeaderNotAvailable,
	kafka.NotLeaderForPartition, kafka.MessageSizeTooLarge, kafka.InvalidTopic, kafka.RecordListTooLarge,
	kafka.NotEnoughReplicas, kafka.InvalidRequiredAcks, kafka.TopicAuthorizationFailed,
	kafka.ClusterAuthorizationFailed, kafka.InvalidTimestamp, kafka.UnsupportedForMessageFormat,
	kafka.PolicyViolation, kafka.UnsupportedCompressionType, kafka.InvalidRecord,
}

// notInTopic reports whether a record that failed with err is known not to be in the topic.
func notInTopic(err error) bool {
	var ns *notSentError
	if errors.As(err, &ns) {
		return true
	}
	var kerr kafka.Error
	return errors.As(err, &kerr) && slices.Contains(refusedBeforeAppend, kerr)
}

// SmallWrite is the size up to which Write queues its records with those of concurrent
// callers (Produce); larger writes go in Produce requests of their own.
const SmallWrite = 64

// Acked is one run of a write's records that the broker acknowledged: for Write, recs[Idx[k]]
// is at offset Base+k of Partition; for WriteEncoded, Batch is the record batch acknowledged
// (from its baseOffset field on, which holds 0: its records are at Base on) and Idx is nil.
type Acked struct {
	Partition int32
	Base      int64
	Idx       []int
	Batch     []byte
}

// Leaders returns the leader broker ID of every partition of topic, indexed by partition;
// the answer is reused for a moment (see leaderCache). The slice must not be changed. A
// refusal is an *AuthzError naming Write on topic, what the leaders are looked up for.
func (p *Producer) Leaders(ctx context.Context, topic string) ([]int, error) {
	leaders, err := p.leaders.get(ctx, topic)
	return leaders, refusal(p.client, err, OpWrite, ResourceTopic, topic)
}

// writeRefusal words the refusal in err, the result of a write to topic, as an *AuthzError
// naming Write on topic: the cause of a *WriteError, which stays (MayHaveWritten reads it).
func (p *Producer) writeRefusal(topic string, err error) error {
	if err == nil {
		return nil // before the target of errors.As, which escapes, is declared
	}
	var we *WriteError
	if errors.As(err, &we) {
		we.Err = refusal(p.client, we.Err, OpWrite, ResourceTopic, topic)
		return err
	}
	return refusal(p.client, err, OpWrite, ResourceTopic, topic)
}

// Write writes recs to topic, recs[i] to partition parts[i], with acks=all, in order per
// partition. It returns once every record is acknowledged. On failure it returns a
// *WriteError saying which records were acknowledged and which are known not written, so
// callers can clean up precisely.
// Cancelling ctx stops Write from sending further records; records already sent are waited for.
// ctx's deadline bounds the write: no record is sent from then on (those not sent are
// NotWritten), and its Produce requests carry a timeout_ms that ends before it (produceTimeout:
// a broker answers them by then). A record sent is waited for until the broker answers, even
// past the deadline: a broker that holds a request longer has appended its records, if at all,
// before it answers, and the caller's rollback must see them.
//
// Up to smallWrite records go through Produce, together with what concurrent callers write
// meanwhile. Larger writes are sent leader by leader: the next batch of every partition not in
// flight, packed into requests of at most requestBytes, produceInFlight of them at once, so
// that ten offsets on ten partitions are one round trip, not ten, and a partition has one
// request in flight at a time (Connect's max.in.flight=1 producer; leaderRounds).
//
// acked, when not nil, is told of every acknowledged run of records with its offsets, before
// Write returns, possibly from several goroutines at once.
//
// A refusal for lack of an ACL is a *WriteError whose cause is an *AuthzError naming Write on
// topic.
func (p *Producer) Write(ctx context.Context, topic string, recs []Record, parts []int32, acked func(Acked)) error {
	return p.writeRefusal(topic, p.write(ctx, topic, recs, parts, acked))
}

func (p *Producer) write(ctx context.Context, topic string, recs []Record, parts []int32, acked func(Acked)) error {
	if len(recs) == 0 {
		return nil
	}
	if acked == nil {
		acked = func(Acked) {}
	}
	if len(recs) > SmallWrite {
		return p.writeRounds(ctx, topic, recs, parts, acked)
	}
	msgs := make([]kafka.Message, len(recs))
	for i := range recs {
		msgs[i] = kafka.Message{Topic: topic, Partition: int(parts[i]), Key: recs[i].Key, Value: recs[i].Value, Headers: recs[i].Headers}
	}
	// WithoutCancel: once queued, the records are sent whatever ctx does, and waited for;
	// returning early would lose track of which were acknowledged. ctx's deadline still bounds
	// them: none is sent from then on, and the broker is asked to answer before it (produceBy).
	deadline, _ := ctx.Deadline()
	errs, owner := p.produceBy(context.WithoutCancel(ctx), msgs, deadline)
	reportItems(msgs, errs, owner, acked)
	if errs == nil {
		return nil
	}
	var failed, notWritten []int
	var first error
	for i, e := range errs {
		if e != nil {
			failed = append(failed, i)
			if owner[i] == nil || notInTopic(e) {
				notWritten = append(notWritten, i)
			}
			first = cmpErr(first, e)
		}
	}
	return &WriteError{Written: len(recs) - len(failed), Failed: failed, NotWritten: notWritten, Err: first}
}

// reportItems tells acked of the acknowledged items of a produce call: msgs[i] went in
// owner[i], which keeps msgs' order within its partition. The items are told of in the order
// first met, their indexes cut from one slice: a write has a few items (at most smallWrite
// records), found in short lists rather than a map of a slice each.
func reportItems(msgs []kafka.Message, errs []error, owner []*produceItem, acked func(Acked)) {
	ok := func(i int) bool { return owner[i] != nil && (errs == nil || errs[i] == nil) }
	var first [16]*produceItem // most writes have fewer items: no allocation for their list
	order := first[:0]
	n := 0
	for i, it := range owner {
		if !ok(i) {
			continue
		}
		n++
		if len(order) == 0 || (order[len(order)-1] != it && !slices.Contains(order, it)) {
			order = append(order, it)
		}
	}
	idx := make([]int, 0, n)
	for _, it := range order {
		start := len(idx)
		for i, o := range owner {
			if o == it && ok(i) {
				idx = append(idx, i)
			}
		}
		// Capped: an append by the receiver never writes into the next item's indexes.
		acked(Acked{Partition: it.partition, Base: it.base, Idx: idx[start:len(idx):len(idx)]})
	}
}

// WriteEncoded is Write for records already encoded in batches (BatchEncoder), sent as they
// are, as Write sends many records (each request takes a partition's next batch),
// with the same guarantees. The topic must have enc.Partitions() partitions. The indexes of a
// *WriteError are the records' numbers in enc (Encoded.Records); acked is told of each
// acknowledged batch (Acked.Batch).
func (p *Producer) WriteEncoded(ctx context.Context, topic string, enc *Encoded, acked func(Acked)) error {
	return p.writeRefusal(topic, p.writeEncoded(ctx, topic, enc, acked))
}

func (p *Producer) writeEncoded(ctx context.Context, topic string, enc *Encoded, acked func(Acked)) error {
	if enc.Len() == 0 {
		return nil
	}
	if acked == nil {
		acked = func(Acked) {}
	}
	leaders, err := p.leaders.get(ctx, topic)
	if err == nil && len(leaders) != enc.Partitions() {
		err = fmt.Errorf("%d partitions, records encoded for %d", len(leaders), enc.Partitions())
	}
	if err != nil {
		all := indexes(0, enc.Len())
		return &WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	byLeader := map[int]map[int32]partQueue{}
	for part, bs := range enc.batches {
		if len(bs) == 0 {
			continue
		}
		l := leaders[part]
		if byLeader[l] == nil {
			byLeader[l] = map[int32]partQueue{}
		}
		byLeader[l][int32(part)] = partQueue{batches: bs}
	}
	return p.sendRounds(ctx, topic, nil, enc.Len(), byLeader, acked)
}

// writeRounds is Write for many records.
func (p *Producer) writeRounds(ctx context.Context, topic string, recs []Record, parts []int32, acked func(Acked)) error {
	all := indexes(0, len(recs))
	leaders, err := p.leaders.get(ctx, topic)
	if err != nil {
		return &WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: %w", topic, err)}
	}
	// Per leader, per partition: the indexes of its records, in order.
	byLeader := map[int]map[int32]partQueue{}
	for i, part := range parts {
		if int(part) >= len(leaders) {
			return &WriteError{Failed: all, NotWritten: all, Err: fmt.Errorf("write to topic %q: record %d: partition %d of %d", topic, i, part, len(leaders))}
		}
		l := leaders[part]
		if byLeader[l] == nil {
			byLeader[l] = map[int32]partQueue{}
		}
		q := byLeader[l][part]
		q.idx = append(q.idx, i)
		byLeader[l][part] = q
	}
	return p.sendRounds(ctx, topic, recs, len(recs), byLeader, acked)
}

// partQueue is what a large write has left to send to one partition: the indexes of its
// records (Write) or its encoded batches (WriteEncoded), in order.
type partQueue struct {
	idx     []int
	batches []encodedBatch
}

func (q partQueue) empty() bool { return len(q.idx) == 0 && len(q.batches) == 0 }

// numbers returns the numbers of the records left: their indexes in the call's records, or in
// the Encoded.
func (q partQueue) numbers() []int {
	if len(q.batches) == 0 {
		return q.idx
	}
	last := q.batches[len(q.batches)-1]
	return indexes(q.batches[0].first, last.first+last.n)
}

// count is the number of records of pr, a large write's part for one partition.
func (pr partitionRecords) count() int {
	if pr.encoded.buf != nil {
		return pr.encoded.n
	}
	return len(pr.idx)
}

// after returns what is left once pr, the queue's next part, was sent.
func (q partQueue) after(pr partitionRecords) partQueue {
	if pr.encoded.buf != nil {
		q.batches = q.batches[1:]
	} else {
		q.idx = q.idx[len(pr.idx):]
	}
	return q
}

// sendRounds sends the queues of byLeader (per leader, per partition), leader by leader in
// parallel, and returns a *WriteError naming the records (of n in all) not acknowledged.
func (p *Producer) sendRounds(ctx context.Context, topic string, recs []Record, n int, byLeader map[int]map[int32]partQueue, acked func(Acked)) error {
	var (
		mu                 sync.Mutex
		failed, notWritten []int
		first              error
	)
	fail := func(idx []int, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, idx...)
		if notInTopic(err) {
			notWritten = append(notWritten, idx...)
		}
		first = cmpErr(first, err)
	}
	var wg sync.WaitGroup
	bufs := &produceBufs{}
	for _, pending := range byLeader {
		wg.Go(func() { p.leaderRounds(ctx, topic, recs, pending, bufs, fail, acked) })
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	p.leaders.forget(topic)
	slices.Sort(failed)
	slices.Sort(notWritten)
	return &WriteError{
		Written:    n - len(failed),
		Failed:     failed,
		NotWritten: notWritten,
		Err:        fmt.Errorf("write to topic %q: %w", topic, first),
	}
}

// leaderRounds sends one leader's pending records (per partition, in order), up to
// produceInFlight requests at once. A partition has one batch in flight at a time, and its
// next one goes in the first request made after that batch's answer: requests are made as
// slots free up, each of the partitions not in flight, so that a partition answered early does
// not wait for the slowest request of the others (a round of every partition's next batch
// made each wait for the whole round before: one more request's time per round when the
// broker answers the requests of a round at different times, as a busy one does). A
// partition that fails stops there: its later records must not overtake the failed ones, and
// fail gets them all.
func (p *Producer) leaderRounds(ctx context.Context, topic string, recs []Record, pending map[int32]partQueue, bufs *produceBufs, fail func([]int, error), acked func(Acked)) {
	// A request sent is waited for past ctx's deadline (its broker is asked to answer before
	// it), not past its cancellation (a shutdown).
	answerBy, _ := ctx.Deadline()
	rt, stop := untilCanceled(ctx)
	defer stop()
	var mu sync.Mutex // guards pending and busy
	busy := map[int32]bool{}
	done := make(chan struct{}, produceInFlight)
	inFlight := 0
	for {
		for inFlight >= produceInFlight {
			<-done
			inFlight--
		}
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		parts := nextRequest(topic, recs, pending, busy)
		for _, pr := range parts {
			busy[pr.partition] = true
		}
		mu.Unlock()
		if len(parts) == 0 {
			if inFlight == 0 {
				return // every partition sent, or stopped by its failure
			}
			<-done // the partitions in flight are the only ones left
			inFlight--
			continue
		}
		inFlight++
		go func() {
			defer func() { done <- struct{}{} }()
			errs, bases := p.produceOnce(rt, answerBy, parts, bufs, -1)
			for i, pr := range parts {
				if errs[i] == nil {
					a := Acked{Partition: pr.partition, Base: bases[i], Idx: pr.idx}
					if pr.encoded.buf != nil {
						a.Batch = pr.encoded.batch()
					}
					acked(a)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for i, pr := range parts {
				q := pending[pr.partition]
				rest := q.after(pr)
				delete(busy, pr.partition)
				switch {
				case errs[i] != nil:
					// pr's records got the answer; the partition's later ones were
					// never sent.
					fail(q.numbers()[:pr.count()], errs[i])
					fail(rest.numbers(), notSent(errs[i]))
					delete(pending, pr.partition)
				case rest.empty():
					delete(pending, pr.partition)
				default:
					pending[pr.partition] = rest
				}
			}
		}()
	}
	// Stopped: what is in flight is waited for, and what is left was never sent.
	for ; inFlight > 0; inFlight-- {
		<-done
	}
	for _, q := range pending {
		fail(q.numbers(), notSent(ctx.Err()))
	}
}

// untilCanceled is a context that ends when ctx is canceled, not when its deadline passes.
func untilCanceled(ctx context.Context) (context.Context, func()) {
	rt, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return rt, func() { stop(); cancel() }
}

// nextRequest takes the next batch of pending partitions not busy (up to batchRecords records
// and batchBytes, or its next encoded batch), while they fit in one request of at most
// requestBytes (the first whatever its size).
func nextRequest(topic string, recs []Record, pending map[int32]partQueue, busy map[int32]bool) []partitionRecords {
	var cur []partitionRecords
	curSize := 0
	for part, q := range pending {
		if busy[part] {
			continue
		}
		pr := partitionRecords{topicPartition: topicPartition{topic, part}}
		if len(q.batches) > 0 {
			pr.encoded, pr.size = q.batches[0], len(q.batches[0].buf)
		} else {
			idx := q.idx
			end, size := 0, 0
			for end < len(idx) && end < batchRecords && (end == 0 || size+recordSize(recs[idx[end]]) <= batchBytes) {
				size += recordSize(recs[idx[end]])
				end++
			}
			pr.recs, pr.idx, pr.size = recs, idx[:end], size
		}
		if len(cur) > 0 && curSize+pr.size > requestBytes {
			break
		}
		cur = append(cur, pr)
		curSize += pr.size
	}
	return cur
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func indexes(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
