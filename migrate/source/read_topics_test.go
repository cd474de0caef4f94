package source

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Listing A reads its offsets topic to the end once, not once per source connector: each
// read is a round trip, and a fleet's thousands of sources made them one after the other
// (the listing of 10,000 connectors spent seconds on them). Each source still gets its
// offsets.
func TestListReadsTheOffsetsTopicToItsEndOnce(t *testing.T) {
	const sources = 100
	fake, brokers, _, ctx := connectCluster(t)
	var configs, offsets []kafka.Message
	for i := range sources {
		name := fmt.Sprintf("src-%03d", i)
		configs = append(configs, kafka.Message{Key: []byte("connector-" + name), Value: fmt.Appendf(nil,
			`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"%s.txt","topic":"t","name":%q}}`, name, name)})
		key := fmt.Appendf(nil, `[%q,{"filename":"%s.txt"}]`, name, name)
		offsets = append(offsets, kafka.Message{Key: key, Value: fmt.Appendf(nil, `{"position":%d}`, i), Partition: offsetstore.PartitionFor(key, 25)})
	}
	for topic, msgs := range map[string][]kafka.Message{"connect-configs": configs, "connect-offsets": offsets} {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond}
		if topic == "connect-offsets" {
			w.Balancer = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })
		}
		require.NoError(t, w.WriteMessages(ctx, msgs...))
		require.NoError(t, w.Close())
	}
	r := readConnectTopics(ctx, t, brokers)

	var mu sync.Mutex
	fetches, counting := 0, true
	fake.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		for _, tp := range kreq.(*kmsg.FetchRequest).Topics {
			mu.Lock()
			if counting && tp.Topic == "connect-offsets" {
				fetches++
			}
			mu.Unlock()
		}
		return nil, nil, false
	})
	cs, err := r.list(ctx)
	mu.Lock()
	counting = false
	n := fetches
	mu.Unlock()
	require.NoError(t, err)
	require.Len(t, cs, sources)
	for i, c := range cs {
		require.Empty(t, c.Problem, c.Name)
		require.Len(t, c.Offsets, 1, c.Name)
		pos, _ := c.Offsets[0].Offset.Get("position")
		require.Equal(t, fmt.Sprint(i), fmt.Sprint(pos), c.Name)
	}
	// The one read to the end, and the polls of the view tailing the topic meanwhile (a
	// few, as many as the listing takes time): one per source before.
	require.Less(t, n, sources/4, "fetches of the offsets topic while listing %d sources", sources)
}

// Listing A reads its sinks' groups side by side (sinkReads at a time), not one after the
// other: each sink's read is a few round trips to its group's coordinator, and a fleet's
// thousands of sinks spent seconds on them before anything could stop. A's broker holds each
// fetch of these groups' offsets until 5 are in flight at once: one after the other, only one
// ever was.
func TestListReadsTheSinksSideBySide(t *testing.T) {
	const sinks, want = 10, 5
	fake, brokers, cl, ctx := connectCluster(t)
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "in", 2, nil))
	var configs []kafka.Message
	for i := range sinks {
		name := fmt.Sprintf("snk-%02d", i)
		configs = append(configs, kafka.Message{Key: []byte("connector-" + name), Value: fmt.Appendf(nil,
			`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"%s.txt","topics":"in","name":%q}}`, name, name)})
		require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-"+name,
			[]kafkaio.GroupOffset{{Topic: "in", Partition: 0, Offset: int64(i)}, {Topic: "in", Partition: 1, Offset: int64(2 * i)}}))
	}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "connect-configs", BatchTimeout: time.Millisecond}
	require.NoError(t, w.WriteMessages(ctx, configs...))
	require.NoError(t, w.Close())
	r := readConnectTopics(ctx, t, brokers)

	most := kafkatest.HoldGroupReads(fake, want, func(req *kmsg.OffsetFetchRequest) bool {
		// only the fetch of every partition of the group is held
		return strings.HasPrefix(req.Group, "connect-snk-") && req.Topics == nil
	})
	cs, err := r.list(ctx)
	require.NoError(t, err)
	require.Len(t, cs, sinks)
	for i, c := range cs {
		require.Empty(t, c.Problem, c.Name)
		require.Len(t, c.Offsets, 2, c.Name)
		off, _ := c.Offsets[1].Offset.Get("kafka_offset")
		require.Equal(t, fmt.Sprint(2*i), fmt.Sprint(off), c.Name)
	}
	require.GreaterOrEqual(t, most(), want, "sinks' group reads in flight at once")
}

// A source's offsets read from the one offsets topic it uses are not indexed by key: the view
// holds one record per key already, and each of a fleet's sources is read three times over a
// migration (its listing, its stop barrier's two reads). The index (a map and a copy of every
// key) was most of a read's allocations besides the decoding.
func TestSourceOffsetsOfOneTopicAllocations(t *testing.T) {
	_, brokers, _, ctx := connectCluster(t)
	const name, partitions = "src", 10
	var offsets []kafka.Message
	for i := range partitions {
		key := fmt.Appendf(nil, `[%q,{"filename":"f%d.txt"}]`, name, i)
		offsets = append(offsets, kafka.Message{Key: key, Value: fmt.Appendf(nil, `{"position":%d}`, i), Partition: offsetstore.PartitionFor(key, 25)})
	}
	configs := []kafka.Message{{Key: []byte("connector-" + name), Value: fmt.Appendf(nil,
		`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"f.txt","topic":"t","name":%q}}`, name)}}
	for topic, msgs := range map[string][]kafka.Message{"connect-configs": configs, "connect-offsets": offsets} {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, BatchTimeout: time.Millisecond,
			Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })}
		require.NoError(t, w.WriteMessages(ctx, msgs...))
		require.NoError(t, w.Close())
	}
	r := readConnectTopics(ctx, t, brokers)
	cs, err := r.list(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Len(t, cs[0].Offsets, partitions)
	synced := map[string]bool{"connect-offsets": true} // read to its end by the listing
	allocs := alloctest.Least(20, func() {
		offs, err := r.offsetsSynced(ctx, cs[0], synced)
		if err != nil || len(offs) != partitions {
			t.Errorf("offsets: %d, %v", len(offs), err)
		}
	})
	t.Logf("%v allocations reading %d offsets", allocs, partitions)
	require.LessOrEqual(t, allocs, float64(partitions*21/2), "allocations reading a source's %d offsets", partitions)
}
