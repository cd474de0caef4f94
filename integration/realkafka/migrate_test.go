package realkafka_test

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestMigrateStopSource proves migrate on real Kafka (tier.MigrateStopSource): a busy
// FileStream source and sink are moved between two clusters of the tier's version with
// `offsetagent migrate --stop-source`; every line and record is produced and written once.
func TestMigrateStopSource(t *testing.T) {
	tier.MigrateStopSource(t, env, tier.Migration{LibB: peers.lib})
}

// startClusterB starts a second Kafka cluster of the tier's version: a broker, a Connect worker
// on it and an agent writing to that worker's topics, all stopped after the tests.
func startClusterB(ctx context.Context, t *testing.T, name string) (*realkafka.Broker, *realkafka.Worker, *agentProc) {
	t.Helper()
	b, w, a := env.StartClusterB(ctx, t, name, peers.lib)
	return b, w, wrapAgent(a)
}

// valuesFrom returns n JSON string values "<prefix>-<i>" from first.
func valuesFrom(prefix string, first, n int) []string { return tier.ValuesFrom(prefix, first, n) }

func createTopicOn(t *testing.T, brokers []string, topic string, partitions int) {
	t.Helper()
	tier.CreateTopicOn(t, brokers, topic, partitions)
}

func produceTo(t *testing.T, brokers []string, topic string, values ...string) {
	t.Helper()
	tier.ProduceTo(t, brokers, topic, values...)
}

// topicValues returns the values of partition 0 of topic on brokers (none when it does not
// exist yet).
func topicValues(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	return tier.TopicValues(t, brokers, topic)
}

// topicMessages returns the records of partition 0 of topic on brokers (none when it does not
// exist yet).
func topicMessages(t *testing.T, brokers []string, topic string) []kafka.Message {
	t.Helper()
	return tier.TopicMessages(t, brokers, topic)
}

// waitTopic waits until topic holds at least n records.
func waitTopic(t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	return tier.WaitTopic(t, brokers, topic, n)
}

// fileLines returns the lines of a FileStream sink's file (none before it exists).
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	return tier.FileLines(t, path)
}
