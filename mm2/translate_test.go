package mm2

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// startCluster starts an in-process kfake broker on 127.0.0.1 holding topics (name ->
// partitions) and returns its address.
func startCluster(t testing.TB, topics map[string]int32) []string {
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

// produce writes records to their own partitions, in order, and waits for the acks.
func produce(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(100000))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(testContext(t), recs...).FirstErr())
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sourceRecord is record k of topic/partition on A: distinct key, value, timestamp and header.
func sourceRecord(topic string, partition int32, k int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition,
		Key:       []byte(fmt.Sprintf("%s-%d-key-%d", topic, partition, k)),
		Value:     []byte(fmt.Sprintf(`{"n":%d}`, k)),
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(partition)*1_000_000 + k),
		Headers:   []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprint(k % 7))}}}
}

// mirrored is the copy MM2 writes of a source record on B: the same timestamp, key, value and
// headers on the renamed topic.
func mirrored(r *kgo.Record, topic string) *kgo.Record {
	c := *r
	c.Topic = topic
	return &c
}

func checkpointRecord(t testing.TB, topic string, c Checkpoint) *kgo.Record {
	t.Helper()
	k, err := c.Key()
	require.NoError(t, err)
	v, err := c.Value()
	require.NoError(t, err)
	return &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v}
}

func syncRecord(t testing.TB, topic string, s OffsetSync) *kgo.Record {
	t.Helper()
	k, err := s.Key()
	require.NoError(t, err)
	v, err := s.Value()
	require.NoError(t, err)
	return &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v}
}

// twoClusters is the MM2 scenario: A holds orders (2 partitions: 50 records each) and payments
// (1 partition: 30 records) and, with MM2's default offset-syncs.topic.location=source, the
// offset syncs; B holds the mirrored topics, renamed by policy, with MM2-like offset shifts and
// the checkpoints topic:
//   - orders-0: MM2 started after A's records 0..4 had expired: B offset = A offset - 5;
//   - orders-1: MM2 restarted and mirrored 15..19 twice: A 0..19 at B 0..19, A 15..49 at B 20..54;
//   - payments-0: B offset = A offset.
type twoClusters struct {
	a, b   []string
	policy Policy
}

func newTwoClusters(t *testing.T, policy Policy) twoClusters {
	t.Helper()
	orders, payments := policy.RemoteTopic("orders"), policy.RemoteTopic("payments")
	syncsTopic := policy.OffsetSyncsTopic("B")
	a := startCluster(t, map[string]int32{"orders": 2, "payments": 1, syncsTopic: 1})
	b := startCluster(t, map[string]int32{orders: 2, payments: 1, policy.CheckpointsTopic(): 1})

	var onA, onB []*kgo.Record
	for k := range int64(50) {
		onA = append(onA, sourceRecord("orders", 0, k), sourceRecord("orders", 1, k))
	}
	for k := range int64(30) {
		onA = append(onA, sourceRecord("payments", 0, k))
		onB = append(onB, mirrored(sourceRecord("payments", 0, k), payments))
	}
	for k := int64(5); k < 50; k++ {
		onB = append(onB, mirrored(sourceRecord("orders", 0, k), orders))
	}
	for k := int64(0); k < 20; k++ {
		onB = append(onB, mirrored(sourceRecord("orders", 1, k), orders))
	}
	for k := int64(15); k < 50; k++ {
		onB = append(onB, mirrored(sourceRecord("orders", 1, k), orders))
	}
	// Offset syncs as MM2 writes them (upstream, downstream); on orders-1 the restart moved
	// the upstream backwards, which clears what came before.
	for _, s := range []OffsetSync{
		{"orders", 0, 5, 0}, {"orders", 0, 25, 20}, {"orders", 0, 40, 35}, {"orders", 0, 45, 40},
		{"orders", 1, 0, 0}, {"orders", 1, 19, 19}, {"orders", 1, 15, 20}, {"orders", 1, 30, 35}, {"orders", 1, 35, 40}, {"orders", 1, 49, 54},
		{"payments", 0, 0, 0}, {"payments", 0, 29, 29},
	} {
		onA = append(onA, syncRecord(t, syncsTopic, s))
	}
	produce(t, a, onA...)
	produce(t, b, onB...)

	cp := policy.CheckpointsTopic()
	wrapped := checkpointRecord(t, cp, Checkpoint{Group: "connect-wrapped", Topic: orders, Partition: 0, UpstreamOffset: 40, Offset: 35})
	wrapped.Key = []byte(`"` + base64.StdEncoding.EncodeToString(wrapped.Key) + `"`)
	wrapped.Value = []byte(`{"schema":{"type":"bytes","optional":false},"payload":"` + base64.StdEncoding.EncodeToString(wrapped.Value) + `"}`)
	trailing := checkpointRecord(t, cp, Checkpoint{Group: "connect-trailing", Topic: orders, Partition: 0, UpstreamOffset: 1, Offset: 0})
	trailing.Key = append(trailing.Key, 0)
	produce(t, b,
		// connect-exact: current checkpoints, the offsets MM2 translates from the syncs (40,35), (30,35).
		checkpointRecord(t, cp, Checkpoint{Group: "connect-exact", Topic: orders, Partition: 0, UpstreamOffset: 40, Offset: 35}),
		checkpointRecord(t, cp, Checkpoint{Group: "connect-exact", Topic: orders, Partition: 1, UpstreamOffset: 30, Offset: 35}),
		// connect-lagging: checkpoints of older commits, translated from syncs (25,20) and (0,0).
		checkpointRecord(t, cp, Checkpoint{Group: "connect-lagging", Topic: orders, Partition: 0, UpstreamOffset: 20, Offset: 16}),
		checkpointRecord(t, cp, Checkpoint{Group: "connect-lagging", Topic: orders, Partition: 0, UpstreamOffset: 30, Offset: 21}),
		checkpointRecord(t, cp, Checkpoint{Group: "connect-lagging", Topic: orders, Partition: 1, UpstreamOffset: 5, Offset: 1}),
		// connect-stale: a checkpoint of an older generation, above the group's commit.
		checkpointRecord(t, cp, Checkpoint{Group: "connect-stale", Topic: orders, Partition: 0, UpstreamOffset: 48, Offset: 43}),
		// connect-partial: payments checkpointed, orders not.
		checkpointRecord(t, cp, Checkpoint{Group: "connect-partial", Topic: payments, Partition: 0, UpstreamOffset: 29, Offset: 29, Metadata: "m"}),
		// connect-version: a value of a future version.
		func() *kgo.Record {
			r := checkpointRecord(t, cp, Checkpoint{Group: "connect-version", Topic: orders, Partition: 0, UpstreamOffset: 10, Offset: 5})
			r.Value[1] = 1
			return r
		}(),
		wrapped, trailing,
		// A record no group can be named for.
		&kgo.Record{Topic: cp, Partition: 0, Key: []byte{0, 5, 'a'}, Value: []byte{1}},
		checkpointRecord(t, cp, Checkpoint{Group: "billing-app", Topic: payments, Partition: 0, UpstreamOffset: 3, Offset: 3}),
	)
	return twoClusters{a: a, b: b, policy: policy}
}

func (c twoClusters) translator(t *testing.T, mod func(*Config)) *Translator {
	t.Helper()
	cfg := Config{Target: kafkaio.Options{Brokers: c.b}, Source: kafkaio.Options{Brokers: c.a}, Policy: c.policy,
		Wait: 1500 * time.Millisecond, PollInterval: 100 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := NewTranslator(cfg)
	require.NoError(t, err)
	return tr
}

func i64(v int64) *int64 { return &v }

func TestTranslateGroups(t *testing.T) {
	for _, policy := range []Policy{{SourceAlias: "A"}, {Kind: PolicyIdentity, SourceAlias: "A"}} {
		t.Run(string(policy.kind()), func(t *testing.T) {
			c := newTwoClusters(t, policy)
			orders, payments := policy.RemoteTopic("orders"), policy.RemoteTopic("payments")
			o0, o1, p0 := TopicPartition{"orders", 0}, TopicPartition{"orders", 1}, TopicPartition{"payments", 0}
			b0, b1, bp := TopicPartition{orders, 0}, TopicPartition{orders, 1}, TopicPartition{payments, 0}
			withSyncs := policy.kind() == PolicyDefault // the identity run has no offset syncs
			bounded := func(v int64) *int64 {
				if withSyncs {
					return i64(v)
				}
				return nil
			}
			tests := []struct {
				name     string
				group    string
				offsets  map[TopicPartition]int64
				exact    bool
				verdicts map[TopicPartition]Verdict // by source partition
				want     map[TopicPartition]int64   // by target partition
				report   Report
				reasons  map[TopicPartition]string // substrings, by source partition
				trap     bool
				waits    bool
			}{
				{name: "exact checkpoints", group: "connect-exact", offsets: map[TopicPartition]int64{o0: 40, o1: 30},
					verdicts: map[TopicPartition]Verdict{o0: VerdictExact, o1: VerdictExact},
					want:     map[TopicPartition]int64{b0: 35, b1: 35},
					report:   Report{Partitions: 2, Exact: 2, ReplayBound: i64(0)}},
				{name: "lagging checkpoints replay", group: "connect-lagging", offsets: map[TopicPartition]int64{o0: 45, o1: 18},
					verdicts: map[TopicPartition]Verdict{o0: VerdictReplay, o1: VerdictReplay},
					want:     map[TopicPartition]int64{b0: 21, b1: 1},
					// orders-0: B 21..39 (A 26..44) replayed: 19; orders-1: the syncs before the
					// restart are gone, (15,20) bounds it: B 1..20 plus A 16..17 = 22 (17 really).
					report:  Report{Partitions: 2, Replay: 2, ReplayBound: bounded(19 + 22)},
					reasons: map[TopicPartition]string{o0: "checkpoint lags: upstreamOffset 30, committed offset 45"}},
				{name: "lagging checkpoints refined by exact", group: "connect-lagging", offsets: map[TopicPartition]int64{o0: 45, o1: 18}, exact: true,
					verdicts: map[TopicPartition]Verdict{o0: VerdictExact, o1: VerdictExact},
					// A 44 is at B 39; A 17 is at B 17 (its first copy).
					want:   map[TopicPartition]int64{b0: 40, b1: 18},
					report: Report{Partitions: 2, Exact: 2, ReplayBound: i64(0)}},
				{name: "exact checkpoints confirmed by exact", group: "connect-exact", offsets: map[TopicPartition]int64{o0: 40, o1: 30}, exact: true,
					verdicts: map[TopicPartition]Verdict{o0: VerdictExact, o1: VerdictExact},
					want:     map[TopicPartition]int64{b0: 35, b1: 35},
					report:   Report{Partitions: 2, Exact: 2, ReplayBound: i64(0)}},
				{name: "no checkpoint at all: group filter trap", group: "connect-none", offsets: map[TopicPartition]int64{o0: 10},
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing},
					want:     map[TopicPartition]int64{},
					report:   Report{Partitions: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons:  map[TopicPartition]string{o0: "groups.exclude (console-consumer-.*, connect-.*, __.*)"},
					trap:     true, waits: true},
				{name: "stale checkpoint above g refused", group: "connect-stale", offsets: map[TopicPartition]int64{o0: 20}, exact: true,
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing},
					want:     map[TopicPartition]int64{},
					report:   Report{Partitions: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons:  map[TopicPartition]string{o0: "stale checkpoint refused: its upstreamOffset 48 is above the committed offset 20"},
					waits:    true},
				{name: "partition without checkpoint", group: "connect-partial", offsets: map[TopicPartition]int64{o0: 12, p0: 29},
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing, p0: VerdictExact},
					want:     map[TopicPartition]int64{bp: 29},
					report:   Report{Partitions: 2, Exact: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons: map[TopicPartition]string{o0: "no checkpoint for this partition (MM2 has no offset sync for it yet, " +
						"filters its topic out, or the group is behind the oldest sync MM2 keeps); 1 records of " + policy.CheckpointsTopic() +
						" could not be read at all, the last at offset 10: checkpoint key field group: oversized_length: length 5, 1 bytes left"},
					waits: true},
				{name: "converter-wrapped checkpoint", group: "connect-wrapped", offsets: map[TopicPartition]int64{o0: 40},
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing},
					want:     map[TopicPartition]int64{},
					report:   Report{Partitions: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons:  map[TopicPartition]string{o0: "converter_wrapped"},
					waits:    true},
				{name: "checkpoint key with trailing bytes", group: "connect-trailing", offsets: map[TopicPartition]int64{o0: 1},
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing},
					want:     map[TopicPartition]int64{},
					report:   Report{Partitions: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons:  map[TopicPartition]string{o0: "checkpoint record at offset 9 of A.checkpoints.internal refused: checkpoint key: trailing_bytes"},
					waits:    true},
				{name: "version 1 checkpoint", group: "connect-version", offsets: map[TopicPartition]int64{o0: 10},
					verdicts: map[TopicPartition]Verdict{o0: VerdictMissing},
					want:     map[TopicPartition]int64{},
					report:   Report{Partitions: 1, Missing: 1, ReplayBound: i64(0), MissingPartitions: []string{b0.String()}},
					reasons:  map[TopicPartition]string{o0: "unsupported_version: version 1"},
					waits:    true},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tr := c.translator(t, func(cfg *Config) {
						cfg.Exact = tt.exact
						if withSyncs {
							cfg.OffsetSyncs = &OffsetSyncsLocation{Cluster: kafkaio.Options{Brokers: c.a}, Topic: policy.OffsetSyncsTopic("B")}
						}
					})
					got, err := tr.TranslateGroup(testContext(t), tt.group, tt.offsets)
					require.NoError(t, err)
					require.Equal(t, tt.group, got.Group)
					verdicts := map[TopicPartition]Verdict{}
					for _, p := range got.Partitions {
						verdicts[p.Source] = p.Verdict
						if p.Verdict == VerdictMissing {
							require.Equal(t, int64(-1), p.Offset)
						}
						require.Equal(t, policy.RemoteTopic(p.Source.Topic), p.Target.Topic)
						if want, ok := tt.reasons[p.Source]; ok {
							require.Contains(t, p.Reason, want)
						}
					}
					require.Equal(t, tt.verdicts, verdicts)
					require.Equal(t, tt.want, got.Offsets())
					tt.report.Policy = policy.kind()
					if tt.report.MissingPartitions == nil {
						tt.report.MissingPartitions = []string{}
					}
					require.Equal(t, tt.report, got.Report)
					require.Equal(t, tt.trap, got.GroupFilterTrap != "", got.GroupFilterTrap)
					if tt.waits {
						require.GreaterOrEqual(t, got.Waited, 1500*time.Millisecond)
					} else {
						require.Less(t, got.Waited, time.Second, "nothing to wait for")
					}
				})
			}
		})
	}
}

// TestTranslateConcurrentGroups: one Translator serves several groups at once (run with -race),
// and a failed --exact scan leaves the checkpoint's verdict with the failure noted.
func TestTranslateConcurrentGroups(t *testing.T) {
	policy := Policy{SourceAlias: "A"}
	c := newTwoClusters(t, policy)
	produce(t, c.b, checkpointRecord(t, policy.CheckpointsTopic(),
		Checkpoint{Group: "connect-unmirrored", Topic: "A.refunds", Partition: 0, UpstreamOffset: 5, Offset: 5}))
	tr := c.translator(t, func(cfg *Config) {
		cfg.Exact = true
		cfg.OffsetSyncs = &OffsetSyncsLocation{Cluster: kafkaio.Options{Brokers: c.a}, Topic: policy.OffsetSyncsTopic("B")}
	})
	tests := []struct {
		name    string
		group   string
		offsets map[TopicPartition]int64
		want    map[TopicPartition]int64
	}{
		{name: "exact", group: "connect-exact", offsets: map[TopicPartition]int64{{"orders", 0}: 40, {"orders", 1}: 30},
			want: map[TopicPartition]int64{{"A.orders", 0}: 35, {"A.orders", 1}: 35}},
		{name: "lagging", group: "connect-lagging", offsets: map[TopicPartition]int64{{"orders", 0}: 45, {"orders", 1}: 18},
			want: map[TopicPartition]int64{{"A.orders", 0}: 40, {"A.orders", 1}: 18}},
		{name: "partial", group: "connect-partial", offsets: map[TopicPartition]int64{{"payments", 0}: 29},
			want: map[TopicPartition]int64{{"A.payments", 0}: 29}},
		{name: "unmirrored", group: "connect-unmirrored", offsets: map[TopicPartition]int64{{"refunds", 0}: 5},
			want: map[TopicPartition]int64{{"A.refunds", 0}: 5}},
	}
	results := make([]Translation, len(tests))
	errs := make([]error, len(tests))
	var wg sync.WaitGroup
	for i, tt := range tests {
		wg.Go(func() { results[i], errs[i] = tr.TranslateGroup(testContext(t), tt.group, tt.offsets) })
	}
	wg.Wait()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, errs[i])
			require.Equal(t, tt.want, results[i].Offsets())
			require.True(t, results[i].AllExact())
		})
	}
	scan := results[3].Partitions[0].Scan
	require.NotNil(t, scan)
	require.False(t, scan.Found)
	require.Contains(t, scan.Note, `"refunds"`)
}
