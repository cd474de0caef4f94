package kafkaio

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/race"
)

// appliedLog is a running Log of topic whose view records every value applied to each key,
// in order.
type appliedLog struct {
	*Log
	mu     sync.Mutex
	values map[string][]string
	// decoded are the WriterData of each key's records, in order (nil for fetched ones).
	decoded map[string][]any
}

func (a *appliedLog) seen(key string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.values[key])
}

func runAppliedLog(t *testing.T, brokers []string, topic string) *appliedLog {
	t.Helper()
	a := &appliedLog{values: map[string][]string{}, decoded: map[string][]any{}}
	l, err := NewLog(Options{Brokers: brokers}, topic, func(msgs []kafka.Message) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, m := range msgs {
			a.values[string(m.Key)] = append(a.values[string(m.Key)], string(m.Value))
			a.decoded[string(m.Key)] = append(a.decoded[string(m.Key)], m.WriterData)
		}
	})
	require.NoError(t, err)
	a.Log = l
	runLog(t, l)
	return a
}

// An own record applied from Written comes with its decoded form (Record.Decoded) as the
// message's WriterData; a record fetched from the topic has none.
func TestLogHandsOwnRecordsDecodedForms(t *testing.T) {
	_, brokers, p := startProducerCluster(t, "own")
	ctx := testContext(t)
	l := runAppliedLog(t, brokers, "own")
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "own", Partition: 0, Key: []byte("k"), Value: []byte("other")}}))
	require.NoError(t, l.Sync(ctx))
	release := l.Hold([]int32{0})
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "own", Partition: 0, Key: []byte("k"), Value: []byte("own")}}))
	l.Written(0, 1, []Record{{Key: []byte("k"), Value: []byte("own"), Decoded: "decoded own"}}, []int{0})
	release()
	require.NoError(t, l.Sync(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Equal(t, []any{nil, "decoded own"}, l.decoded["k"])
}

// Records the owner wrote are applied from Written (or WrittenBatch) at their offsets, never
// fetched again, and in log order with the records of other writers: whoever wrote a key last
// wins. Written is given other bytes than those in the topic, so the view shows which path a
// value took.
func TestLogAppliesOwnWritesInLogOrder(t *testing.T) {
	tests := []struct {
		name    string
		written func(l *Log, base int64, key, value string)
	}{
		{name: "records", written: func(l *Log, base int64, key, value string) {
			l.Written(0, base, []Record{{Key: []byte("unused")}, {Key: []byte(key), Value: []byte(value)}}, []int{1})
		}},
		{name: "record batch", written: func(l *Log, base int64, key, value string) {
			e := NewBatchEncoder(1, 0)
			e.Append(0, []byte(key), []byte(value))
			l.WrittenBatch(0, base, e.Encoded().batches[0][0].batch())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, brokers, p := startProducerCluster(t, "own")
			ctx := testContext(t)
			l := runAppliedLog(t, brokers, "own")
			produce := func(key, value string) {
				t.Helper()
				require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "own", Partition: 0, Key: []byte(key), Value: []byte(value)}}))
			}
			written := func(base int64, key, value string) { tt.written(l.Log, base, key, value) }

			produce("k", "other-1") // offset 0
			require.NoError(t, l.Sync(ctx))

			// Our record at offset 1, then another writer's at 2: the other's stays.
			release := l.Hold([]int32{0})
			produce("k", "in-topic-1") // offset 1, ours
			produce("k", "other-2")    // offset 2
			written(1, "k", "own-1")
			release()
			require.NoError(t, l.Sync(ctx))
			require.Equal(t, []string{"other-1", "own-1", "other-2"}, l.seen("k"))

			// Another writer's record at 3 comes before ours at 4: the fetch applies 3, then ours.
			release = l.Hold([]int32{0})
			produce("j", "other-3")    // offset 3
			produce("k", "in-topic-4") // offset 4, ours
			written(4, "k", "own-4")
			release()
			require.NoError(t, l.Sync(ctx))
			require.Equal(t, []string{"other-1", "own-1", "other-2", "own-4"}, l.seen("k"))
			require.Equal(t, []string{"other-3"}, l.seen("j"))

			// Records the log already read are not applied again.
			produce("k", "other-5") // offset 5
			require.NoError(t, l.Sync(ctx))
			written(5, "k", "own-5")
			require.Equal(t, []string{"other-1", "own-1", "other-2", "own-4", "other-5"}, l.seen("k"))
			require.Equal(t, int64(6), l.position(0))
		})
	}
}

// Write reports every acknowledged run with the offset of its first record, for small
// (queued) and large (rounds) writes alike.
func TestProducerWriteReportsOffsets(t *testing.T) {
	_, _, p := startProducerCluster(t, "acked")
	ctx := testContext(t)
	for _, tt := range []struct {
		name string
		n    int
	}{{name: "queued", n: 10}, {name: "rounds", n: 3 * SmallWrite}} {
		t.Run(tt.name, func(t *testing.T) {
			recs := make([]Record, tt.n)
			parts := make([]int32, tt.n)
			for i := range recs {
				recs[i] = Record{Key: []byte{byte(i)}, Value: []byte{byte(i)}}
				parts[i] = int32(i % 3)
			}
			var mu sync.Mutex
			at := map[int]int64{} // record index -> offset
			require.NoError(t, p.Write(ctx, "acked", recs, parts, func(a Acked) {
				mu.Lock()
				defer mu.Unlock()
				for k, i := range a.Idx {
					require.Equal(t, parts[i], a.Partition)
					at[i] = a.Base + int64(k)
				}
			}))
			require.Len(t, at, tt.n)
			// Offsets are consecutive per partition, in the order of the records.
			last := map[int32]int64{0: -1, 1: -1, 2: -1}
			for i := range recs {
				if last[parts[i]] >= 0 {
					require.Equal(t, last[parts[i]]+1, at[i], "record %d", i)
				}
				last[parts[i]] = at[i]
			}
		})
	}
}

// runLog runs l until the test ends and waits until it is ready.
func runLog(t *testing.T, l *Log) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.NoError(t, l.WaitReady(testContext(t)))
}

// A record being written that the log fetches before Written has it (its Produce answered,
// the answer not yet handed over: a concurrent barrier's fetch) comes with the decoded form
// Expect was told of, matched by key and bytes; other bytes under the key, and the record
// once Unexpect forgot it, come without.
func TestLogHandsExpectedRecordsDecodedForms(t *testing.T) {
	_, brokers, p := startProducerCluster(t, "expect")
	ctx := testContext(t)
	l := runAppliedLog(t, brokers, "expect")
	recs := []Record{{Key: []byte("k"), Value: []byte("mine"), Decoded: "decoded mine"}, {Key: []byte("t"), Value: nil, Decoded: "tombstone"}}
	l.Expect(recs)
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "expect", Partition: 0, Key: []byte("k"), Value: []byte("other")}}))
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "expect", Partition: 0, Key: []byte("k"), Value: []byte("mine")}}))
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "expect", Partition: 0, Key: []byte("t")}}))
	require.NoError(t, l.Sync(ctx))
	l.Unexpect(recs)
	require.Zero(t, l.expected.n.Load(), "every record forgotten")
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "expect", Partition: 0, Key: []byte("k"), Value: []byte("mine")}}))
	require.NoError(t, l.Sync(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Equal(t, []any{nil, "decoded mine", nil}, l.decoded["k"])
	require.Equal(t, []any{nil}, l.decoded["t"], "a tombstone is never expected")
}

// Records expected under one key at once (the same key written twice) are each matched by
// their bytes and forgotten on their own; expecting and forgetting a write's records costs no
// allocation once the log has held some (the map is keyed by the keys' hashes, not by strings
// of them).
func TestExpectedRecords(t *testing.T) {
	var e expectedRecords
	a := []Record{{Key: []byte("k"), Value: []byte("a"), Decoded: "A"}}
	b := []Record{{Key: []byte("k"), Value: []byte("b"), Decoded: "B"}, {Key: []byte("t"), Value: []byte("t"), Decoded: "T"}}
	e.add(a)
	e.add(b)
	batch := []kafka.Message{{Key: []byte("k"), Value: []byte("b")}, {Key: []byte("k"), Value: []byte("a")}, {Key: []byte("k"), Value: []byte("c")}, {Key: []byte("t"), Value: []byte("t")}}
	e.decode(batch)
	require.Equal(t, []any{"B", "A", nil, "T"}, []any{batch[0].WriterData, batch[1].WriterData, batch[2].WriterData, batch[3].WriterData})
	e.remove(a)
	batch = []kafka.Message{{Key: []byte("k"), Value: []byte("b")}, {Key: []byte("k"), Value: []byte("a")}}
	e.decode(batch)
	require.Equal(t, []any{"B", nil}, []any{batch[0].WriterData, batch[1].WriterData})
	e.remove(b)
	require.Zero(t, e.n.Load())
	require.Empty(t, e.m)
	require.Zero(t, alloctest.Least(100, func() {
		e.add(b)
		e.remove(b)
	}))
}

// A small run of the owner's records right where its partition's log stands is applied on the
// writer's goroutine without allocating: its messages are built in a pooled buffer (appended
// to from nil, ten records grew one five times), and the advance makes no channel when
// nothing waits for it (one was made on every advance).
func TestWrittenSmallRunAllocations(t *testing.T) {
	_, brokers, _ := startProducerCluster(t, "small")
	ctx := testContext(t)
	var applied int // records applied; the view keeps nothing, so that it allocates nothing
	l, err := NewLog(Options{Brokers: brokers}, "small", func(msgs []kafka.Message) { applied += len(msgs) })
	require.NoError(t, err)
	runLog(t, l)
	require.NoError(t, l.Sync(ctx))
	// Hold the fetch loop off the partition: the runs below are past the topic's end.
	release := l.Hold([]int32{0})
	defer release()
	l.mu.Lock()
	l.held[0] = 0 // applied at once, as an unheld partition's run is, but not fetched
	l.mu.Unlock()
	recs := make([]Record, 10)
	idx := make([]int, len(recs))
	for i := range recs {
		recs[i], idx[i] = Record{Key: []byte{'k', byte('0' + i)}, Value: []byte("v")}, i
	}
	base := l.position(0)
	l.Written(0, base, recs, idx)
	require.Equal(t, base+10, l.position(0), "applied by Written")
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop what it is given: the counts would include its misses")
	}
	allocs := alloctest.Least(100, func() {
		base += 10
		l.Written(0, base, recs, idx)
	})
	require.Equal(t, base+10, l.position(0))
	require.Equal(t, int(base+10), applied)
	t.Logf("%.2f allocations", allocs)
	require.Zero(t, allocs)
}

// InOrder's indexes are 0 to n-1, shared (no allocation) up to SmallWrite, made beyond.
func TestInOrder(t *testing.T) {
	require.Equal(t, []int{0, 1, 2}, InOrder(3))
	require.Equal(t, 3, cap(InOrder(3)), "an append never writes into the shared indexes")
	require.Len(t, InOrder(SmallWrite+1), SmallWrite+1)
	require.Equal(t, SmallWrite, InOrder(SmallWrite + 1)[SmallWrite])
	require.Zero(t, alloctest.Least(100, func() { _ = InOrder(10) }))
}
