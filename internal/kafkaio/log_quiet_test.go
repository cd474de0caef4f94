package kafkaio

import (
	"sync"
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
	c, brokers, p := quietCluster(t, 2, "quiet")
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

// A quiet log's barrier asks a partition whose next records are the owner's own (held while
// written, or waiting for the applier) for its end only: the broker would otherwise send them
// back as the owner wrote them (after a bulk write, every partition's first batch whole), to be
// read and dropped. The other partitions are still asked for their records.
func TestQuietLogBarrierAsksOwnPartitionsForTheirEndOnly(t *testing.T) {
	c, brokers, p := quietCluster(t, 3, "quiet-own")
	l, err := NewLog(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}, "quiet-own", func([]kafka.Message) {})
	require.NoError(t, err)
	l.QuietTail()
	runLog(t, l)
	ctx := testContext(t)
	require.NoError(t, l.Sync(ctx)) // loaded: its barriers now ask for records

	// The barriers' Fetches (no wait), each partition's PartitionMaxBytes.
	var mu sync.Mutex
	var asked []map[int32]int32
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if f := req.(*kmsg.FetchRequest); f.MaxWaitMillis == 0 {
			m := map[int32]int32{}
			for _, rt := range f.Topics {
				for _, rp := range rt.Partitions {
					m[rp.Partition] = rp.PartitionMaxBytes
				}
			}
			mu.Lock()
			asked = append(asked, m)
			mu.Unlock()
		}
		return nil, nil, false
	})

	release := l.Hold([]int32{0})
	defer release()
	w := p.Enqueue(ctx, []kafka.Message{{Topic: "quiet-own", Partition: 0, Key: []byte("k"), Value: []byte("own")}})
	require.Nil(t, w.Wait(ctx))
	l.Written(0, w.Offset(0), []Record{{Key: []byte("k"), Value: []byte("own")}}, []int{0})
	bs, err := SyncEnds(ctx, l)
	require.NoError(t, err)
	require.Equal(t, w.Offset(0)+1, bs[0].ends[0], "the held partition's end is still read")
	// What the log fetched in all (l.fetched) is not compared: its tail's long poll may
	// answer meanwhile with the owner's record, as it does when its wait runs out.
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, asked)
	last := asked[len(asked)-1]
	require.Equal(t, int32(1), last[0], "the held partition: its end only")
	require.Equal(t, int32(logPollBytes), last[1], "another partition: its records")
}

// quietCluster is a one-broker kfake cluster with topic of partitions, and a producer on it.
func quietCluster(t *testing.T, partitions int32, topic string) (*kfake.Cluster, []string, *Producer) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(partitions, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	return c, brokers, NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
}
