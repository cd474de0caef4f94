package offsetstore

import (
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
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
