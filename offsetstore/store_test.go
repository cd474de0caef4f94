package offsetstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

func TestStoreViewsAndSync(t *testing.T) {
	brokers := startKafka(t)
	createConnectTopics(t, brokers)
	ctx := testContext(t)

	// Records present before the store starts are part of its initial load.
	key1 := []byte(`["file-src-1",{"filename":"test.txt"}]`)
	writeRaw(t, brokers,
		kafka.Message{Topic: testConfigTopic, Key: []byte("target-state-file-src-1"), Value: []byte(`{"state":"PAUSED","state.v2":"STOPPED"}`)},
		kafka.Message{Topic: testConfigTopic, Key: []byte("connector-file-src-1"), Value: []byte(`{"properties":{"name":"file-src-1","file":"test.txt"}}`)},
		kafka.Message{Topic: testOffsetsTopic, Partition: PartitionFor(key1, 25), Key: key1, Value: []byte(`{"position":1}`)},
	)
	s := runStore(t, brokers)
	require.True(t, s.Ready())

	props, ok := s.ConnectorConfig("file-src-1")
	require.True(t, ok)
	require.Equal(t, map[string]string{"name": "file-src-1", "file": "test.txt"}, props)
	state, ok := s.config.targetState("file-src-1")
	require.True(t, ok)
	require.Equal(t, TargetStopped, state)
	require.Equal(t, []SourceRecord{{Key: key1, Value: []byte(`{"position":1}`), Partition: 2}}, s.SourceOffsets(testOffsetsTopic, "file-src-1"))

	// Writes by another writer are seen after Sync: an overwrite, a new key, a tombstone.
	key2 := []byte(`["file-src-1",{"filename":"other.txt"}]`)
	writeRaw(t, brokers,
		kafka.Message{Topic: testOffsetsTopic, Partition: PartitionFor(key1, 25), Key: key1, Value: []byte(`{"position":30}`)},
		kafka.Message{Topic: testOffsetsTopic, Partition: PartitionFor(key2, 25), Key: key2, Value: []byte(`{"position":5}`)},
		kafka.Message{Topic: testOffsetsTopic, Partition: 7, Key: []byte(`["other",{}]`), Value: []byte(`{}`)},
		kafka.Message{Topic: testConfigTopic, Key: []byte("target-state-file-src-1")},
		kafka.Message{Topic: testConfigTopic, Key: []byte("connector-x"), Value: []byte(`{"properties":{"name":"x"}}`)},
	)
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	require.NoError(t, s.Sync(ctx, testConfigTopic))
	got := s.SourceOffsets(testOffsetsTopic, "file-src-1")
	require.Len(t, got, 2)
	require.Contains(t, got, SourceRecord{Key: key1, Value: []byte(`{"position":30}`), Partition: 2})
	require.Contains(t, got, SourceRecord{Key: key2, Value: []byte(`{"position":5}`), Partition: PartitionFor(key2, 25)})
	state, _ = s.config.targetState("file-src-1")
	require.Equal(t, TargetStarted, state)
	_, ok = s.ConnectorConfig("x")
	require.True(t, ok)

	require.NoError(t, s.Write(ctx, testOffsetsTopic, []Record{{Key: key1, Partition: -1}, {Key: key2, Partition: -1}}))
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	require.Empty(t, s.SourceOffsets(testOffsetsTopic, "file-src-1"))
	require.Len(t, s.SourceOffsets(testOffsetsTopic, "other"), 1)
	require.Nil(t, s.SourceOffsets("unknown-topic", "other"))
	require.Error(t, s.Sync(ctx, "unknown-topic"))
}

func TestStoreWritePartitions(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	mm2 := []byte(`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`)
	recs := []Record{
		{Key: []byte(`["file-src-1",{"filename":"test.txt"}]`), Value: []byte(`{"position":30}`), Partition: -1},
		{Key: mm2, Value: []byte(`{"offset":7}`), Partition: -1},
		{Key: []byte(`["explicit",{}]`), Value: []byte(`{"offset":1}`), Partition: 11},
	}
	require.NoError(t, s.Write(ctx, testOffsetsTopic, recs))

	tests := []struct {
		name      string
		partition int
		key       []byte
	}{
		{name: "computed file source", partition: 2, key: recs[0].Key},
		{name: "computed mm2", partition: 19, key: mm2},
		{name: "explicit", partition: 11, key: recs[2].Key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: testOffsetsTopic, Partition: tt.partition, MaxWait: 100 * time.Millisecond})
			defer func() { require.NoError(t, r.Close()) }()
			m, err := r.FetchMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, tt.key, m.Key)
		})
	}

	err := s.Write(ctx, testOffsetsTopic, []Record{{Key: []byte("k"), Partition: 25}})
	var werr *kafkaio.WriteError
	require.ErrorAs(t, err, &werr)
	require.Equal(t, 0, werr.Written)
	require.Equal(t, []int{0}, werr.Failed)

	err = s.Write(ctx, "no-such-topic", []Record{{Key: []byte("k"), Partition: -1}, {Key: []byte("l"), Partition: -1}})
	require.ErrorAs(t, err, &werr)
	require.Equal(t, []int{0, 1}, werr.Failed)
	require.ErrorIs(t, err, kafka.UnknownTopicOrPartition)
}

// The view of a written topic holds what was written, records or encoded batches (of the
// topic's partition count, or of another, which WriteEncoded partitions again).
func TestStoreWriteRoundTrip(t *testing.T) {
	const n = 10_000
	encode := func(recs []Record, partitions int) *Encoded {
		e := kafkaio.NewBatchEncoder(partitions, n*40)
		for _, r := range recs {
			e.Append(PartitionFor(r.Key, partitions), r.Key, r.Value)
		}
		return e.Encoded()
	}
	tests := []struct {
		name  string
		write func(s *Store, recs []Record) error
	}{
		{name: "records", write: func(s *Store, recs []Record) error {
			return s.Write(testContext(t), testOffsetsTopic, recs)
		}},
		{name: "encoded", write: func(s *Store, recs []Record) error {
			return s.WriteEncoded(testContext(t), testOffsetsTopic, encode(recs, 25))
		}},
		{name: "encoded for another partition count", write: func(s *Store, recs []Record) error {
			return s.WriteEncoded(testContext(t), testOffsetsTopic, encode(recs, 7))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testStoreWriteRoundTrip(t, n, tt.write)
		})
	}
}

func testStoreWriteRoundTrip(t *testing.T, n int, write func(*Store, []Record) error) {
	s, _ := startStore(t)
	ctx := testContext(t)
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			Key:       fmt.Appendf(nil, `["bulk",{"file":"f-%05d"}]`, i),
			Value:     fmt.Appendf(nil, `{"position":%d}`, i),
			Partition: -1,
		}
	}
	require.NoError(t, write(s, recs))
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	got := s.SourceOffsets(testOffsetsTopic, "bulk")
	require.Len(t, got, n)
	byKey := map[string]SourceRecord{}
	for _, r := range got {
		byKey[string(r.Key)] = r
	}
	for _, r := range recs {
		g, ok := byKey[string(r.Key)]
		require.True(t, ok)
		require.Equal(t, r.Value, g.Value)
		require.Equal(t, PartitionFor(r.Key, 25), g.Partition)
	}
	for i := 1; i < len(got); i++ {
		require.LessOrEqual(t, got[i-1].Partition, got[i].Partition)
	}
}

func TestStoreTrack(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "conn-offsets", 3, map[string]string{"cleanup.policy": "compact"}))
	writeRaw(t, brokers, kafka.Message{Topic: "conn-offsets", Partition: 1, Key: []byte(`["c",{"a":"b"}]`), Value: []byte(`{"o":1}`)})

	require.NoError(t, s.Track(ctx, "conn-offsets"))
	require.NoError(t, s.Track(ctx, "conn-offsets")) // idempotent
	require.Equal(t, []SourceRecord{{Key: []byte(`["c",{"a":"b"}]`), Value: []byte(`{"o":1}`), Partition: 1}}, s.SourceOffsets("conn-offsets", "c"))
	require.Empty(t, s.SourceOffsets(testOffsetsTopic, "c"))

	require.NoError(t, s.Write(ctx, "conn-offsets", []Record{{Key: []byte(`["c",{"a":"b"}]`), Partition: 1}}))
	require.NoError(t, s.Sync(ctx, "conn-offsets"))
	require.Empty(t, s.SourceOffsets("conn-offsets", "c"))

	require.ErrorIs(t, s.Track(ctx, "missing-topic"), kafka.UnknownTopicOrPartition)
}

func TestStoreGroups(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "orders", 3, nil))
	const group = "connect-sink-1"

	got, err := s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Empty(t, got)
	members, err := s.GroupMembers(ctx, group)
	require.NoError(t, err)
	require.Zero(t, members)

	want := []GroupOffset{{Topic: "orders", Partition: 0, Offset: 10}, {Topic: "orders", Partition: 2, Offset: 0}}
	require.NoError(t, s.CommitGroupOffsets(ctx, group, []GroupOffset{want[1], want[0]}))
	got, err = s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Equal(t, want, got)
	// What Connect's PATCH commits: no leader epoch, empty metadata.
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{"orders/0": 10, "orders/2": 0}), kafkatest.GroupEntries(t, brokers, group))
	members, err = s.GroupMembers(ctx, group)
	require.NoError(t, err)
	require.Zero(t, members)

	require.NoError(t, s.DeleteGroupOffsets(ctx, group, []GroupOffset{{Topic: "orders", Partition: 2}}))
	got, err = s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Equal(t, want[:1], got)

	require.NoError(t, s.DeleteGroup(ctx, group))
	got, err = s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, s.DeleteGroup(ctx, group)) // not found = deleted
	require.NoError(t, s.DeleteGroup(ctx, "never-existed"))

	require.Error(t, s.CommitGroupOffsets(ctx, group, []GroupOffset{{Topic: "orders", Partition: 0, Offset: -1}}))
}

func TestStoreGroupWithMembers(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "orders", 1, nil))
	const group = "connect-running"

	// A running sink task: a consumer-group member.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "orders", GroupID: group, MaxWait: 100 * time.Millisecond})
	defer func() { require.NoError(t, r.Close()) }()
	fetchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _, _ = r.FetchMessage(fetchCtx) }()
	require.Eventually(t, func() bool {
		n, err := s.GroupMembers(ctx, group)
		return err == nil && n == 1
	}, 20*time.Second, 100*time.Millisecond)

	require.ErrorIs(t, s.DeleteGroup(ctx, group), ErrGroupNotEmpty)
	require.ErrorIs(t, s.CommitGroupOffsets(ctx, group, []GroupOffset{{Topic: "orders", Partition: 0, Offset: 1}}), ErrGroupNotEmpty)
	g, err := s.DescribeGroup(ctx, group)
	require.NoError(t, err)
	require.Equal(t, GroupActivity{State: "Stable", Members: 1}, g)
	require.True(t, g.Live())
	g, err = s.DescribeGroup(ctx, "never-existed")
	require.NoError(t, err)
	require.False(t, g.Live(), "an unknown group: %+v", g)
}

func TestGroupActivityLive(t *testing.T) {
	tests := []struct {
		name string
		g    GroupActivity
		live bool
	}{
		{name: "unknown group", g: GroupActivity{}},
		{name: "empty: a stopped connector's group", g: GroupActivity{State: "Empty"}},
		{name: "dead", g: GroupActivity{State: "Dead"}},
		{name: "stable with members", g: GroupActivity{State: "Stable", Members: 2}, live: true},
		{name: "rebalancing, members not listed", g: GroupActivity{State: "PreparingRebalance"}, live: true},
		{name: "completing a rebalance", g: GroupActivity{State: "CompletingRebalance", Members: 1}, live: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.live, tt.g.Live())
		})
	}
}

func TestCheckConnectTopics(t *testing.T) {
	brokers := startKafka(t)
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	compact := map[string]string{"cleanup.policy": "compact"}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "cfg-ok", 1, compact))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "cfg-two", 2, compact))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "cfg-delete", 1, map[string]string{"cleanup.policy": "delete"}))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "off-ok", 25, compact))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "off-both", 5, map[string]string{"cleanup.policy": "compact,delete"}))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "off-default", 5, nil))

	tests := []struct {
		name            string
		config, offsets string
		create          bool
		wantErr         string
	}{
		{name: "ok", config: "cfg-ok", offsets: "off-ok"},
		{name: "missing config topic", config: "cfg-missing", offsets: "off-ok", wantErr: "Unknown Topic Or Partition"},
		{name: "missing offsets topic", config: "cfg-ok", offsets: "off-missing", wantErr: "Unknown Topic Or Partition"},
		{name: "two partition config topic", config: "cfg-two", offsets: "off-ok",
			wantErr: "Topic 'cfg-two' supplied via the 'config.storage.topic' property is required to have a single partition in order to guarantee consistency of connector configurations, but found 2 partitions."},
		{name: "config topic not compact", config: "cfg-delete", offsets: "off-ok", wantErr: `cleanup.policy="delete"`},
		{name: "offsets topic compact and delete", config: "cfg-ok", offsets: "off-both", wantErr: `cleanup.policy="compact,delete"`},
		{name: "offsets topic default policy", config: "cfg-ok", offsets: "off-default", wantErr: "offset.storage.topic"},
		{name: "create", config: "cfg-new", offsets: "off-new", create: true},
		{name: "create keeps existing", config: "cfg-two", offsets: "off-new2", create: true, wantErr: "but found 2 partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConnectTopics(ctx, cl, tt.config, tt.offsets, tt.create)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
	n, err := kafkaio.PartitionCount(ctx, cl, "off-new")
	require.NoError(t, err)
	require.Equal(t, 25, n)
}

func TestLogStopped(t *testing.T) {
	brokers := startKafka(t)
	l, err := kafkaio.NewLog(kafkaio.Options{Brokers: brokers}, "missing", func([]kafka.Message) {})
	require.NoError(t, err)
	ctx := testContext(t)
	err = l.Run(ctx)
	require.ErrorIs(t, err, kafka.UnknownTopicOrPartition)
	require.ErrorIs(t, l.WaitReady(ctx), kafka.UnknownTopicOrPartition)
	require.ErrorIs(t, l.Sync(ctx), kafka.UnknownTopicOrPartition)
	require.Error(t, l.Run(ctx)) // once only
	require.False(t, errors.Is(l.Sync(ctx), context.Canceled))
}

// A write to many partitions is one Produce request per leader, and a partition the broker
// refuses fails only its own records.
func TestStoreWriteGroupedProduce(t *testing.T) {
	c, _, s := startFakeStore(t)
	ctx := testContext(t)

	seen := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: testOffsetsTopic, Observe: true, Count: -1})
	recs := make([]Record, 10)
	for i := range recs {
		recs[i] = Record{Key: fmt.Appendf(nil, `["grouped",{"p":%d}]`, i), Value: []byte(`{"o":1}`), Partition: i}
	}
	require.NoError(t, s.Write(ctx, testOffsetsTopic, recs))
	require.Equal(t, 1, seen.Hits(), "Produce requests for 10 partitions")
	seen.Remove()

	refused := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: testOffsetsTopic, Partitions: []int32{7}, Err: kerr.PolicyViolation, Count: -1})
	recs = []Record{
		{Key: []byte(`["mixed",{"p":"a"}]`), Value: []byte(`{"o":1}`), Partition: 7},
		{Key: []byte(`["mixed",{"p":"b"}]`), Value: []byte(`{"o":1}`), Partition: 8},
		{Key: []byte(`["mixed",{"p":"c"}]`), Value: []byte(`{"o":1}`), Partition: 7},
		{Key: []byte(`["mixed",{"p":"d"}]`), Value: []byte(`{"o":1}`), Partition: 9},
	}
	err := s.Write(ctx, testOffsetsTopic, recs)
	var werr *kafkaio.WriteError
	require.ErrorAs(t, err, &werr)
	require.Equal(t, []int{0, 2}, werr.Failed)
	require.Equal(t, 2, werr.Written)
	require.ErrorIs(t, err, kafka.PolicyViolation)
	refused.Remove()

	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	var keys []string
	for _, r := range s.SourceOffsets(testOffsetsTopic, "mixed") {
		keys = append(keys, string(r.Key))
	}
	require.ElementsMatch(t, []string{`["mixed",{"p":"b"}]`, `["mixed",{"p":"d"}]`}, keys)
}

// Sync reads the end offsets of all partitions with one request per leader (kafka-go's
// ListOffsets sends one per partition), and still waits for records on any partition.
func TestSyncOneRequest(t *testing.T) {
	c, brokers, s := startFakeStore(t)
	ctx := testContext(t)

	for _, p := range []int{0, 13, 24} {
		key := fmt.Appendf(nil, `["sync",{"p":%d}]`, p)
		writeRaw(t, brokers, kafka.Message{Topic: testOffsetsTopic, Partition: p, Key: key, Value: []byte(`{"o":1}`)})
		fetches := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1,
			When: func(r kmsg.Request) bool { return r.(*kmsg.FetchRequest).MaxWaitMillis == 0 }})
		lists := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Observe: true, Count: -1})
		require.NoError(t, s.Sync(ctx, testOffsetsTopic))
		require.Len(t, s.SourceOffsets(testOffsetsTopic, "sync"), slices.Index([]int{0, 13, 24}, p)+1)
		require.Equal(t, 1, fetches.Hits(), "end-offset fetches for 25 partitions")
		require.Equal(t, 0, lists.Hits(), "ListOffsets requests")
		fetches.Remove()
		lists.Remove()
	}
}

// After the initial load the offsets view fetches all partitions of a leader in one request:
// a write to ten partitions wakes a fetch or two, not ten. A partition whose broker says it
// is not the leader makes the view group its partitions again, and it goes on reading.
func TestLogFetchGrouping(t *testing.T) {
	c, brokers, s := startFakeStore(t)
	ctx := testContext(t)
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	time.Sleep(100 * time.Millisecond) // let the loops regroup after the load

	longPoll := func(r kmsg.Request) bool {
		f := r.(*kmsg.FetchRequest)
		return f.MaxWaitMillis > 0 && len(f.Topics) == 1 && f.Topics[0].Topic == testOffsetsTopic
	}
	fetches := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1, When: longPoll})
	// Another worker's records (the store's own are applied without a fetch).
	msgs := make([]kafka.Message, 10)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: testOffsetsTopic, Key: fmt.Appendf(nil, `["grouped",{"p":%d}]`, i), Value: []byte(`{"o":1}`), Partition: 2 * i}
	}
	writeOther(t, brokers, msgs...)
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	require.Len(t, s.SourceOffsets(testOffsetsTopic, "grouped"), 10)
	require.LessOrEqual(t, fetches.Hits(), 3, "long-poll fetches to read 10 partitions")
	fetches.Remove()

	// The next long poll of partition 5 is refused twice as if leadership had moved.
	refused := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: testOffsetsTopic, Partitions: []int32{5},
		Err: kerr.NotLeaderForPartition, Count: 2, When: longPoll})
	// A write to partition 6 first ends the long poll already waiting (the fault only sees
	// requests that arrive after it).
	writeOther(t, brokers, kafka.Message{Topic: testOffsetsTopic, Key: []byte(`["moved",{"p":6}]`), Value: []byte(`{"o":6}`), Partition: 6})
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	writeOther(t, brokers, kafka.Message{Topic: testOffsetsTopic, Key: []byte(`["moved",{"p":5}]`), Value: []byte(`{"o":5}`), Partition: 5})
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	require.Len(t, s.SourceOffsets(testOffsetsTopic, "moved"), 2)
	require.Positive(t, refused.Hits())
}

// A partition whose fetches keep failing (for a reason other than leadership) sits out on its
// own backoff: the other partitions of its broker are read as before, and it catches up once
// the broker answers again. The records come from another writer: the store's own writes are
// applied without a fetch.
func TestLogPartitionErrorIsolated(t *testing.T) {
	c, brokers, s := startFakeStore(t)
	ctx := testContext(t)
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	time.Sleep(100 * time.Millisecond) // let the loops regroup after the load

	longPoll := func(r kmsg.Request) bool { return r.(*kmsg.FetchRequest).MaxWaitMillis > 0 }
	broken := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: testOffsetsTopic, Partitions: []int32{5},
		Err: kerr.UnknownServerError, Count: -1, When: longPoll})
	// End the long poll already waiting, so that the next ones meet the fault.
	writeOther(t, brokers, kafka.Message{Topic: testOffsetsTopic, Key: []byte(`["iso",{"p":"first"}]`), Value: []byte(`{"o":0}`), Partition: 7})
	require.Eventually(t, func() bool { return len(s.SourceOffsets(testOffsetsTopic, "iso")) == 1 }, 5*time.Second, 5*time.Millisecond)
	writeOther(t, brokers, kafka.Message{Topic: testOffsetsTopic, Key: []byte(`["iso",{"p":5}]`), Value: []byte(`{"o":5}`), Partition: 5})
	require.Eventually(t, func() bool { return broken.Hits() >= 4 }, 10*time.Second, 5*time.Millisecond) // its backoff is now 800 ms

	// Partition 6 is read within a long poll although partition 5 keeps failing.
	start := time.Now()
	writeOther(t, brokers, kafka.Message{Topic: testOffsetsTopic, Key: []byte(`["iso",{"p":6}]`), Value: []byte(`{"o":6}`), Partition: 6})
	require.Eventually(t, func() bool { return len(s.SourceOffsets(testOffsetsTopic, "iso")) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Less(t, time.Since(start), 500*time.Millisecond, // the Log's long-poll wait
		"partition 6 waited for partition 5's backoff")

	broken.Remove()
	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	require.Len(t, s.SourceOffsets(testOffsetsTopic, "iso"), 3)
}

// A topic whose partitions answer "not leader" for a while, as Apache Kafka's do right after the
// topic is created, is loaded once they have leaders.
func TestLogWaitsForLeaders(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "fresh", 3, nil))
	notLeader := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "fresh", Partitions: []int32{1},
		Err: kerr.NotLeaderForPartition, Count: 3})

	l, err := kafkaio.NewLog(kafkaio.Options{Brokers: brokers}, "fresh", func([]kafka.Message) {})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	require.NoError(t, l.WaitReady(ctx))
	require.Equal(t, 3, notLeader.Hits())
	cancel()
	require.NoError(t, <-done)
}

// A partition that refuses an encoded write fails exactly its own records: the WriteError
// names them (by their numbers in the Encoded), the topic and the view hold exactly the
// others.
func TestStoreWriteEncodedPartialFailure(t *testing.T) {
	c, brokers, s := startFakeStore(t)
	ctx := testContext(t)
	const n, refused = 20_000, 7
	e := kafkaio.NewBatchEncoder(25, n*40)
	for i := range n {
		key := fmt.Appendf(nil, `["partial",{"file":"f-%05d"}]`, i)
		e.Append(PartitionFor(key, 25), key, fmt.Appendf(nil, `{"position":%d}`, i))
	}
	enc := e.Encoded()
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: testOffsetsTopic, Partitions: []int32{refused}, Err: kerr.InvalidRecord, Count: -1})
	err := s.WriteEncoded(ctx, testOffsetsTopic, enc)
	var werr *kafkaio.WriteError
	require.ErrorAs(t, err, &werr)
	require.ErrorIs(t, err, kafka.InvalidRecord)

	all := enc.Records()
	failed := map[string]bool{}
	for _, i := range werr.Failed {
		failed[string(all[i].Key)] = true
	}
	acked := map[string]string{}
	for _, r := range all {
		if r.Partition == refused {
			require.True(t, failed[string(r.Key)], "%s of the refused partition is not reported", r.Key)
		} else {
			require.False(t, failed[string(r.Key)], "%s was acknowledged", r.Key)
			acked[string(r.Key)] = string(r.Value)
		}
	}
	require.Equal(t, len(failed), len(werr.Failed))
	require.Equal(t, n-len(failed), werr.Written)

	require.NoError(t, s.Sync(ctx, testOffsetsTopic))
	view := map[string]string{}
	for _, r := range s.SourceOffsets(testOffsetsTopic, "partial") {
		view[string(r.Key)] = string(r.Value)
	}
	require.Equal(t, acked, view)
	inTopic := map[string]string{}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers})
	for p := range 25 {
		f, err := kafkaio.FetchPartition(ctx, cl, testOffsetsTopic, p, 0, 16<<20, 10*time.Millisecond)
		require.NoError(t, err)
		if p == refused {
			require.Empty(t, f.Messages)
		}
		for _, m := range f.Messages {
			inTopic[string(m.Key)] = string(m.Value)
		}
	}
	require.Equal(t, acked, inTopic)
}

// TestStoreGroupSnapshotRestored: GroupOffsets reads each entry's committed leader epoch and
// metadata with its offset, and committing what it read into the emptied group (a rollback's
// restore) gives back the entries byte for byte; an entry without them (a snapshot of an
// older agent, or the request's new offsets) commits Connect's PATCH defaults.
func TestStoreGroupSnapshotRestored(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "orders", 3, nil))
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "payments", 1, nil))
	const group = "connect-sink-snap"
	kafkatest.CommitEntries(t, brokers, group,
		kafkatest.GroupEntry{Topic: "orders", Partition: 0, Offset: 30, Epoch: 7, Metadata: "m"},
		kafkatest.GroupEntry{Topic: "orders", Partition: 2, Offset: 41, Epoch: 0, Metadata: ""},
		kafkatest.GroupEntry{Topic: "payments", Partition: 0, Offset: 5, Epoch: -1, Metadata: "consumer-1 generation 3"},
	)
	before := kafkatest.GroupEntries(t, brokers, group)
	require.Equal(t, map[string]string{
		"orders/0":   `offset=30 epoch=7 metadata="m"`,
		"orders/2":   `offset=41 epoch=0 metadata=""`,
		"payments/0": `offset=5 epoch=-1 metadata="consumer-1 generation 3"`,
	}, before)

	snap, err := s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	epoch := func(e int32) *int32 { return &e }
	require.Equal(t, []GroupOffset{
		{Topic: "orders", Partition: 0, Offset: 30, LeaderEpoch: epoch(7), Metadata: "m"},
		{Topic: "orders", Partition: 2, Offset: 41, LeaderEpoch: epoch(0)},
		{Topic: "payments", Partition: 0, Offset: 5, Metadata: "consumer-1 generation 3"},
	}, snap)

	require.NoError(t, s.DeleteGroup(ctx, group))
	gone, err := s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Empty(t, gone)
	require.NoError(t, s.CommitGroupOffsets(ctx, group, snap))
	require.Equal(t, before, kafkatest.GroupEntries(t, brokers, group), "restored byte for byte")

	// The snapshot's JSON form (the intent's) keeps them; one without them (an intent written
	// before they were kept) reads as no epoch and empty metadata, and commits as PATCH does.
	b, err := json.Marshal(snap)
	require.NoError(t, err)
	require.JSONEq(t, `[{"topic":"orders","partition":0,"offset":30,"leader_epoch":7,"metadata":"m"},
		{"topic":"orders","partition":2,"offset":41,"leader_epoch":0},
		{"topic":"payments","partition":0,"offset":5,"metadata":"consumer-1 generation 3"}]`, string(b))
	var back []GroupOffset
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, snap, back)
	var old []GroupOffset
	require.NoError(t, json.Unmarshal([]byte(`[{"topic":"orders","partition":0,"offset":30},{"topic":"orders","partition":2,"offset":41}]`), &old))
	require.NoError(t, s.DeleteGroup(ctx, group))
	require.NoError(t, s.CommitGroupOffsets(ctx, group, old))
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{"orders/0": 30, "orders/2": 41}), kafkatest.GroupEntries(t, brokers, group))
}
