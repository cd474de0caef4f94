package kafkaio

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A fetcher that reads a batch of many small compressed records (a burst of requests) inflates
// it into a buffer kept for its next fetches, not one grown by doubling every time (which
// allocates twice what it ends with): a fetch allocates about the records it returns (each
// copied out of the buffer) and the decoder's chunks, not four times their size.
func TestFetchPartitionBoundedReusesInflateBuffer(t *testing.T) {
	const records, value = 200, 1000
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "requests"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx := testContext(t)
	pub, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("requests"),
		kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer pub.Close()
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "connector-%03d", i), Value: bytes.Repeat([]byte{'a' + byte(i%26)}, value)})
	}
	require.NoError(t, pub.ProduceSync(ctx, recs...).FirstErr())

	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	fetch := func() {
		t.Helper()
		f, err := FetchPartitionBounded(ctx, cl, "requests", 0, 0, 4<<20, 10*time.Millisecond, FetchBounds{BatchMax: 8 << 20})
		require.NoError(t, err)
		require.Len(t, f.Messages, records)
	}
	fetch() // connections, metadata, the first buffer
	const fetches = 5
	least := uint64(1 << 62)
	for range fetches {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fetch()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	inflated := uint64(records * value)
	t.Logf("least bytes allocated by a fetch: %d, records inflated: %d", least, inflated)
	require.Less(t, least, inflated*2, "bytes allocated by one fetch of %d records of %d bytes, least of %d", records, value, fetches)
}
