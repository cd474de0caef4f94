package kafkaio

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/race"
)

func startProducerCluster(t *testing.T, topics ...string) (*kfake.Cluster, []string, *Producer) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(3, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	return c, brokers, NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
}

// Concurrent writes to several topics and partitions travel together: fifty writes made while
// a request is in flight cost a handful of Produce requests, and each write returns once its
// own records are acknowledged.
func TestProducerBatchesConcurrentWrites(t *testing.T) {
	c, brokers, p := startProducerCluster(t, "a", "b")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))

	seen := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
	const writers = 50
	var wg sync.WaitGroup
	errs := make([][]error, writers)
	for i := range writers {
		wg.Go(func() {
			topic := []string{"a", "b"}[i%2]
			errs[i] = p.Produce(ctx, []kafka.Message{
				{Topic: topic, Partition: i % 3, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)},
				{Topic: topic, Partition: (i + 1) % 3, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "w%d", i)},
			})
		})
	}
	wg.Wait()
	for i, e := range errs {
		require.Nil(t, e, "writer %d", i)
	}
	require.Less(t, seen.Hits(), writers/2, "Produce requests for %d concurrent writes", writers)

	// Every record is there, in each partition in the order each writer wrote it.
	got := map[string][]string{}
	for _, topic := range []string{"a", "b"} {
		for part := range 3 {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: part, MaxWait: 50 * time.Millisecond})
			lag, err := r.ReadLag(ctx)
			require.NoError(t, err)
			for range lag {
				m, err := r.ReadMessage(ctx)
				require.NoError(t, err)
				got[string(m.Key)] = append(got[string(m.Key)], string(m.Value))
			}
			require.NoError(t, r.Close())
		}
	}
	for i := range writers {
		require.ElementsMatch(t, []string{fmt.Sprintf("v%d", i), fmt.Sprintf("w%d", i)}, got[fmt.Sprintf("k%d", i)])
	}
}

// A partition the broker refuses fails only the messages written to it.
func TestProducerPartitionErrors(t *testing.T) {
	c, _, p := startProducerCluster(t, "a", "b")
	ctx := testContext(t)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "b", Partitions: []int32{1}, Err: kerr.NotEnoughReplicas, Count: -1})
	errs := p.Produce(ctx, []kafka.Message{
		{Topic: "a", Partition: 1, Value: []byte("1")},
		{Topic: "b", Partition: 1, Value: []byte("2")},
		{Topic: "b", Partition: 2, Value: []byte("3")},
		{Topic: "b", Partition: 1, Value: []byte("4")},
		{Topic: "b", Partition: 3, Value: []byte("out of range")},
		{Topic: "missing", Partition: 0, Value: []byte("5")},
	})
	require.Len(t, errs, 6)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.NotEnoughReplicas)
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[3], kafka.NotEnoughReplicas)
	require.ErrorContains(t, errs[4], "partition 3 of 3")
	require.ErrorIs(t, errs[5], kafka.UnknownTopicOrPartition)
}

// Messages without a partition go where a kafka.Writer with the Hash balancer puts them, the
// way the agent's intents and results were written before: a compacted key keeps its partition.
func TestProducerHashPartition(t *testing.T) {
	_, brokers, p := startProducerCluster(t, "a", "b")
	ctx := testContext(t)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "a", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}
	defer w.Close()
	for i := range 12 {
		key := fmt.Appendf(nil, "connector-%d", i)
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Key: key, Value: []byte("writer")}))
		require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: -1, Key: key, Value: []byte("producer")}}))
	}
	for part := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "a", Partition: part, MaxWait: 50 * time.Millisecond})
		lag, err := r.ReadLag(ctx)
		require.NoError(t, err)
		require.Zero(t, lag%2)
		for range lag / 2 {
			a, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			b, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, string(a.Key), string(b.Key), "partition %d", part)
		}
		require.NoError(t, r.Close())
	}
}

// Two large writes to one partition are not merged into a batch above the broker's limit.
func TestProducerLargeWritesGoAlone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(1, "big"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": "1000000"}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	p := NewProducer(Options{Brokers: c.ListenAddrs()})
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "big", Partition: 0, Value: []byte("warm-up")}}))
	// Hold the first request so that the others queue behind it.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: 1, When: func(kmsg.Request) bool {
		time.Sleep(50 * time.Millisecond)
		return true
	}})
	var wg sync.WaitGroup
	errs := make([][]error, 3)
	for i := range errs {
		wg.Go(func() {
			errs[i] = p.Produce(context.Background(), []kafka.Message{{Topic: "big", Partition: 0, Value: bytes.Repeat([]byte{'x'}, 600_000)}})
		})
	}
	wg.Wait()
	for i, e := range errs {
		require.Nil(t, e, "write %d", i)
	}
}

// produceHasValue reports whether a Produce request carries value v in its records for
// topic/partition (Producer writes uncompressed batches, so the bytes are there as they are).
func produceHasValue(req kmsg.Request, topic string, partition int32, v string) bool {
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		return false
	}
	for _, rt := range pr.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic && rp.Partition == partition && bytes.Contains(rp.Records, []byte(v)) {
				return true
			}
		}
	}
	return false
}

// A Produce batch that mixes several writers' records and is refused with a non-retriable
// error (here INVALID_RECORD, for one writer's record) is sent again writer by writer: only
// the writer whose records the broker refuses fails; the others are acknowledged.
func TestProducerRetriesMixedBatchPerWriter(t *testing.T) {
	c, _, p := startProducerCluster(t, "m")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "m", Partition: 0, Value: []byte("warm-up")}}))

	// Hold the next Produce at the broker so that the writers below queue behind it and go
	// together in the one after.
	release := make(chan struct{})
	held := make(chan struct{})
	var once sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		once.Do(func() {
			close(held)
			c.SleepControl(func() { <-release })
		})
		return nil, nil, false
	})
	bad := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "m", Err: kerr.InvalidRecord, Count: -1,
		When: func(req kmsg.Request) bool { return produceHasValue(req, "m", 0, "bad") }})

	var wg sync.WaitGroup
	wg.Go(func() {
		require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "m", Partition: 0, Value: []byte("first")}}))
	})
	<-held
	const writers = 6
	errs := make([][]error, writers)
	for i := range writers {
		wg.Go(func() {
			v := fmt.Sprintf("good-%d", i)
			if i == 3 {
				v = "bad"
			}
			errs[i] = p.Produce(ctx, []kafka.Message{{Topic: "m", Partition: 0, Value: []byte(v)}})
		})
	}
	time.Sleep(200 * time.Millisecond) // the writers queue behind the held request
	close(release)
	wg.Wait()
	for i, e := range errs {
		if i == 3 {
			require.Len(t, e, 1)
			require.ErrorIs(t, e[0], kafka.InvalidRecord)
			continue
		}
		require.Nil(t, e, "writer %d failed with the batch of another", i)
	}
	require.GreaterOrEqual(t, bad.Hits(), 2, "the mixed batch was refused, then the bad writer alone")
}

// A write queued with Enqueue keeps its place in its partition: a write queued after it lands
// after it even when the first is still waiting behind a slow Produce request, and Wait gives
// each message's offset.
func TestProducerEnqueueKeepsOrder(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))
	// Hold the next Produce request, so that the writes below queue behind it.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: 1, When: func(kmsg.Request) bool {
		time.Sleep(50 * time.Millisecond)
		return true
	}})
	first := p.Enqueue(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("held")}})
	tomb := p.Enqueue(ctx, []kafka.Message{
		{Topic: "a", Partition: 1, Key: []byte("k"), Value: []byte("other partition")},
		{Topic: "a", Partition: 0, Key: []byte("k")},
		{Topic: "a", Partition: 0, Key: []byte("j")},
	})
	errs := p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Key: []byte("k"), Value: []byte("newer")}})
	require.Nil(t, errs)
	require.Nil(t, tomb.Wait(ctx))
	require.Nil(t, first.Wait(ctx))
	require.Equal(t, 0, tomb.Partition(1))
	require.Equal(t, 1, tomb.Partition(0))
	require.Equal(t, first.Offset(0)+1, tomb.Offset(1))
	require.Equal(t, tomb.Offset(1)+1, tomb.Offset(2))

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "a", Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	var got []string
	for range 5 {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err)
		got = append(got, fmt.Sprintf("%d %s=%s", m.Offset, m.Key, m.Value))
	}
	require.Equal(t, []string{"0 =warm-up", "1 =held", "2 k=", "3 j=", "4 k=newer"}, got)
}

// A write of several rounds of full Produce requests (whose buffers are reused from one
// request to the next) lands every record as written, in order, on every partition.
func TestProducerLargeWriteReusesBuffers(t *testing.T) {
	const partitions, perPartition = 8, 800 // 2 KB values: rounds of a ~3.6 MiB request and a small one
	_, brokers, p := func() (*kfake.Cluster, []string, *Producer) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(partitions, "large"))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c, c.ListenAddrs(), NewProducer(Options{Brokers: c.ListenAddrs()})
	}()
	ctx := testContext(t)
	filler := bytes.Repeat([]byte{'v'}, 2000)
	var recs []Record
	var parts []int32
	for i := range partitions * perPartition {
		recs = append(recs, Record{Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "%d:%s", i, filler), Partition: i % partitions})
		parts = append(parts, int32(i%partitions))
	}
	require.NoError(t, p.Write(ctx, "large", recs, parts, func(Acked) {}))
	cl := NewClient(Options{Brokers: brokers, Transport: testTransport(t)})
	for part := range partitions {
		var got []kafka.Message
		for offset := int64(0); offset < perPartition; {
			f, err := FetchPartition(ctx, cl, "large", part, offset, 1<<20, 10*time.Millisecond)
			require.NoError(t, err)
			got = append(got, f.Messages...)
			offset = f.Next
		}
		require.Len(t, got, perPartition)
		for k, m := range got {
			i := k*partitions + part
			require.Equal(t, string(recs[i].Key), string(m.Key), "partition %d offset %d", part, k)
			require.Equal(t, string(recs[i].Value), string(m.Value), "partition %d offset %d", part, k)
		}
	}
}

// Queuing a write of one record (a claim, an intent, a result: most of the agent's writes)
// costs its Pending, its item and the item's channel, and no slices.
func TestProducerQueuesOneRecordCheaply(t *testing.T) {
	_, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))
	msgs := []kafka.Message{{Topic: "a", Partition: 1, Key: []byte("k"), Value: []byte("v")}}
	queued := make([]*Pending, 0, 600)
	release := p.Hold() // nothing is sent while the writes are counted
	allocs := alloctest.Least(100, func() { queued = append(queued, p.Enqueue(ctx, msgs)) })
	release()
	for _, w := range queued {
		require.Nil(t, w.Wait(ctx))
	}
	require.LessOrEqual(t, allocs, 3.0, "allocations to queue a write of one record")
}

// Queuing a write of ten records for ten partitions (a request's offsets) costs its Pending,
// its slices, one allocation for all its items and one channel for all of them (closed once
// the last is answered): not an allocation per item.
func TestProducerQueuesManyRecordsItemsTogether(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(10, "a"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	p := NewProducer(Options{Brokers: c.ListenAddrs(), Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))
	leaders, err := p.Leaders(ctx, "a")
	require.NoError(t, err)
	msgs := make([]kafka.Message, 10)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: "a", Partition: i % len(leaders), Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
	}
	items := min(len(msgs), len(leaders))
	queued := make([]*Pending, 0, 600)
	release := p.Hold()
	allocs := alloctest.Least(100, func() { queued = append(queued, p.Enqueue(ctx, msgs)) })
	release()
	for _, w := range queued {
		require.Nil(t, w.Wait(ctx))
	}
	// The Pending, its errors, owners and order (one), indexes, the slab, and the items'
	// channel: 6 (7 with owners and order apart).
	t.Logf("%.0f allocations (%d items)", allocs, items)
	require.LessOrEqual(t, allocs, 6.0, "allocations to queue a write of %d records for %d partitions", len(msgs), items)
}

// A write queued by EnqueueAwaited is waited for until the broker answers, even when it waits
// behind another write and its context ends meanwhile: its outcome is known, as a Write's is.
func TestProducerAwaitedWriteOutlivesItsContext(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))
	inFlight, answer := make(chan struct{}), make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		close(inFlight)
		<-answer
		return nil, nil, false
	})
	first := p.Enqueue(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("first")}})
	<-inFlight // a sender goroutine has the queue
	wctx, cancel := context.WithCancel(ctx)
	awaited := p.EnqueueAwaited(wctx, []kafka.Message{{Topic: "a", Partition: 1, Value: []byte("second")}})
	done := make(chan []error, 1)
	go func() { done <- awaited.Wait(wctx) }()
	cancel()
	close(answer)
	require.Nil(t, <-done, "acknowledged, not given up with its context")
	require.Nil(t, first.Wait(ctx))
}

// A write made while the producer is idle is sent by the writer's own goroutine (its Wait):
// no sender goroutine runs for it, and the next write goes the same way.
func TestProducerIdleWriteSentByWriter(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.NoError(t, p.Write(ctx, "a", []Record{{Value: []byte("warm-up")}}, []int32{0}, nil))
	inFlight, answer := make(chan struct{}), make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		close(inFlight)
		<-answer
		return nil, nil, false
	})
	done := make(chan error, 1)
	go func() { done <- p.Write(ctx, "a", []Record{{Value: []byte("v")}}, []int32{1}, nil) }()
	<-inFlight
	stacks := make([]byte, 1<<20)
	stacks = stacks[:runtime.Stack(stacks, true)]
	close(answer)
	require.NoError(t, <-done)
	require.False(t, bytes.Contains(stacks, []byte("kafkaio.(*Producer).send(")), "a sender goroutine ran for a lone write")
	require.True(t, bytes.Contains(stacks, []byte("kafkaio.(*Producer).sendInline(")), "the writer did not send it")
}

// An awaited write that finds its partition's queue busy with another write's round trip is
// handed the queue when that round trip ends and nothing else is queued: its own Wait sends it
// and reads the answer, rather than the other write's sender goroutine, which would then have
// to wake the waiter (one request's claim queued behind the previous request's result).
func TestProducerBusyQueueHandedToAwaitedWrite(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}))
	inFlight, answer := make(chan struct{}), make(chan struct{})
	var second []byte
	n := 0
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		n++
		switch n {
		case 1:
			close(inFlight)
			<-answer
		case 2:
			c.DropControl()
			second = make([]byte, 1<<20)
			second = second[:runtime.Stack(second, true)]
		}
		return nil, nil, false
	})
	first := p.Enqueue(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("first")}})
	<-inFlight // a sender goroutine has the queue
	awaited := p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 1, Value: []byte("second")}})
	done := make(chan []error, 1)
	go func() { done <- awaited.Wait(ctx) }()
	close(answer)
	require.Nil(t, <-done)
	require.Nil(t, first.Wait(ctx))
	require.NotNil(t, second, "no second Produce request")
	inline := false
	for _, g := range bytes.Split(second, []byte("\n\n")) {
		if bytes.Contains(g, []byte("kafkaio.(*Producer).sendInline(")) && bytes.Contains(g, []byte("kafkaio.(*Pending).Wait(")) {
			inline = true
		}
	}
	require.True(t, inline, "the awaited write was not sent by its own Wait:\n%s", second)
}

// Queuing the Write probes of three topics (a request's) costs the Probes, its indexes, its
// items' slice, one allocation for the items and their channel: not an allocation per item,
// nor growths of the slice (9 before).
func TestProducerQueuesProbesTogether(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(1, "a", "b", "c"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	p := NewProducer(Options{Brokers: c.ListenAddrs(), Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	ctx := testContext(t)
	topics := []string{"a", "b", "c"}
	require.Equal(t, []error{nil, nil, nil}, p.EnqueueProbes(ctx, topics).Wait(ctx))
	queued := make([]*Probes, 0, 600)
	release := p.Hold()
	allocs := alloctest.Least(100, func() { queued = append(queued, p.EnqueueProbes(ctx, topics)) })
	release()
	for _, pr := range queued {
		require.Equal(t, []error{nil, nil, nil}, pr.Wait(ctx))
	}
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 5.0)
}

// A queued write's Produce request takes its record sets' buffer and its framing from a pool
// (smallBufs) once the broker answered the one before: each was a fresh allocation.
func TestProducerSmallRequestBuffersPooled(t *testing.T) {
	_, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	msgs := []kafka.Message{{Topic: "a", Partition: 0, Key: []byte("k"), Value: []byte("v")}}
	require.Nil(t, p.Produce(ctx, msgs))
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop what it is given: the counts would include its misses")
	}
	produce := func() {
		if errs := p.Produce(ctx, msgs); errs != nil {
			t.Fatal(errs)
		}
	}
	// Measured against the same Produce without the pool, in the same run: how many a round
	// trip allocates besides the buffers depends on the machine's load (a read that has to
	// wait makes the context's channel, for one), which adds to both sides alike.
	smallBufs.off.Store(true)
	without := alloctest.Least(100, produce)
	smallBufs.off.Store(false)
	with := alloctest.Least(100, produce)
	// A Produce of one record on this test cluster: 42 with the two buffers allocated, 40
	// with them pooled, at rest.
	t.Logf("%.0f allocations, %.0f without the pool", with, without)
	require.LessOrEqual(t, with, without-2)
}

// A queued item holds its records as itemRecords, not kafka.Messages: every write allocates
// its items (a request's ten offsets, ten), 288 bytes each with a kafka.Message inline.
func TestProduceItemSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(produceItem{}), uintptr(208))
}
