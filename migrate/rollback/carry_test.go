package rollback

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/mm2"
)

func startKafka(t testing.TB, topics map[string]int32) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// record is A's record i of orders/p, as MirrorMaker 2 copies it (same timestamp, key,
// value and headers).
func record(topic string, p int32, i int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("k-%d-%d", p, i)), Value: []byte(fmt.Sprintf("v-%d-%d", p, i)),
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(p)*1_000_000 + i), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
}

func deleteRecords(t testing.TB, brokers []string, topic string, partition int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
}

// TestCarry is the carry rule per kind of connector and translation, against kfake brokers
// for A and B: A's orders copied by MirrorMaker 2 to B's A.orders (B's offset j holds A's
// 10+j), its offset syncs on A, and A's topic t with its log start at 25.
func TestCarry(t *testing.T) {
	policy := mm2.Policy{SourceAlias: "A"}
	syncsTopic := policy.OffsetSyncsTopic("B")
	a := startKafka(t, map[string]int32{"orders": 4, "t": 1, syncsTopic: 1})
	b := startKafka(t, map[string]int32{"A.orders": 4})
	var onA, onB []*kgo.Record
	for p := range int32(4) {
		for i := range int64(40) {
			onA = append(onA, record("orders", p, i))
			if i >= 10 {
				c := *record("orders", p, i)
				c.Topic = "A.orders"
				if p == 3 && i == 24 { // B's record 14 of partition 3 is no copy of A's
					c.Value = []byte("other")
				}
				onB = append(onB, &c)
			}
		}
	}
	for i := range int64(30) {
		onA = append(onA, &kgo.Record{Topic: "t", Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	produce(t, a, onA...)
	produce(t, b, onB...)
	deleteRecords(t, a, "t", 0, 25)
	sync := func(p int32, up, down int64) *kgo.Record {
		s := mm2.OffsetSync{Topic: "orders", Partition: p, UpstreamOffset: up, Offset: down}
		k, err := s.Key()
		require.NoError(t, err)
		v, err := s.Value()
		require.NoError(t, err)
		return &kgo.Record{Topic: syncsTopic, Partition: 0, Key: k, Value: v}
	}
	produce(t, a, sync(0, 25, 15), sync(1, 10, 0), sync(3, 10, 0))

	translator := func(t *testing.T) *MM2 {
		tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: b}, Source: kafkaio.Options{Brokers: a}, Policy: policy,
			OffsetSyncs: &mm2.OffsetSyncsLocation{Cluster: kafkaio.Options{Brokers: a}, Topic: syncsTopic}})
		require.NoError(t, err)
		return &MM2{Translator: tr, Policy: policy}
	}
	mmSink := func(p int) Connector {
		return Connector{Name: "snk", Type: TypeSink, Group: "connect-snk-b", Partitions: []Partition{{
			Partition: mapOf(t, fmt.Sprintf(`{"kafka_topic":"A.orders","kafka_partition":%d}`, p)),
			OnA:       mapOf(t, `{"kafka_offset":15}`), Placed: mapOf(t, `{"kafka_offset":5}`), Translation: Replay}}}
	}
	off := func(p, o string) events.ConnectorOffset {
		return events.ConnectorOffset{Partition: mapOf(t, p), Offset: mapOf(t, o)}
	}
	ptr := func(n int64) *int64 { return &n }
	tests := []struct {
		name  string
		c     Connector
		fromB events.ConnectorOffset
		onA   []events.ConnectorOffset
		noMM2 bool
		// want: the verdict, the partition on A, what A resumes at, whether it is patched,
		// replay and skip counts, a part of the detail.
		verdict   Verdict
		partition string
		toA       string
		patched   bool
		replay    *int64
		skip      *int64
		detail    string
	}{
		{name: "source as is", c: Connector{Name: "src", Type: TypeSource},
			fromB: off(`{"filename":"in.txt"}`, `{"position":55}`), verdict: Carried,
			partition: `{"filename":"in.txt"}`, toA: `{"position":55}`, patched: true},
		{name: "source re-keyed back", c: Connector{Name: "dbz", Type: TypeSource, Rekey: &Rekey{Key: "server", From: "orders", To: "orders-b"}},
			fromB: off(`{"server":"orders-b"}`, `{"file":"binlog.7","pos":9}`), verdict: Carried,
			partition: `{"server":"orders"}`, toA: `{"file":"binlog.7","pos":9}`, patched: true, detail: "re-keyed back"},
		{name: "source of another key not re-keyed", c: Connector{Name: "dbz", Type: TypeSource, Rekey: &Rekey{Key: "server", From: "orders", To: "orders-b"}},
			fromB: off(`{"server":"other"}`, `{"pos":1}`), verdict: Carried, partition: `{"server":"other"}`, toA: `{"pos":1}`, patched: true},
		{name: "sink copied", c: Connector{Name: "snk", Type: TypeSink, Partitions: []Partition{{Partition: mapOf(t, `{"kafka_topic":"t","kafka_partition":0}`), Translation: AsRead}}},
			fromB: off(`{"kafka_topic":"t","kafka_partition":0}`, `{"kafka_offset":27}`), verdict: Carried,
			partition: `{"kafka_partition":0,"kafka_topic":"t"}`, toA: `{"kafka_offset":27}`, patched: true},
		{name: "sink copied, log start past", c: Connector{Name: "snk", Type: TypeSink, Partitions: []Partition{{Partition: mapOf(t, `{"kafka_topic":"t","kafka_partition":0}`), Translation: AsRead}}},
			fromB: off(`{"kafka_topic":"t","kafka_partition":"0"}`, `{"kafka_offset":19}`), verdict: Skip,
			partition: `{"kafka_partition":"0","kafka_topic":"t"}`, toA: `{"kafka_offset":19}`, patched: true, skip: ptr(6),
			detail: "A's log start of t/0 is 25, past offset 19 where A resumes: A's consumer skips 6 records"},
		{name: "sink across MirrorMaker 2, sync at d", c: mmSink(0),
			fromB: off(`{"kafka_topic":"A.orders","kafka_partition":0}`, `{"kafka_offset":15}`), verdict: Carried,
			partition: `{"kafka_partition":0,"kafka_topic":"orders"}`, toA: `{"kafka_offset":25}`, patched: true, detail: "is on a cut"},
		{name: "sink across MirrorMaker 2, sync below d, record found", c: mmSink(1),
			fromB: off(`{"kafka_topic":"A.orders","kafka_partition":1}`, `{"kafka_offset":15}`), verdict: Carried,
			partition: `{"kafka_partition":1,"kafka_topic":"orders"}`, toA: `{"kafka_offset":25}`, patched: true,
			detail: "B's record at offset 14 of A.orders-1 (the last its sink consumed) is A's record 24 of orders-1"},
		{name: "sink across MirrorMaker 2, no sync", c: mmSink(2),
			fromB: off(`{"kafka_topic":"A.orders","kafka_partition":2}`, `{"kafka_offset":15}`),
			onA:   []events.ConnectorOffset{off(`{"kafka_topic":"orders","kafka_partition":2}`, `{"kafka_offset":15}`)}, verdict: NotCarried,
			partition: `{"kafka_partition":2,"kafka_topic":"orders"}`, toA: `{"kafka_offset":15}`, replay: ptr(10), detail: "no cut below"},
		{name: "sink across MirrorMaker 2, record not found", c: mmSink(3),
			fromB: off(`{"kafka_topic":"A.orders","kafka_partition":3}`, `{"kafka_offset":15}`), verdict: NotCarried,
			partition: `{"kafka_partition":3,"kafka_topic":"orders"}`, toA: `null`, replay: ptr(10), detail: "is not on A from offset 24"},
		{name: "sink across MirrorMaker 2 without its settings", c: mmSink(1), noMM2: true,
			fromB: off(`{"kafka_topic":"A.orders","kafka_partition":1}`, `{"kafka_offset":15}`), verdict: NotCarried,
			partition: `{"kafka_partition":1,"kafka_topic":"A.orders"}`, toA: `null`, replay: ptr(10), detail: "no MirrorMaker 2 settings"},
		{name: "sink that followed its sources", c: Connector{Name: "snk", Type: TypeSink, Partitions: []Partition{{Partition: mapOf(t, `{"kafka_topic":"t","kafka_partition":0}`), Translation: FollowedSources}}},
			fromB: off(`{"kafka_topic":"t","kafka_partition":0}`, `{"kafka_offset":28}`),
			onA:   []events.ConnectorOffset{off(`{"kafka_topic":"t","kafka_partition":0}`, `{"kafka_offset":29}`)}, verdict: Carried,
			partition: `{"kafka_partition":0,"kafka_topic":"t"}`, toA: `{"kafka_offset":29}`, detail: "followed its sources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{starts: newLogStarts(kafkaio.Options{Brokers: a})}
			if !tt.noMM2 {
				r.opts.MM2 = translator(t)
			}
			p, err := r.plan(testContext(t), &tt.c, []events.ConnectorOffset{tt.fromB}, tt.onA)
			require.NoError(t, err)
			require.Len(t, p.parts, 1)
			got := p.parts[0]
			require.Equal(t, tt.verdict, got.Verdict, got.Detail)
			require.Equal(t, canonical(mapOf(t, tt.partition)), canonical(got.Partition))
			require.Equal(t, canonical(mapOf(t, tt.toA)), canonical(got.ToA))
			require.Equal(t, canonical(tt.fromB.Offset), canonical(got.FromB))
			require.Equal(t, tt.replay, got.Replay)
			require.Equal(t, tt.skip, got.Skip)
			require.Contains(t, got.Detail, tt.detail)
			if tt.patched {
				require.Equal(t, []events.ConnectorOffset{{Partition: got.Partition, Offset: got.ToA}}, p.patch)
			} else {
				require.Empty(t, p.patch)
			}
		})
	}
}
