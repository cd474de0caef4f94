package migrate

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A sink translated through MirrorMaker 2 is listed with A's committed offset on A's topic,
// the offset placed on B's renamed topic and the partition's translation verdict; a source
// with its own offsets topic names it; a failed connector is not listed.
func TestNewCutover(t *testing.T) {
	sinkPart := func(topic string) jsonvalue.Map {
		return jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: topic}}
	}
	srcOffsets := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "filename", Value: "f"}}, Offset: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}}}
	sinkB := []events.ConnectorOffset{{Partition: sinkPart("A.orders"), Offset: kafkaOffset(8)}}
	rep := &Report{MigrationID: "m-1", From: "a:9092", To: "b:9092", Connectors: []*Entry{
		{Name: "src", TargetName: "src-b", Type: "source", Outcome: OutcomeSucceeded,
			connector: &Connector{Name: "src", Type: connectors.Source, Offsets: srcOffsets},
			Body: &Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSource"}, {Key: "offsets.storage.topic", Value: "own"}},
				InitialOffsets: srcOffsets, HasOffsets: true}},
		{Name: "sink", TargetName: "sink-b", Type: "sink", Outcome: OutcomeSucceeded,
			connector: &Connector{Name: "sink", Type: connectors.Sink, Offsets: []events.ConnectorOffset{{Partition: sinkPart("orders"), Offset: kafkaOffset(10)}}},
			Body:      &Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSink"}}, InitialOffsets: sinkB, HasOffsets: true},
			Translation: &SinkTranslation{all: []mm2.PartitionTranslation{{Source: mm2.TopicPartition{Topic: "orders"}, Target: mm2.TopicPartition{Topic: "A.orders"},
				Committed: 10, Verdict: mm2.VerdictReplay, Offset: 8}}}},
		{Name: "failed", TargetName: "failed", Type: "source", Outcome: OutcomeFailed, connector: &Connector{Name: "failed"}},
	}}
	c := NewCutover(rep, "connect-offsets", nil)
	require.Len(t, c.Connectors, 2)
	src, sink := c.Connectors[0], c.Connectors[1]
	require.Equal(t, "own", src.OffsetsTopic)
	require.Equal(t, "as read", src.Partitions[0].Translation)
	require.Equal(t, "connect-sink-b", sink.Group)
	p := sink.Partitions[0]
	require.Equal(t, "replay", p.Translation)
	require.Equal(t, `{"kafka_offset":10}`, partitionKey(p.OnA))
	require.Equal(t, `{"kafka_offset":8}`, partitionKey(p.Placed))
	require.Equal(t, VerdictWaiting, p.Verdict)

	p.Verdict, p.Detail = VerdictMismatch, "group on B committed 5, before the 8 placed"
	var out bytes.Buffer
	require.NoError(t, c.WriteSummary(&out))
	require.Equal(t, "cutover of migration m-1: 2 partitions of 2 connectors: 0 verified, 1 waiting, 1 mismatch, 0 unordered\n"+
		`mismatch: sink-b {"kafka_partition":0,"kafka_topic":"A.orders"}: group on B committed 5, before the 8 placed`+"\n"+
		"waiting: B has committed nothing new yet for 1 partitions (src-b): run migrate --verify again once they have traffic\n", out.String())
	require.False(t, c.OK())
}

// A connector born PAUSED or STOPPED on B commits nothing until it is resumed: the
// verification reads B once for it and says why it waits, instead of holding the run until its
// timeout; a running one without traffic is still waited for.
func TestVerifyDoesNotWaitForIdleConnectors(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, offsetstore.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
	part := jsonvalue.Map{{Key: "filename", Value: "f"}}
	placed := jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond}
	defer w.Close()
	for _, name := range []string{"paused", "running"} {
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
			Key: offsetstore.AppendKey(nil, name, offsetstore.JavaHashMapOrder(part)), Value: []byte(`{"position":30}`)}))
	}
	cutover := func(names ...string) *Cutover {
		c := &Cutover{MigrationID: "m-1", OffsetsTopic: "connect-offsets"}
		for _, name := range names {
			state := StateRunning
			if name == "paused" {
				state = StatePaused
			}
			c.Connectors = append(c.Connectors, &CutoverConnector{Name: name, TargetName: name, Type: "source", Class: "FileStreamSource",
				OffsetsTopic: "connect-offsets", State: state,
				Partitions: []*CutoverPartition{{Partition: part, OnA: placed, Placed: placed, Verdict: VerdictWaiting}}})
		}
		return c
	}

	idle := cutover("paused")
	require.NoError(t, VerifyCutover(ctx, idle, VerifyCutoverOptions{Brokers: brokers, Timeout: time.Hour, Poll: 50 * time.Millisecond}))
	require.NoError(t, ctx.Err(), "returned after one read, not at the timeout")
	p := idle.Connectors[0].Partitions[0]
	require.Equal(t, VerdictWaiting, p.Verdict)
	require.Contains(t, p.Detail, "born PAUSED on B: it commits nothing until it is resumed")

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	both := cutover("paused", "running")
	err := VerifyCutover(short, both, VerifyCutoverOptions{Brokers: brokers, Timeout: time.Hour, Poll: 50 * time.Millisecond})
	deadline, _ := short.Deadline()
	require.False(t, time.Now().Before(deadline.Add(-100*time.Millisecond)),
		"a running connector without traffic is waited for, to the end of ctx (returned %v)", err)
	require.NotContains(t, both.Connectors[1].Partitions[0].Detail, "born")
}
