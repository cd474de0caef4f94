package offsetstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
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

// committedEntries reads the committed offsets of group with franz-go's OffsetFetch (v5+, the
// versions that return the committed leader epoch), as "topic/partition" → "offset=N epoch=E
// metadata=M": what a consumer that joins the group resumes from.
func committedEntries(t testing.TB, brokers []string, group string) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group // every partition of the group (Topics nil)
	resp, err := req.RequestWith(testContext(t), cl)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Version, int16(5), "OffsetFetch without the leader epoch")
	out := map[string]string{}
	add := func(topic string, p int32, offset int64, epoch int32, metadata *string, code int16) {
		require.Zero(t, code, "topic %s partition %d", topic, p)
		if offset >= 0 {
			out[fmt.Sprintf("%s/%d", topic, p)] = fmt.Sprintf("offset=%d epoch=%d metadata=%q", offset, epoch, deref(metadata))
		}
	}
	for _, g := range resp.Groups {
		require.Zero(t, g.ErrorCode, "group %s", g.Group)
		for _, tp := range g.Topics {
			for _, p := range tp.Partitions {
				add(tp.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
			}
		}
	}
	if len(resp.Groups) == 0 {
		require.Zero(t, resp.ErrorCode)
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				add(tp.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
			}
		}
	}
	return out
}

// patchEntries are the entries Connect's PATCH /connectors/NAME/offsets commits for offsets
// ("topic/partition" → offset): Admin.alterConsumerGroupOffsets with `new
// OffsetAndMetadata(offset)`, no leader epoch and empty metadata.
func patchEntries(offsets map[string]int64) map[string]string {
	out := map[string]string{}
	for tp, o := range offsets {
		out[tp] = fmt.Sprintf("offset=%d epoch=-1 metadata=%q", o, "")
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// groupEntry is a committed entry of a group as a consumer or an admin client may have
// written it: offset, committed leader epoch (-1 for none) and metadata.
type groupEntry struct {
	topic     string
	partition int32
	offset    int64
	epoch     int32
	metadata  string
}

// commitEntries commits entries for the empty group with franz-go's OffsetCommit (v6+, the
// versions that carry the committed leader epoch; at most v9, which names topics rather than
// topic ids), as an admin client does (generation -1).
func commitEntries(t testing.TB, brokers []string, group string, entries ...groupEntry) {
	t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(versions))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	for _, e := range entries {
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = e.topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		metadata := e.metadata
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = e.partition, e.offset, e.epoch, &metadata
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
	}
	resp, err := req.RequestWith(testContext(t), cl)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Version, int16(6), "OffsetCommit without the leader epoch")
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			require.Zero(t, p.ErrorCode, "topic %s partition %d", tp.Topic, p.Partition)
		}
	}
}
