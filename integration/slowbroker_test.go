package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
)

// The harness on a loaded host: every answer of the broker comes late, as it does when the
// test binary, the broker and the agent share two cores with a dozen other processes. The
// harness's waits must end on the event they wait for (the records are read, the cluster's
// layout is known), not on a short fixed deadline that a slow answer misses.

// slowAnswers delays the broker's answer to each request of key by delay, without holding up
// its other connections, until the test ends.
func slowAnswers(t *testing.T, c *cluster, key kmsg.Key, delay time.Duration) *atomic.Int64 {
	t.Helper()
	fake := c.requireFake(t)
	var n atomic.Int64
	fake.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		n.Add(1)
		fake.SleepControl(func() { time.Sleep(delay) })
		return nil, nil, false // then answered as usual
	})
	return &n
}

// readAll reads records that are there even when each fetch is answered 200 ms late: a
// fetch of records the partition holds is answered at once by a broker, so no answer may be
// given up on sooner than readAll's own deadline.
func TestHarnessReadsFromASlowBroker(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	const topic, records = "slow-fetch", 5
	cl.createTopic(topic, 2)
	var msgs []kafka.Message
	for i := range records {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	cl.produce(topic, msgs...)

	fetches := slowAnswers(t, c, kmsg.Fetch, 200*time.Millisecond)
	got := cl.readAll(topic)
	require.Len(t, got, records)
	require.Positive(t, fetches.Load(), "the fetches were answered late")

	// And the secured tests' client, which reads the same way.
	sc := newSecureClient(t, cfg)
	require.Len(t, sc.readAll(topic), records)
}

// A client whose first metadata answer comes later than its transport's refresh timeout
// (kafka-go gives each refresh the metadata TTL as its timeout) still creates topics: kafka-go
// serves requests from an unknown cluster layout until a refresh succeeds (a CreateTopics
// then fails with "[8] Broker Not Available"), so newClient waits until the layout is known.
func TestHarnessClientSurvivesASlowFirstMetadata(t *testing.T) {
	for _, tt := range []struct {
		name      string
		newClient func(*testing.T, agent.Config) *client
	}{
		{name: "newClient", newClient: newClient},
		{name: "newFreshClient", newClient: newFreshClient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t)
			cfg := testConfig(c)
			fake := c.requireFake(t)
			var first atomic.Bool
			fake.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
				if first.CompareAndSwap(false, true) {
					fake.SleepControl(func() { time.Sleep(1500 * time.Millisecond) }) // past the 1 s TTL
				}
				return nil, nil, false
			})
			cl := tt.newClient(t, cfg)
			cl.createTopic(cfg.RequestTopic, 3)
			require.True(t, first.Load(), "the first metadata answer was late")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			md, err := cl.kc.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.RequestTopic}})
			require.NoError(t, err)
			require.Len(t, md.Topics, 1)
		})
	}
}
