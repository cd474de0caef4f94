package source

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// A sink's offsets are read with one fetch of every partition of its group, and the fetch by
// name of its topics' partitions (which Kafka answers with a refusal where the first leaves a
// topic out) only when the first did not return them all: a stop barrier reads each sink's
// offsets twice, and the fetch by name of a group whose every partition came back told
// nothing more. A partition without a committed offset still gets the fetch by name.
func TestSinkOffsetsFetchByNameOnlyWhatIsMissing(t *testing.T) {
	fake, brokers, cl, ctx := connectCluster(t)
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "in", 3, nil))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "in2", 2, nil))
	// full has an offset in every partition of its topics, partial none in in2's partition 1.
	require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-full", []kafkaio.GroupOffset{
		{Topic: "in", Partition: 0, Offset: 1}, {Topic: "in", Partition: 1, Offset: 2}, {Topic: "in", Partition: 2, Offset: 3},
		{Topic: "in2", Partition: 0, Offset: 4}, {Topic: "in2", Partition: 1, Offset: 5}}))
	require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-partial", []kafkaio.GroupOffset{
		{Topic: "in", Partition: 0, Offset: 1}, {Topic: "in", Partition: 1, Offset: 2}, {Topic: "in", Partition: 2, Offset: 3},
		{Topic: "in2", Partition: 0, Offset: 4}}))
	r := readConnectTopics(ctx, t, brokers)

	var mu sync.Mutex
	byName := map[string]int{}
	fake.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		if req := kreq.(*kmsg.OffsetFetchRequest); req.Topics != nil {
			mu.Lock()
			byName[req.Group]++
			mu.Unlock()
		}
		return nil, nil, false
	})
	sink := func(name string) *fleet.Connector {
		c := &fleet.Connector{Name: name, Type: connectors.Sink, Group: "connect-" + name}
		c.Config = sortedConfig(map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "in, in2", "name": name})
		return c
	}
	for _, tc := range []struct {
		name       string
		n, fetches int
	}{{"full", 5, 0}, {"partial", 4, 1}} {
		offs, err := r.offsets(ctx, sink(tc.name))
		require.NoError(t, err, tc.name)
		require.Len(t, offs, tc.n, tc.name)
		for i, o := range offs {
			topic, _ := o.Partition.Get("kafka_topic")
			off, _ := o.Offset.Get("kafka_offset")
			require.Equal(t, fmt.Sprint(i+1), fmt.Sprint(off), "%s %v", tc.name, topic)
		}
		mu.Lock()
		require.Equal(t, tc.fetches, byName["connect-"+tc.name], "fetches by name of %s's group", tc.name)
		mu.Unlock()
	}
}

// A sink's topics are described while its group's offsets are fetched, not after: each read
// of a sink's offsets is then one round trip to A's brokers long, not two. A's broker holds
// the fetch of the group's offsets until the Metadata request describing the sink's topic
// comes (a second at most): one after the other, it never comes while the fetch is held.
func TestSinkOffsetsDescribeTheTopicsWhileFetching(t *testing.T) {
	fake, brokers, cl, ctx := connectCluster(t)
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "in", 2, nil))
	require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-snk", []kafkaio.GroupOffset{
		{Topic: "in", Partition: 0, Offset: 3}, {Topic: "in", Partition: 1, Offset: 4}}))
	r := readConnectTopics(ctx, t, brokers)

	described := make(chan struct{})
	closeDescribed := sync.OnceFunc(func() { close(described) })
	fake.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		for _, tp := range kreq.(*kmsg.MetadataRequest).Topics {
			if tp.Topic != nil && *tp.Topic == "in" {
				closeDescribed()
			}
		}
		return nil, nil, false
	})
	var mu sync.Mutex
	held, whileHeld := 0, 0
	fake.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		if req := kreq.(*kmsg.OffsetFetchRequest); req.Group != "connect-snk" || req.Topics != nil {
			return nil, nil, false
		}
		fake.SleepControl(func() {
			select {
			case <-described:
				mu.Lock()
				whileHeld++
				mu.Unlock()
			case <-time.After(time.Second):
			}
		})
		mu.Lock()
		held++
		mu.Unlock()
		return nil, nil, false
	})
	c := &fleet.Connector{Name: "snk", Type: connectors.Sink, Group: "connect-snk"}
	c.Config = sortedConfig(map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "in", "name": "snk"})
	offs, err := r.offsets(ctx, c)
	require.NoError(t, err)
	require.Len(t, offs, 2)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, held, "fetches of the group's offsets")
	require.Equal(t, 1, whileHeld, "the sink's topic described while its group's offsets were fetched")
}
