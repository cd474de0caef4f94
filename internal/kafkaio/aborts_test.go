package kafkaio

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnProducer is a transactional franz-go producer on the embedded broker (tests only: the
// product never writes in transactions), writing to partition 0 of its default topic.
func txnProducer(t *testing.T, brokers []string, topic, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(id)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// plainProducer is txnProducer with no transactions.
func plainProducer(t *testing.T, brokers []string, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produceBatch writes values as one record batch to partition 0 (key = value).
func produceBatch(ctx context.Context, t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Key: []byte(v), Value: []byte(v), Partition: 0}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// interleavedTransactions writes to partition 0 of topic the batches of three producers
// interleaved: one whose transaction aborts (zstd batches, among them a batch of 40 records),
// one whose transaction commits (uncompressed), and one that is not transactional (snappy),
// then a second aborted transaction (gzip) and a last plain record. It returns the values a
// read_committed reader gets, in offset order.
func interleavedTransactions(ctx context.Context, t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	aborted := txnProducer(t, brokers, topic, "aborted", kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	committed := txnProducer(t, brokers, topic, "committed")
	plain := plainProducer(t, brokers, topic, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	require.NoError(t, aborted.BeginTransaction())
	require.NoError(t, committed.BeginTransaction())
	var want []string
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("aborted-many-%d", i)
	}
	for i := range 4 {
		produceBatch(ctx, t, aborted, fmt.Sprintf("aborted-%d-a", i), fmt.Sprintf("aborted-%d-b", i))
		c := fmt.Sprintf("committed-%d", i)
		produceBatch(ctx, t, committed, c)
		p := fmt.Sprintf("plain-%d", i)
		produceBatch(ctx, t, plain, p)
		want = append(want, c, p)
		if i == 1 {
			produceBatch(ctx, t, aborted, many...)
		}
	}
	require.NoError(t, committed.EndTransaction(ctx, kgo.TryCommit))
	produceBatch(ctx, t, plain, "plain-between") // between the commit marker and the abort
	want = append(want, "plain-between")
	require.NoError(t, aborted.EndTransaction(ctx, kgo.TryAbort))

	again := txnProducer(t, brokers, topic, "aborted-again", kgo.ProducerBatchCompression(kgo.GzipCompression()))
	require.NoError(t, again.BeginTransaction())
	produceBatch(ctx, t, again, "again-1", "again-2")
	require.NoError(t, again.EndTransaction(ctx, kgo.TryAbort))
	produceBatch(ctx, t, plain, "plain-last")
	return append(want, "plain-last")
}

// FetchPartition returns the committed records only, whatever the fetch size: with a size of
// one byte every response holds one batch (KIP-74), so an aborted transaction spans many
// fetches, each starting inside it.
func TestFetchPartitionDropsAbortedTransactions(t *testing.T) {
	_, brokers, _ := startProducerCluster(t, "txns")
	ctx := testContext(t)
	want := interleavedTransactions(ctx, t, brokers, "txns")
	cl := NewClient(Options{Brokers: brokers, Transport: testTransport(t)})
	for _, size := range []int64{1, 300, 4 << 10, 1 << 20} {
		t.Run(fmt.Sprintf("max bytes %d", size), func(t *testing.T) {
			var got []string
			offset, fetches := int64(0), 0
			for ; fetches < 200; fetches++ {
				f, err := FetchPartition(ctx, cl, "txns", 0, offset, size, 10*time.Millisecond)
				require.NoError(t, err)
				for _, m := range f.Messages {
					got = append(got, string(m.Value))
				}
				require.GreaterOrEqual(t, f.Next, offset)
				offset = f.Next
				if offset >= f.LastStable {
					require.Equal(t, f.HighWatermark, f.LastStable) // nothing is open
					break
				}
			}
			require.Equal(t, want, got)
			if size == 1 {
				require.Greater(t, fetches, 10)
			}
		})
	}
}

// A transaction still open holds the last stable offset at its first record: FetchPartition
// returns nothing of it, nor anything written after it, and does not move past it; once it
// commits, everything is returned.
func TestFetchPartitionStopsAtOpenTransaction(t *testing.T) {
	_, brokers, _ := startProducerCluster(t, "open")
	ctx := testContext(t)
	plain := plainProducer(t, brokers, "open")
	open := txnProducer(t, brokers, "open", "open")
	produceBatch(ctx, t, plain, "before")
	require.NoError(t, open.BeginTransaction())
	produceBatch(ctx, t, open, "open-1")
	produceBatch(ctx, t, plain, "after")
	cl := NewClient(Options{Brokers: brokers, Transport: testTransport(t)})

	f, err := FetchPartition(ctx, cl, "open", 0, 0, 1<<20, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, []string{"before"}, values(f.Messages))
	require.Equal(t, int64(1), f.LastStable)
	require.Equal(t, int64(3), f.HighWatermark)
	for range 3 {
		f, err = FetchPartition(ctx, cl, "open", 0, f.Next, 1<<20, 10*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, f.Messages)
		require.Equal(t, int64(1), f.Next)
	}
	last, err := resolveOffset(ctx, cl, "open", 0, kafka.LastOffset)
	require.NoError(t, err)
	require.Equal(t, int64(1), last)

	require.NoError(t, open.EndTransaction(ctx, kgo.TryCommit))
	f, err = FetchPartition(ctx, cl, "open", 0, 1, 1<<20, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, []string{"open-1", "after"}, values(f.Messages))
	require.Equal(t, int64(4), f.Next) // past the commit marker
}

func values(msgs []kafka.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, string(m.Value))
	}
	return out
}

// The reader may start past the offset the fetch asked for (the Log's position, moved by
// Written while the fetch was in flight). The batches before it still close the aborted
// transactions they end: a later committed transaction of the same producer is kept.
func TestRecordReaderClosesAbortsBeforeOffset(t *testing.T) {
	_, brokers, _ := startProducerCluster(t, "reuse")
	ctx := testContext(t)
	cl := txnProducer(t, brokers, "reuse", "reused")
	require.NoError(t, cl.BeginTransaction())
	produceBatch(ctx, t, cl, "aborted-0", "aborted-1")       // offsets 0-1
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort)) // marker at 2
	require.NoError(t, cl.BeginTransaction())
	produceBatch(ctx, t, cl, "committed-3") // offset 3
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))

	f := newRawFetch(NewClient(Options{Brokers: brokers, Transport: testTransport(t)}), "reuse")
	f.add(0, 0, 1<<20)
	res, _, err := f.roundTrip(ctx, NewClient(Options{Brokers: brokers, Transport: testTransport(t)}), nil)
	require.NoError(t, err)
	rp := res.Topics[0].Partitions[0]
	require.Len(t, rp.AbortedTransactions, 1)
	for _, from := range []int64{0, 1, 2, 3} {
		rr := recordReader{aborted: rp.AbortedTransactions}
		out, next, err := rr.read(rp.RecordBatches, "reuse", 0, from, nil, nil, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"committed-3"}, values(out), "from %d", from)
		require.Equal(t, int64(5), next)
	}
}

// The Log applies committed records only; its Sync barrier and its readiness stop at the last
// stable offset, so a transaction open when Run starts neither blocks the load nor shows in
// the view; once it commits, the next Sync brings it, and an aborted one never shows.
func TestLogReadsCommittedOnly(t *testing.T) {
	_, brokers, _ := startProducerCluster(t, "view")
	ctx := testContext(t)
	want := interleavedTransactions(ctx, t, brokers, "view")
	plain := plainProducer(t, brokers, "view")
	open := txnProducer(t, brokers, "view", "open")
	require.NoError(t, open.BeginTransaction())
	produceBatch(ctx, t, open, "open-1")
	produceBatch(ctx, t, plain, "after-open")

	l := runOrderedLog(t, brokers, "view") // ready: the load stops at the open transaction
	require.NoError(t, l.Sync(ctx))
	require.Equal(t, want, l.applied())

	require.NoError(t, open.EndTransaction(ctx, kgo.TryCommit))
	require.NoError(t, l.Sync(ctx))
	require.Equal(t, append(want, "open-1", "after-open"), l.applied())

	require.NoError(t, open.BeginTransaction())
	produceBatch(ctx, t, open, "open-2")
	require.NoError(t, open.EndTransaction(ctx, kgo.TryAbort))
	produceBatch(ctx, t, plain, "end")
	require.NoError(t, l.Sync(ctx))
	require.Equal(t, append(want, "open-1", "after-open", "end"), l.applied())
}

// An open transaction of another producer below the owner's own write holds the write back:
// the Log applies records in log order and reads nothing past the last stable offset, so the
// own record (and SyncTo it) waits until the transaction is settled, as Connect's
// KafkaBasedLog with a read_committed consumer waits; then the records are applied in log
// order: a committed record of the same key written before ours does not win over ours. Sync's
// barrier covers the own write as well, so a caller that writes and then syncs never finds
// the view without its write.
func TestLogOwnWriteWaitsForOpenTransactionBelowIt(t *testing.T) {
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		t.Run(fmt.Sprintf("commit %v", bool(end)), func(t *testing.T) {
			_, brokers, p := startProducerCluster(t, "own")
			ctx := testContext(t)
			l := runAppliedLog(t, brokers, "own")
			open := txnProducer(t, brokers, "own", "open")
			require.NoError(t, open.BeginTransaction())
			produceBatch(ctx, t, open, "k") // offset 0: k=k, open

			// Our write of k at offset 1.
			var base int64 = -1
			recs := []Record{{Key: []byte("k"), Value: []byte("own")}}
			require.NoError(t, p.Write(ctx, "own", recs, []int32{0}, func(a Acked) {
				base = a.Base
				l.Written(int(a.Partition), a.Base, recs, a.Idx)
			}))
			require.Equal(t, int64(1), base)

			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, l.SyncTo(short, 0, base+1), context.DeadlineExceeded)
			require.Empty(t, l.seen("k"), "nothing applied past the open transaction")
			// Sync's barrier (the last stable offset, 0) covers the own write too.
			short, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, l.Sync(short), context.DeadlineExceeded)

			require.NoError(t, open.EndTransaction(ctx, end))
			require.NoError(t, l.SyncTo(ctx, 0, base+1))
			want := []string{"own"}
			if end == kgo.TryCommit {
				want = []string{"k", "own"}
			}
			require.Equal(t, want, l.seen("k"))
			require.NoError(t, l.Sync(ctx))
			require.Equal(t, want, l.seen("k"))
		})
	}
}

// orderedLog is a running Log of topic whose view records every value applied, in order.
type orderedLog struct {
	*Log
	mu     sync.Mutex
	values []string
}

func (o *orderedLog) applied() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.values)
}

func runOrderedLog(t *testing.T, brokers []string, topic string) *orderedLog {
	t.Helper()
	o := &orderedLog{}
	l, err := NewLog(Options{Brokers: brokers}, topic, func(msgs []kafka.Message) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, m := range msgs {
			o.values = append(o.values, string(m.Value))
		}
	})
	require.NoError(t, err)
	o.Log = l
	runLog(t, l)
	return o
}
