package offsetstore

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

const (
	testConfigTopic  = "connect-configs"
	testOffsetsTopic = "connect-offsets"
)

// startKafka starts an in-process kfake broker on 127.0.0.1 and returns its address.
func startKafka(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// startFakeStore is startStore that also returns the broker, for tests that inject faults.
func startFakeStore(t testing.TB) (*kfake.Cluster, []string, *Store) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	createConnectTopics(t, brokers)
	return c, brokers, runStore(t, brokers)
}

// startStore starts a kfake broker with Connect's topics and a running, loaded Store on it.
func startStore(t testing.TB) (*Store, []string) {
	t.Helper()
	brokers := startKafka(t)
	createConnectTopics(t, brokers)
	s := runStore(t, brokers)
	return s, brokers
}

func createConnectTopics(t testing.TB, brokers []string) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, CheckConnectTopics(testContext(t), cl, testConfigTopic, testOffsetsTopic, true))
}

func runStore(t testing.TB, brokers []string) *Store {
	t.Helper()
	s, err := New(Options{Brokers: brokers, ConfigTopic: testConfigTopic, OffsetsTopic: testOffsetsTopic})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, s.Close())
	})
	require.NoError(t, s.WaitReady(testContext(t)))
	return s
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writeRaw writes msgs with a bare kafka.Writer, as another Connect worker would.
func writeRaw(t testing.TB, brokers []string, msgs ...kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: explicitBalancer{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer func() { require.NoError(t, w.Close()) }()
	require.NoError(t, w.WriteMessages(testContext(t), msgs...))
}

// writeOther writes msgs in one Produce request through a producer of its own: another
// worker's writes, which the store must fetch (its own it applies as it writes them).
func writeOther(t testing.TB, brokers []string, msgs ...kafka.Message) {
	t.Helper()
	for _, err := range kafkaio.NewProducer(kafkaio.Options{Brokers: brokers}).Produce(testContext(t), msgs) {
		require.NoError(t, err)
	}
}

// explicitBalancer sends each message to its Partition field: kafka-go's Writer ignores
// Message.Partition unless the Balancer reads it.
type explicitBalancer struct{}

func (explicitBalancer) Balance(msg kafka.Message, _ ...int) int { return msg.Partition }

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
