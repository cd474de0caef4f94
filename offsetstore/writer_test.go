package offsetstore

import (
	"fmt"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A large write is applied to the view from the written bytes (copied into the view's arena;
// that the log does not fetch them again is kafkaio's TestLogAppliesOwnWritesInLogOrder), and a
// write by another worker right after still wins.
func TestStoreWriteAppliesOwnRecords(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	const n = 5_000
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			Key:       fmt.Appendf(nil, `["own",{"file":"f-%05d"}]`, i),
			Value:     fmt.Appendf(nil, `{"position":%d}`, i),
			Partition: -1,
		}
	}
	require.NoError(t, s.Write(ctx, testOffsetsTopic, recs))
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))

	got := s.SourceOffsets(testOffsetsTopic, "own")
	require.Len(t, got, n)
	byKey := map[string]string{}
	for _, r := range got {
		byKey[string(r.Key)] = string(r.Value)
	}
	for _, r := range recs {
		require.Equal(t, string(r.Value), byKey[string(r.Key)], "key %s", r.Key)
	}

	other := recs[7]
	writeRaw(t, brokers, kafka.Message{Topic: testOffsetsTopic, Partition: PartitionFor(other.Key, 25), Key: other.Key, Value: []byte(`{"position":99}`)})
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	found := false
	for _, r := range s.SourceOffsets(testOffsetsTopic, "own") {
		if string(r.Key) == string(other.Key) {
			require.JSONEq(t, `{"position":99}`, string(r.Value))
			found = true
		}
	}
	require.True(t, found)
}

// The Write probes of concurrent requests ride in the store producer's Produce requests with
// the writes made beside them, instead of a Produce request each: fifty requests' probes,
// each asked while a write of its own goes out, cost a handful of requests, and each is
// answered.
func TestProbesRideWithWrites(t *testing.T) {
	c, _, s := startFakeStore(t)
	ctx := testContext(t)
	require.Empty(t, s.ProbeWrites(ctx, []string{testConfigTopic})[0], "warm-up")
	seen := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
	const requests = 50
	var wg sync.WaitGroup
	probeErrs := make([][]error, requests)
	writeErrs := make([][]error, requests)
	for i := range requests {
		wg.Go(func() {
			probeErrs[i] = s.ProbeWrites(ctx, []string{testConfigTopic, testOffsetsTopic})
		})
		wg.Go(func() {
			key := fmt.Appendf(nil, `["c-%d",{"file":"f"}]`, i)
			writeErrs[i] = s.Producer().Produce(ctx, []kafka.Message{{Topic: testOffsetsTopic, Partition: PartitionFor(key, 25),
				Key: key, Value: []byte(`{"position":1}`)}})
		})
	}
	wg.Wait()
	for i := range requests {
		require.Equal(t, []error{nil, nil}, probeErrs[i], "request %d: the probes answered", i)
		require.Nil(t, writeErrs[i], "request %d: the write acknowledged", i)
	}
	require.Less(t, seen.Hits(), requests/2, "Produce requests for %d requests' probes and writes", requests)
}
