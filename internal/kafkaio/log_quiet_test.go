package kafkaio

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A quiet log's long polls no longer come back for the first record, so its barriers fetch
// what they find missing themselves: with every long poll held by the broker, Sync still
// applies another writer's record, and SyncTo of the owner's record written after another
// writer's applies both, in log order.
func TestQuietLogBarriersFetchOthersRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(2, "quiet"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	p := NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	a := &appliedLog{values: map[string][]string{}}
	l, err := NewLog(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}, "quiet", func(msgs []kafka.Message) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, m := range msgs {
			a.values[string(m.Key)] = append(a.values[string(m.Key)], string(m.Value))
		}
	})
	require.NoError(t, err)
	l.QuietTail()
	a.Log = l
	runLog(t, l)
	ctx := testContext(t)

	// From now on the broker holds every long poll until the test ends: only a fetch that
	// does not wait brings records.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req.(*kmsg.FetchRequest).MaxWaitMillis > 0 {
			c.SleepControl(func() { <-hold })
		}
		return nil, nil, false
	})
	produce := func(key, value string) int64 {
		t.Helper()
		w := p.Enqueue(ctx, []kafka.Message{{Topic: "quiet", Partition: 0, Key: []byte(key), Value: []byte(value)}})
		require.Nil(t, w.Wait(ctx))
		return w.Offset(0)
	}

	produce("k", "other-1")
	require.NoError(t, l.Sync(ctx))
	require.Equal(t, []string{"other-1"}, a.seen("k"))

	produce("j", "other-2")
	own := produce("j", "in-topic")
	l.Written(0, own, []Record{{Key: []byte("j"), Value: []byte("own")}}, []int{0})
	require.NoError(t, l.SyncTo(ctx, 0, own+1))
	require.Equal(t, []string{"other-2", "own"}, a.seen("j"), "another writer's record first, then the owner's, from Written")
}
