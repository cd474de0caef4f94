package mm2

import (
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// startKfake starts an in-process kfake broker on 127.0.0.1 holding topics (name -> partitions)
// and returns it.
func startKfake(t testing.TB, topics map[string]int32) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// produceInTransactions writes recs in transactions of size records each, committed: every
// commit leaves a marker after its records, an offset with no record (MM2 run with
// exactly.once.source.support writes its copies so).
func produceInTransactions(t testing.TB, brokers []string, size int, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(fmt.Sprintf("mm2-task-%d", time.Now().UnixNano())))
	require.NoError(t, err)
	defer cl.Close()
	ctx := testContext(t)
	for len(recs) > 0 {
		n := min(size, len(recs))
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(ctx, recs[:n]...).FirstErr())
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
		recs = recs[n:]
	}
}

// deleteRecords moves the log start of topic/partition to offset, as retention does.
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
	require.NoError(t, kerrOf(resp.Topics[0].Partitions[0].ErrorCode))
}

func kerrOf(code int16) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("kafka error code %d", code)
}

// same makes record k of src identical to record of (same timestamp, key, value and headers):
// a producer that sent one record twice.
func same(src *kgo.Record, of *kgo.Record) *kgo.Record {
	c := *of
	c.Topic, c.Partition = src.Topic, src.Partition
	return &c
}

// copies returns MM2's copies on topic of A's records from, in order.
func copies(topic string, from []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(from))
	for i, r := range from {
		out[i] = mirrored(r, topic)
	}
	return out
}

// createTopic creates topic with partitions and configs.
func createTopic(t testing.TB, brokers []string, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	require.NoError(t, err)
	require.NoError(t, kerrOf(resp.Topics[0].ErrorCode))
}

// offsetOn returns the offset on B of the record equal to want in tp (the fixture's own
// check of where a copy landed).
func offsetOn(t testing.TB, brokers []string, tp TopicPartition, want *kgo.Record) int64 {
	t.Helper()
	w := record{Time: want.Timestamp, Key: want.Key, Value: want.Value}
	for _, h := range want.Headers {
		w.Headers = append(w.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers})
	scan, err := search(testContext(t), cl, tp, 0, -1, w, scanBounds{limit: 1000})
	require.NoError(t, err)
	require.True(t, scan.Found, "%s holds the record", tp)
	return scan.At
}

// The partitions of the way back's scenario: one partition of orders per case, each with its
// own records on A (sourceRecord: every record distinct, unless a case repeats one).
const (
	backPlain      = 0 // A 5..49 at B 0..44; syncs (5,0) (25,20) (45,40)
	backSkip       = 1 // A 30..32 not copied (a transformation dropped them), their sync lost: A 0..29 at B 0..29, A 33..49 at B 30..46; syncs (0,0) (20,20)
	backMarkers    = 2 // A 0..39 copied in transactions of 4 (a marker after every 4 records on B); A 35 repeats A 23; sync (0,0)
	backDeletedOnA = 3 // A 0..49 at B 0..49, then A's records below 30 deleted; A 45 repeats A 25; sync (0,0)
	backRestart    = 4 // A 0..29 at B 0..29, then MM2 restarted and copied A 20..39 again at B 30..49, the restart's sync lost; A 39 repeats A 29; syncs (0,0) (29,29) (35,45)
	backGiven      = 5 // A 0..49 at B 0..49, no syncs
	backNoCut      = 6 // A 0..49 at B 0..49, no syncs
	backPartitions = 7

	// compacted, compacted on both clusters: partition 0 with A 29 updating A 27 on A and on
	// B; partition 1 with A 29 updating A 27 on A only (B holds copies of A 0..28).
	compactedTopic = "compacted"
	compactedOnB   = 0
	compactedOnA   = 1
)

// backClusters is the way back across MM2: A holds orders and compacted, and the offset syncs
// of the A->B flow (offset-syncs.topic.location=source); B holds MM2's copies, A.orders and
// A.compacted.
type backClusters struct {
	a, b   []string
	policy Policy
	// onA are A's records, by topic and partition, by offset.
	onA map[TopicPartition][]*kgo.Record
}

func newBackClusters(t *testing.T) backClusters {
	t.Helper()
	policy := Policy{SourceAlias: "A", TargetAlias: "B"}
	orders, compacted := policy.RemoteTopic("orders"), policy.RemoteTopic(compactedTopic)
	syncsTopic := policy.OffsetSyncsTopic("B")
	kcA, kcB := startKfake(t, nil), startKfake(t, nil)
	a, b := kcA.ListenAddrs(), kcB.ListenAddrs()
	// Kept for ever: the records' timestamps are of 2023, and Compact applies retention too.
	keep := map[string]string{"retention.ms": "-1"}
	compact := map[string]string{"retention.ms": "-1", "cleanup.policy": "compact"}
	createTopic(t, a, "orders", backPartitions, keep)
	createTopic(t, a, syncsTopic, 1, compact)
	createTopic(t, a, compactedTopic, 2, compact)
	createTopic(t, b, orders, backPartitions, keep)
	createTopic(t, b, compacted, 2, compact)
	c := backClusters{a: a, b: b, policy: policy, onA: map[TopicPartition][]*kgo.Record{}}

	for _, topic := range []string{"orders", compactedTopic} {
		n, last := int32(backPartitions), int64(50)
		if topic == compactedTopic {
			n, last = 2, 31
		}
		for p := range n {
			tp := TopicPartition{topic, p}
			for k := range last {
				c.onA[tp] = append(c.onA[tp], sourceRecord(topic, p, k))
			}
		}
	}
	repeat := func(tp TopicPartition, at, of int64) {
		r := *c.onA[tp][of]
		c.onA[tp][at] = &r
	}
	repeat(TopicPartition{"orders", backMarkers}, 35, 23)
	repeat(TopicPartition{"orders", backDeletedOnA}, 45, 25)
	repeat(TopicPartition{"orders", backRestart}, 39, 29)
	for p := range int32(2) {
		// A 29 is an update of A 27: the same key, another value and timestamp.
		tp := TopicPartition{compactedTopic, p}
		c.onA[tp][29].Key = c.onA[tp][27].Key
	}
	o := func(p int32) []*kgo.Record { return c.onA[TopicPartition{"orders", p}] }
	k := func(p int32) []*kgo.Record { return c.onA[TopicPartition{compactedTopic, p}] }
	var onA []*kgo.Record
	for p := range int32(backPartitions) {
		onA = append(onA, o(p)...)
	}
	// compacted: A 0..29 in one batch per partition, A 30 in another (compaction keeps the
	// last batch as it is).
	onA = append(onA, k(0)[:30]...)
	onA = append(onA, k(1)[:30]...)
	produce(t, a, onA...)
	produce(t, a, k(0)[30], k(1)[30])

	var onB []*kgo.Record
	onB = append(onB, copies(orders, o(backPlain)[5:])...)
	onB = append(onB, copies(orders, o(backSkip)[:30])...)
	onB = append(onB, copies(orders, o(backSkip)[33:])...)
	onB = append(onB, copies(orders, o(backDeletedOnA))...)
	onB = append(onB, copies(orders, o(backRestart)[:30])...)
	onB = append(onB, copies(orders, o(backRestart)[20:40])...)
	onB = append(onB, copies(orders, o(backGiven))...)
	onB = append(onB, copies(orders, o(backNoCut))...)
	onB = append(onB, copies(compacted, k(compactedOnB)[:30])...)
	onB = append(onB, copies(compacted, k(compactedOnA)[:29])...)
	produce(t, b, onB...)
	produce(t, b, mirrored(k(compactedOnB)[30], compacted))
	produceInTransactions(t, b, 4, copies(orders, o(backMarkers)[:40])...)
	deleteRecords(t, a, "orders", backDeletedOnA, 30)
	kcA.Compact()
	kcB.Compact()

	var syncs []*kgo.Record
	for _, s := range []OffsetSync{
		{"orders", backPlain, 5, 0}, {"orders", backPlain, 25, 20}, {"orders", backPlain, 45, 40},
		{"orders", backSkip, 0, 0}, {"orders", backSkip, 20, 20},
		{"orders", backMarkers, 0, 0},
		{"orders", backDeletedOnA, 0, 0},
		{"orders", backRestart, 0, 0}, {"orders", backRestart, 29, 29}, {"orders", backRestart, 35, 45},
		{compactedTopic, compactedOnB, 0, 0}, {compactedTopic, compactedOnA, 0, 0},
	} {
		syncs = append(syncs, syncRecord(t, syncsTopic, s))
	}
	produce(t, a, syncs...)
	return c
}

func (c backClusters) translator(t *testing.T, withSyncs bool) *Translator {
	t.Helper()
	cfg := Config{Target: kafkaio.Options{Brokers: c.b}, Source: kafkaio.Options{Brokers: c.a}, Policy: c.policy, ScanLimit: 100}
	if withSyncs {
		cfg.OffsetSyncs = &OffsetSyncsLocation{Cluster: kafkaio.Options{Brokers: c.a}, Topic: c.policy.OffsetSyncsTopic("B")}
	}
	tr, err := NewTranslator(cfg)
	require.NoError(t, err)
	return tr
}

// TestBack carries a sink's committed offsets on B back to A: per case, the partition on B,
// its committed offset, and what A gets. Each case's comment says what breaks it.
func TestBack(t *testing.T) {
	c := newBackClusters(t)
	onB := func(topic string, p int32) TopicPartition { return TopicPartition{c.policy.RemoteTopic(topic), p} }
	markers := onB("orders", backMarkers)
	// Where A 23's copy landed: 23 records and 5 markers before it.
	at23 := offsetOn(t, c.b, markers, mirrored(c.onA[TopicPartition{"orders", backMarkers}][23], markers.Topic))
	require.Equal(t, int64(23+5), at23, "a marker after every 4 records")
	given := []Cut{{Source: TopicPartition{"orders", backGiven}, Upstream: 42, Downstream: 40}}
	tests := []struct {
		name      string
		target    TopicPartition
		committed int64
		verdict   BackVerdict
		offset    int64
		start     int64  // the bound's start, when a search ran
		reason    string // a substring
	}{
		// B 29 is A 34: from the sync (25,20), 10 records on B put it at 34 or above.
		{name: "plain copy", target: onB("orders", backPlain), committed: 30, verdict: BackCarried, offset: 35, start: 34,
			reason: "B's record at offset 29 of A.orders-0 (the last its sink consumed) is A's record 34 of orders-0"},
		// On the sync's own offset: the sync before it bounds the search.
		{name: "on a sync", target: onB("orders", backPlain), committed: 20, verdict: BackCarried, offset: 25, start: 24},
		// A skipped 30..32 and the sync that says so was lost: the bound (34) stays below the
		// original (37), and the search walks up to it.
		{name: "upstream gap without its sync", target: onB("orders", backSkip), committed: 35, verdict: BackCarried, offset: 38, start: 34},
		// Markers on B: 24 records below A 23's copy, not 29 offsets. The bound by offsets (28)
		// would start past A 23 and take A 35, which repeats it: 11 records skipped.
		{name: "transaction markers on B", target: markers, committed: at23 + 1, verdict: BackCarried, offset: 24, start: 23},
		// A deleted its records below 30 (A 25 among them): A 45 repeats A 25 and must not be
		// taken for it.
		{name: "original deleted on A", target: onB("orders", backDeletedOnA), committed: 26, verdict: BackNotCarried, offset: -1,
			reason: "A's log start of orders-3 is 30, past offset 25"},
		// A re-replication whose sync was lost: the sync (29,29) puts B 39 (A 29's second copy)
		// at A 39 or above, where A 39 repeats A 29; the sync (35,45) above says it is below 35.
		{name: "restart without its sync", target: onB("orders", backRestart), committed: 40, verdict: BackNotCarried, offset: -1,
			reason: "the cuts contradict each other"},
		{name: "given cut on the committed offset", target: onB("orders", backGiven), committed: 40, verdict: BackCarried, offset: 42,
			reason: "B's committed offset 40 is on a cut (given: upstream 42, downstream 40)"},
		{name: "no cut", target: onB("orders", backNoCut), committed: 10, verdict: BackNotCarried, offset: -1,
			reason: "holds no offset sync of orders-6 below downstream offset 10"},
		{name: "nothing consumed", target: onB("orders", backNoCut), committed: 0, verdict: BackNotCarried, offset: -1,
			reason: "B's sink consumed nothing of A.orders-6"},
		// Compaction removed B 27 (and A 27): B's last record below 28 is B 26, A 26; A resumes
		// at 27, where A's next record is A 28, as B's sink's.
		{name: "compacted on B", target: onB(compactedTopic, compactedOnB), committed: 28, verdict: BackCarried, offset: 27, start: 26},
		// A 27, B's last consumed record, was compacted away on A (A 29 updated it).
		{name: "compacted on A", target: onB(compactedTopic, compactedOnA), committed: 28, verdict: BackNotCarried, offset: -1, start: 27,
			reason: "is not on A from offset 27"},
		{name: "not a copy of A's topic", target: TopicPartition{"events", 0}, committed: 5, verdict: BackNotCarried, offset: -1,
			reason: "A holds no checkpoints of a MirrorMaker 2 flow from B (no topic B.checkpoints.internal)"},
	}
	committed := map[TopicPartition]int64{}
	single := map[TopicPartition]BackPartition{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := c.translator(t, true)
			got, err := tr.Back(testContext(t), "connect-sink-b", map[TopicPartition]int64{tt.target: tt.committed}, given...)
			require.NoError(t, err)
			require.Len(t, got.Partitions, 1)
			p := got.Partitions[0]
			require.Equal(t, tt.verdict, p.Verdict, p.Reason)
			require.Equal(t, tt.offset, p.Offset, p.Reason)
			require.Contains(t, p.Reason, tt.reason)
			if tt.start != 0 {
				require.NotNil(t, p.Bound, p.Reason)
				require.Equal(t, tt.start, p.Bound.Start, p.Reason)
			}
			if up, ok := c.policy.UpstreamTopic(tt.target.Topic); ok {
				require.Equal(t, TopicPartition{up, tt.target.Partition}, p.Source)
			}
			committed[tt.target], single[tt.target] = tt.committed, p
		})
	}
	// A group's partitions at once, as a rollback asks (a few searches in parallel): the same
	// answers as one by one.
	got, err := c.translator(t, true).Back(testContext(t), "connect-sink-b", committed, given...)
	require.NoError(t, err)
	require.Len(t, got.Partitions, len(single))
	carried := 0
	for _, p := range got.Partitions {
		require.Equal(t, single[p.Target], p)
		if p.Verdict == BackCarried {
			carried++
		}
	}
	require.Equal(t, carried, got.Carried)
	require.Equal(t, len(single)-carried, got.NotCarried)
}

// TestBackReverseCheckpoints carries a sink's offsets on a topic B produced itself through a
// MirrorMaker 2 flow from B to A: its copy on A (B.events) and its checkpoints there
// (B.checkpoints.internal on A).
func TestBackReverseCheckpoints(t *testing.T) {
	policy := Policy{SourceAlias: "A", TargetAlias: "B"}
	rev, err := policy.Reverse()
	require.NoError(t, err)
	a, b := startKfake(t, nil).ListenAddrs(), startKfake(t, nil).ListenAddrs()
	keep := map[string]string{"retention.ms": "-1"}
	createTopic(t, b, "events", 1, keep)
	createTopic(t, a, "B.events", 1, keep)
	createTopic(t, a, rev.CheckpointsTopic(), 1, keep)
	var onB, onA []*kgo.Record
	for k := range int64(30) {
		onB = append(onB, sourceRecord("events", 0, k))
	}
	// A's copy: three records of an earlier generation (deleted on B since), then B 0..29 at
	// A 3..32.
	for k := range int64(3) {
		onA = append(onA, mirrored(sourceRecord("events-old", 0, k), "B.events"))
	}
	onA = append(onA, copies("B.events", onB)...)
	produce(t, b, onB...)
	produce(t, a, onA...)
	cp := rev.CheckpointsTopic()
	produce(t, a,
		// MM2's translation of B 20 (a sync at B 18 = A 21): A 22, below the exact A 23.
		checkpointRecord(t, cp, Checkpoint{Group: "connect-sink-b", Topic: "B.events", Partition: 0, UpstreamOffset: 20, Offset: 22}),
		checkpointRecord(t, cp, Checkpoint{Group: "connect-stale", Topic: "B.events", Partition: 0, UpstreamOffset: 28, Offset: 31}))
	tests := []struct {
		name    string
		policy  Policy
		group   string
		d       int64
		verdict BackVerdict
		offset  int64
		reason  string
	}{
		{name: "checkpoint and record", policy: policy, group: "connect-sink-b", d: 25, verdict: BackCarried, offset: 28,
			reason: "B's record at offset 24 of events-0 (the last its sink consumed) is record 27 of A's copy B.events-0"},
		{name: "checkpoint at the committed offset", policy: policy, group: "connect-sink-b", d: 20, verdict: BackCarried, offset: 23},
		{name: "stale checkpoint", policy: policy, group: "connect-stale", d: 25, verdict: BackNotCarried, offset: -1,
			reason: "the checkpoint's upstream offset 28 is above B's committed offset 25"},
		{name: "no checkpoint for the group", policy: policy, group: "connect-other", d: 25, verdict: BackNotCarried, offset: -1,
			reason: `B.checkpoints.internal holds no checkpoint of group "connect-other" for B.events-0`},
		{name: "without B's alias", policy: Policy{SourceAlias: "A"}, group: "connect-sink-b", d: 25, verdict: BackNotCarried, offset: -1,
			reason: "events is not a copy of a topic of A under the default policy, and without B's alias"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Source: kafkaio.Options{Brokers: a}, Policy: tt.policy, ScanLimit: 100})
			require.NoError(t, err)
			got, err := tr.Back(testContext(t), tt.group, map[TopicPartition]int64{{"events", 0}: tt.d})
			require.NoError(t, err)
			p := got.Partitions[0]
			require.Equal(t, tt.verdict, p.Verdict, p.Reason)
			require.Equal(t, tt.offset, p.Offset, p.Reason)
			require.Contains(t, p.Reason, tt.reason)
			if tt.policy.TargetAlias != "" {
				require.Equal(t, TopicPartition{"B.events", 0}, p.Source)
			}
		})
	}
}

// TestBackNeedsTheSourceCluster: Back reads A's records.
func TestBackNeedsTheSourceCluster(t *testing.T) {
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: []string{"127.0.0.1:1"}}, Policy: Policy{SourceAlias: "A"}})
	require.NoError(t, err)
	_, err = tr.Back(testContext(t), "g", map[TopicPartition]int64{{"A.orders", 0}: 1})
	require.ErrorContains(t, err, `back translation of group "g": no source cluster to read A's records from`)
}
