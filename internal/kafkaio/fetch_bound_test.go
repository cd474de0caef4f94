package kafkaio

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/race"
)

// With FetchBounds.TotalMax, a fetch of a partition of compressed batches that inflate to many
// times the bytes asked for returns the first batch and then only the batches that keep the
// inflated total within the bound; Next stops at the first batch left out, so that fetching
// on from Next brings every record back once, in order, across many fetches. Uncompressed
// batches, a batch starting before the offset asked for and a committed transaction's control
// batch keep their offsets exact.
func TestFetchPartitionBoundsInflatedTotal(t *testing.T) {
	const (
		perBatch = 4
		value    = 2000 // bytes of a record's value: a batch inflates to about 8 kB
		bound    = 20_000
	)
	codec := 0
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{name: "gzip", codec: kgo.GzipCompression()},
		{name: "snappy", codec: kgo.SnappyCompression()},
		{name: "lz4", codec: kgo.Lz4Compression()},
		{name: "zstd", codec: kgo.ZstdCompression()},
	} {
		// Under the race detector two of the four codecs (make test runs all four without it).
		if codec++; !race.Sample(codec, 2) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bounded"))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			ctx := testContext(t)
			var want []string
			batchOf := map[string]int{} // value -> its batch, in produce order
			batches := 0
			produce := func(codec kgo.CompressionCodec, txn bool) {
				t.Helper()
				opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("bounded"),
					kgo.ProducerBatchCompression(codec)}
				if txn {
					opts = append(opts, kgo.TransactionalID(fmt.Sprintf("txn-%d", batches)))
				}
				cl, err := kgo.NewClient(opts...)
				require.NoError(t, err)
				defer cl.Close()
				if txn {
					require.NoError(t, cl.BeginTransaction())
				}
				var recs []*kgo.Record
				for range perBatch {
					v := fmt.Sprintf("%06d-%s", len(want), bytes.Repeat([]byte{'a' + byte(len(want)%26)}, value))
					recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", len(want)), Value: []byte(v)})
					want = append(want, v)
					batchOf[v] = batches
				}
				require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
				if txn {
					require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
				}
				batches++
			}
			for i := range 40 {
				switch i {
				case 10:
					produce(kgo.NoCompression(), false)
				case 20:
					produce(tc.codec, true) // a control batch follows it
				default:
					produce(tc.codec, false)
				}
			}

			cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
			var got []string
			offset, last, fetches := int64(2), int64(-1), 0 // from the middle of the first batch
			for range 200 {
				// Asking for the whole partition's wire bytes: only the bound holds it back.
				f, err := FetchPartitionBounded(ctx, cl, "bounded", 0, offset, 1<<20, 10*time.Millisecond,
					FetchBounds{TotalMax: bound})
				require.NoError(t, err)
				fetches++
				size, in := 0, map[int]bool{}
				for _, m := range f.Messages {
					require.Greater(t, m.Offset, last, "in order, no record twice")
					last = m.Offset
					got = append(got, string(m.Value))
					size += len(m.Key) + len(m.Value)
					in[batchOf[string(m.Value)]] = true
				}
				if size > bound {
					require.Len(t, in, 1, "beyond the bound only with the first batch alone (fetch %d at %d)", fetches, offset)
				}
				require.Greater(t, f.Next, offset, "each fetch moves on")
				offset = f.Next
				if offset >= f.HighWatermark {
					break
				}
			}
			require.Equal(t, want[2:], got, "every record once, in order")
			// 160 records, one control record; about two batches of 8 kB per fetch.
			require.Equal(t, int64(len(want)+1), offset)
			require.Greater(t, fetches, 12)
		})
	}
}

// A first batch of several records, each larger than FetchBounds.TotalMax (large requests
// published at once by one producer), gives a fetch its first record only: the others are
// left for the next fetch, which starts at them, instead of being copied out to be dropped.
// Fetching on from Next brings each record back once, in order, one per fetch.
func TestFetchPartitionBoundedFirstBatchBeyondTotal(t *testing.T) {
	const records, value = 3, 100_000
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{name: "uncompressed", codec: kgo.NoCompression()},
		{name: "snappy", codec: kgo.SnappyCompression()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "large"))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			ctx := testContext(t)
			pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("large"),
				kgo.ProducerBatchCompression(tc.codec), kgo.ProducerBatchMaxBytes(4<<20))
			require.NoError(t, err)
			defer pcl.Close()
			var want []string
			var recs []*kgo.Record
			for i := range records {
				v := fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte{'a' + byte(i)}, value))
				want = append(want, v)
				recs = append(recs, &kgo.Record{Value: []byte(v)})
			}
			require.NoError(t, pcl.ProduceSync(ctx, recs...).FirstErr(), "one batch of three")

			cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
			var got []string
			offset := int64(0)
			for fetches := 1; offset < records; fetches++ {
				require.LessOrEqual(t, fetches, records, "one record per fetch")
				f, err := FetchPartitionBounded(ctx, cl, "large", 0, offset, 1024, 10*time.Millisecond,
					FetchBounds{TotalMax: value / 2})
				require.NoError(t, err)
				require.Equal(t, 1, len(f.Messages), "the first record of the batch only (fetch at %d)", offset)
				require.Equal(t, offset, f.Messages[0].Offset)
				got = append(got, string(f.Messages[0].Value))
				require.Equal(t, offset+1, f.Next)
				offset = f.Next
			}
			require.Equal(t, want, got)
		})
	}
}
