package integration

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// A wait for a result that starts before the agent created the result topic waits for the
// topic within its own timeout: a loaded host took more than readAll's five seconds to start
// an agent, and TestCrashThenRefusedRedelivery failed on "Unknown Topic Or Partition" while the
// agent was still starting.
func TestWaitResultBeforeTheResultTopicExists(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	cl := newClient(t, testConfig(c))
	res := &events.Result{RequestID: "r-late-topic", RequestSource: "/integration-test", Name: "c", Type: "source"}
	msg, err := events.ResultMessage(cl.cfg.ResultTopic, events.TypeCreateSucceeded, res, "")
	require.NoError(t, err)
	written := make(chan error, 1)
	go func() { written <- createAndWrite(cl.cfg.Brokers, cl.cfg.ResultTopic, msg, 6*time.Second) }()
	got := cl.waitResult(res.RequestID, 60*time.Second)
	require.Equal(t, "c", got.Data.Name)
	require.NoError(t, <-written)
}

// createAndWrite creates topic after a pause, as an agent starting late does, and writes msg to
// it, asking again while the writer's layout predates the topic.
func createAndWrite(brokers []string, topic string, msg kafka.Message, pause time.Duration) error {
	time.Sleep(pause)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &kafka.Transport{MetadataTTL: time.Second}
	defer tr.CloseIdleConnections()
	kc := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	if _, err := kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
		return err
	}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	msg.Topic = ""
	for {
		err := w.WriteMessages(ctx, msg)
		if err == nil || !unknownTopic(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
