package kafkaio

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncEnds of two quiet logs on one transport reads both topics' end offsets in one Fetch
// that does not wait, and each barrier's Wait then holds: it applies what another writer wrote
// before the call. Logs on different transports are read each with its own Fetch, at once.
func TestSyncEndsReadsLogsTogether(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(2, "configs"), kfake.SeedTopics(3, "offsets"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	shared := &kafka.Transport{MetadataTTL: 100 * time.Millisecond}
	newLog := func(topic string, transport *kafka.Transport) *appliedLog {
		a := &appliedLog{values: map[string][]string{}}
		l, err := NewLog(Options{Brokers: brokers, Transport: transport}, topic, func(msgs []kafka.Message) {
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
		return a
	}
	configs, offsets := newLog("configs", shared), newLog("offsets", shared)
	alone := newLog("offsets", &kafka.Transport{MetadataTTL: 100 * time.Millisecond})
	ctx := testContext(t)
	for _, l := range []*appliedLog{configs, offsets, alone} {
		require.NoError(t, l.WaitReady(ctx))
	}

	// The broker holds every long poll until the test ends, and counts the Fetch requests
	// that do not wait by the topics they name.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	var mu sync.Mutex
	fetches := map[string]int{}
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.FetchRequest)
		if r.MaxWaitMillis > 0 {
			c.SleepControl(func() { <-hold })
			return nil, nil, false
		}
		var names []string
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		mu.Lock()
		fetches[strings.Join(names, "+")]++
		mu.Unlock()
		return nil, nil, false
	})
	counts := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := fetches
		fetches = map[string]int{}
		return out
	}

	p := NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	for _, m := range []kafka.Message{
		{Topic: "configs", Partition: 1, Key: []byte("c"), Value: []byte("config-1")},
		{Topic: "offsets", Partition: 2, Key: []byte("o"), Value: []byte("offset-1")},
	} {
		require.Nil(t, p.Produce(ctx, []kafka.Message{m}))
	}
	counts()
	bs, err := SyncEnds(ctx, configs.Log, offsets.Log)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"configs+offsets": 1}, counts(), "one Fetch for both logs' end offsets")
	for _, b := range bs {
		require.NoError(t, b.Wait(ctx))
	}
	require.Equal(t, []string{"config-1"}, configs.seen("c"))
	require.Equal(t, []string{"offset-1"}, offsets.seen("o"))

	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "configs", Partition: 0, Key: []byte("c"), Value: []byte("config-2")}}))
	counts()
	bs, err = SyncEnds(ctx, configs.Log, alone.Log)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"configs": 1, "offsets": 1}, counts(), "a log on another transport reads its own ends")
	for _, b := range bs {
		require.NoError(t, b.Wait(ctx))
	}
	require.Equal(t, []string{"config-1", "config-2"}, configs.seen("c"))
	require.Equal(t, []string{"offset-1"}, alone.seen("o"))
}

// SyncEnds whose logs are all read in the joint Fetch makes that Fetch on the caller's
// goroutine, which writes it and reads the answer: a goroutine of its own would only be
// waited for, one more hand-over on every request's barrier. The broker looks at the goroutines while it answers the Fetch: the one
// inside fetchEnds is the one that called SyncEnds.
func TestSyncEndsJointReadOnCallersGoroutine(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(2, "configs"), kfake.SeedTopics(3, "offsets"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	shared := &kafka.Transport{MetadataTTL: 100 * time.Millisecond}
	newLog := func(topic string) *Log {
		l, err := NewLog(Options{Brokers: c.ListenAddrs(), Transport: shared}, topic, func([]kafka.Message) {})
		require.NoError(t, err)
		l.QuietTail()
		runLog(t, l)
		return l
	}
	configs, offsets := newLog("configs"), newLog("offsets")
	ctx := testContext(t)
	require.NoError(t, configs.WaitReady(ctx))
	require.NoError(t, offsets.WaitReady(ctx))

	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	var mu sync.Mutex
	var stacks []string // the goroutines while the joint Fetch is answered
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.FetchRequest)
		if r.MaxWaitMillis > 0 {
			c.SleepControl(func() { <-hold })
			return nil, nil, false
		}
		if len(r.Topics) == 2 {
			buf := make([]byte, 1<<20)
			mu.Lock()
			stacks = strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
			mu.Unlock()
		}
		return nil, nil, false
	})

	_, err = SyncEnds(ctx, configs, offsets)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	var readers []string
	for _, g := range stacks {
		if strings.Contains(g, "kafkaio.fetchEnds(") {
			readers = append(readers, g)
		}
	}
	require.Len(t, readers, 1, "one goroutine reads the ends")
	require.Contains(t, readers[0], "kafkaio.SyncEnds(", "the joint Fetch is made by SyncEnds's caller:\n%s", readers[0])
	// and written and read by it, on a connection of the log's own: not handed to the
	// goroutine of a kafka-go Transport's connection and back (produce_conn.go).
	require.Contains(t, readers[0], "kafkaio.(*rawFetch).RawExchange(", "the caller did not read the answer itself:\n%s", readers[0])
}
