package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func startKfake(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	return startKfakeCluster(t, opts...).ListenAddrs()
}

// startKfakeCluster is startKfake's cluster, for a test that watches its requests.
func startKfakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	return kafkatest.Kfake(t, opts...)
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
		"sink": {typ: "sink", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "orders", "name": "sink"}},
	}}
	rep, err := Export(ctx, Options{
		Topics:     &source.TopicsSource{Brokers: brokers, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		ConnectURL: fc.serve(t), StopSource: true, StablePause: 100 * time.Millisecond, StopPoll: 20 * time.Millisecond,
		StopTimeout: 30 * time.Second, States: &source.StateStore{Brokers: brokers},
	})
	require.NoError(t, err)
	done := time.Now()
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	require.Equal(t, apply.OutcomePlanned, e.Outcome, e.Message)
	require.True(t, done.After(<-left), "the barrier ended before the group's last member left")
	require.Equal(t, []events.ConnectorOffset{{
		Partition: jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "orders"}},
		Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number("2")}},
	}}, e.Body.InitialOffsets, "the offsets of the final commit")
}
