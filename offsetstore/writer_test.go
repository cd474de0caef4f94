package offsetstore

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// A large write is applied to the view from the written bytes (the view's values alias them),
// not fetched and decoded again; a write by another worker right after still wins.
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

	view := s.offsets[testOffsetsTopic].view
	view.mu.RLock()
	set := view.byConn["own"]
	require.Len(t, set, n)
	for _, r := range recs {
		e, ok := set[string(r.Key)]
		require.True(t, ok)
		require.Equal(t, string(r.Value), e.value)
		require.Same(t, unsafe.SliceData(r.Value), unsafe.StringData(e.value), "value of %s read back from the topic", r.Key)
	}
	view.mu.RUnlock()

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
