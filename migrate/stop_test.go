package migrate

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func startKfake(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	return startKfakeCluster(t, opts...).ListenAddrs()
}

// startKfakeCluster is startKfake's cluster, for a test that watches its requests.
func startKfakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") })}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// With A's topics and its REST API, a sink's stop barrier also waits until its consumer group
// on A has no members (a zombie task still consuming), then reads the group's offsets.
func TestStopBarrierWaitsForSinkGroupMembers(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &kafka.Transport{MetadataTTL: time.Second}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	_, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "orders", NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Transport: tr, BatchTimeout: time.Millisecond}
	defer w.Close()
	require.NoError(t, w.WriteMessages(ctx,
		kafka.Message{Topic: "connect-configs", Key: []byte("connector-sink"),
			Value: []byte(`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","topics":"orders","name":"sink"}}`)},
		kafka.Message{Topic: "orders", Value: []byte("a")}, kafka.Message{Topic: "orders", Value: []byte("b")}))

	// A "task" of the sink that keeps its group membership after the REST stop: it has read and
	// committed the first record and commits the second only when it leaves.
	member := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: "connect-sink", Topic: "orders",
		MaxWait: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	m, err := member.FetchMessage(ctx)
	require.NoError(t, err)
	require.NoError(t, member.CommitMessages(ctx, m))
	last, err := member.FetchMessage(ctx)
	require.NoError(t, err)
	left := make(chan time.Time, 1)
	go func() {
		time.Sleep(2 * time.Second)
		_ = member.CommitMessages(ctx, last)
		_ = member.Close()
		left <- time.Now()
	}()

	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"sink": {typ: "sink", state: StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "orders", "name": "sink"}},
	}}
	rep, err := Export(ctx, Options{
		Topics:     &TopicsSource{Brokers: brokers, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		ConnectURL: fc.serve(t), StopSource: true, StablePause: 100 * time.Millisecond, StopPoll: 20 * time.Millisecond,
		StopTimeout: 30 * time.Second, States: &StateStore{Brokers: brokers},
	})
	require.NoError(t, err)
	done := time.Now()
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	require.Equal(t, OutcomePlanned, e.Outcome, e.Message)
	require.True(t, done.After(<-left), "the barrier ended before the group's last member left")
	require.Equal(t, []events.ConnectorOffset{{
		Partition: jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "orders"}},
		Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number("2")}},
	}}, e.Body.InitialOffsets, "the offsets of the final commit")
}

// TestStopBarriersOfAWaveWaitTogether: the stop barriers of a wave wait for their stable
// pauses together; only their calls to A are bounded (stopConcurrency at a time). With a
// pause longer than the test, every connector of the wave must still get its PUT /stop: on
// the code that held a slot for a whole barrier, only stopConcurrency ever did.
func TestStopBarriersOfAWaveWaitTogether(t *testing.T) {
	brokers := startKfake(t)
	const n = 3 * stopConcurrency
	all := make(chan struct{})
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{}}
	fc.onStop = func(string) {
		if len(fc.stops) == n { // onStop runs under fc.mu, after the stop was noted
			close(all)
		}
	}
	for i := range n {
		name := fmt.Sprintf("file-%02d", i)
		fc.connectors[name] = &fakeConnector{typ: "source", state: StateRunning, stopAt: -1,
			config:  map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "f", "topic": "t", "name": name},
			offsets: []string{`{"partition":{"filename":"f"},"offset":{"position":1}}`}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Export(ctx, Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: time.Hour,
			StopPoll: 10 * time.Millisecond, StopTimeout: 2 * time.Hour, States: &StateStore{Brokers: brokers}})
		done <- err
	}()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		fc.mu.Lock()
		got := len(fc.stops)
		fc.mu.Unlock()
		t.Errorf("%d of %d connectors got their PUT /stop: the stable pauses of a wave ran %d at a time", got, n, got)
	}
	cancel()
	<-done
}
