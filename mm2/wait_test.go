package mm2

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// TestTranslateWaitsForCheckpoints: a checkpoint that appears, then moves, during the wait is
// waited for until two reads agree; the wait ends well before Config.Wait.
func TestTranslateWaitsForCheckpoints(t *testing.T) {
	policy := Policy{SourceAlias: "A"}
	cp := policy.CheckpointsTopic()
	b := startCluster(t, map[string]int32{"A.orders": 1, cp: 1})
	produce(t, b, checkpointRecord(t, cp, Checkpoint{Group: "billing-app", Topic: "A.orders", UpstreamOffset: 1, Offset: 1}))
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Policy: policy, Wait: 20 * time.Second, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	reads := 0
	tr.afterRead = func() {
		reads++
		switch reads {
		case 2: // the first two reads found nothing; MM2 then checkpoints an older commit
			produce(t, b, checkpointRecord(t, cp, Checkpoint{Group: "connect-late", Topic: "A.orders", UpstreamOffset: 5, Offset: 4}))
		case 3: // and then the current one
			produce(t, b, checkpointRecord(t, cp, Checkpoint{Group: "connect-late", Topic: "A.orders", UpstreamOffset: 7, Offset: 6}))
		}
	}
	got, err := tr.TranslateGroup(testContext(t), "connect-late", map[TopicPartition]int64{{"orders", 0}: 7})
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]int64{{"A.orders", 0}: 6}, got.Offsets())
	require.Equal(t, VerdictExact, got.Partitions[0].Verdict)
	require.Equal(t, 5, reads, "reads: nothing, nothing, older, current, current again")
	require.GreaterOrEqual(t, got.Waited, 300*time.Millisecond)
	require.Less(t, got.Waited, 10*time.Second)
}

func TestTranslateWithoutCheckpointsTopic(t *testing.T) {
	b := startCluster(t, map[string]int32{"A.orders": 1})
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Policy: Policy{SourceAlias: "A"}})
	require.NoError(t, err)
	_, err = tr.TranslateGroup(testContext(t), "connect-x", map[TopicPartition]int64{{"orders", 0}: 7})
	require.True(t, errors.Is(err, ErrNoCheckpointsTopic), "%v", err)
	require.ErrorContains(t, err, `"A.checkpoints.internal"`)
}

// TestExactScanLimit: the refinement gives up after ScanLimit records and keeps the checkpoint.
func TestExactScanLimit(t *testing.T) {
	c := newTwoClusters(t, Policy{SourceAlias: "A"})
	tr := c.translator(t, func(cfg *Config) { cfg.Exact, cfg.ScanLimit = true, 3 })
	got, err := tr.TranslateGroup(testContext(t), "connect-lagging", map[TopicPartition]int64{{"orders", 0}: 45})
	require.NoError(t, err)
	p := got.Partitions[0]
	require.Equal(t, VerdictReplay, p.Verdict)
	require.Equal(t, int64(21), p.Offset)
	require.Equal(t, &ExactScan{Scanned: 3, Note: "no matching record in the first 3 records of A.orders-0 from offset 20"}, p.Scan)

	// The record is not on B at all (A's orders-0 has 50 records, B's copy ends at A's 49): a
	// group that consumed beyond what MM2 mirrored finds nothing and scans to the end.
	tr = c.translator(t, func(cfg *Config) { cfg.Exact = true })
	produce(t, c.a, sourceRecord("orders", 0, 50))
	got, err = tr.TranslateGroup(testContext(t), "connect-lagging", map[TopicPartition]int64{{"orders", 0}: 51})
	require.NoError(t, err)
	p = got.Partitions[0]
	require.Equal(t, VerdictReplay, p.Verdict)
	require.False(t, p.Scan.Found)
	require.Equal(t, 25, p.Scan.Scanned) // B 20..44
	require.Contains(t, p.Scan.Note, "to its end")
}

func TestNewTranslatorValidates(t *testing.T) {
	_, err := NewTranslator(Config{Exact: true, Wait: -1, Policy: Policy{Kind: "x"},
		OffsetSyncs: &OffsetSyncsLocation{}})
	require.Error(t, err)
	for _, want := range []string{"unknown replication policy", "no source cluster alias", "no target brokers",
		"exact refinement needs the source brokers", "negative wait", "offset syncs need a topic and brokers"} {
		require.ErrorContains(t, err, want)
	}
}

func TestGroupFilterTrapMessage(t *testing.T) {
	tests := []struct {
		name  string
		group string
		want  string
	}{
		{name: "connect group", group: "connect-sink-1", want: "default groups.exclude (console-consumer-.*, connect-.*, __.*) excludes Connect sink groups"},
		{name: "override group", group: "orders-sink", want: "groups or groups.exclude filter leaves it out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, groupFilterTrap(tt.group, "A.checkpoints.internal", 2), tt.want)
		})
	}
}

func TestReplayBound(t *testing.T) {
	s := &syncStore{syncs: map[TopicPartition][]OffsetSync{}}
	for _, sy := range []OffsetSync{{"t", 0, 10, 5}, {"t", 0, 110, 105}, {"t", 0, 150, 145}} {
		s.apply(record{Key: mustKey(t, sy), Value: mustValue(t, sy)})
	}
	tests := []struct {
		name  string
		g, d  int64
		known bool
		want  int64
		skips bool
	}{
		{name: "exact at a sync", g: 110, d: 105, known: true, want: 0},
		{name: "one past a sync", g: 111, d: 106, known: true, want: 0},
		{name: "between syncs, MM2's lower bound", g: 140, d: 106, known: true, want: 29},
		{name: "later sync tightens the bound", g: 150, d: 106, known: true, want: 39},
		{name: "before every sync", g: 5, d: 0},
		{name: "checkpoint past a sync at g skips records", g: 110, d: 107, known: true, skips: true},
		{name: "checkpoint past a later sync skips records", g: 120, d: 146, known: true, skips: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := s.replayBound(TopicPartition{"t", 0}, tt.g, tt.d)
			require.Equal(t, tt.known, b.known)
			require.Equal(t, tt.skips, b.skips)
			if tt.known && !tt.skips {
				require.Equal(t, tt.want, b.replay)
			}
		})
	}
	// The upstream going backwards (a new MM2 generation) clears the older syncs.
	sy := OffsetSync{"t", 0, 0, 200}
	s.apply(record{Key: mustKey(t, sy), Value: mustValue(t, sy)})
	require.Equal(t, []OffsetSync{sy}, s.syncs[TopicPartition{"t", 0}])
	s.apply(record{Key: []byte{0}, Value: []byte{1}})
	require.Equal(t, 1, s.refused)
}

func mustKey(t testing.TB, s OffsetSync) []byte {
	b, err := s.Key()
	require.NoError(t, err)
	return b
}

func mustValue(t testing.TB, s OffsetSync) []byte {
	b, err := s.Value()
	require.NoError(t, err)
	return b
}

// TestWaitDeadlineIsShared: Config.Wait bounds the waiting of all groups together.
func TestWaitDeadlineIsShared(t *testing.T) {
	policy := Policy{SourceAlias: "A"}
	b := startCluster(t, map[string]int32{"A.orders": 1, policy.CheckpointsTopic(): 1})
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Policy: policy, Wait: time.Second, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	for i, group := range []string{"connect-a", "connect-b"} {
		got, err := tr.TranslateGroup(testContext(t), group, map[TopicPartition]int64{{"orders", 0}: 7})
		require.NoError(t, err)
		require.Equal(t, VerdictMissing, got.Partitions[0].Verdict)
		require.Empty(t, got.GroupFilterTrap, "no group has checkpoints: no trap to name")
		if i == 0 {
			require.GreaterOrEqual(t, got.Waited, time.Second)
		} else {
			require.Less(t, got.Waited, 500*time.Millisecond)
		}
	}
}

// TestCheckpointStillMovingAtDeadline: a checkpoint that keeps changing until the wait ends is
// used as the lower bound it is, but not called exact.
func TestCheckpointStillMovingAtDeadline(t *testing.T) {
	policy := Policy{SourceAlias: "A"}
	cp := policy.CheckpointsTopic()
	b := startCluster(t, map[string]int32{"A.orders": 1, cp: 1})
	produce(t, b, checkpointRecord(t, cp, Checkpoint{Group: "connect-busy", Topic: "A.orders", UpstreamOffset: 100, Offset: 1}))
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Policy: policy, Wait: 800 * time.Millisecond, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	// MM2 catching up: between any two reads the translated offset grows, upstreamOffset stays g.
	d := int64(1)
	tr.afterRead = func() {
		d++
		produce(t, b, checkpointRecord(t, cp, Checkpoint{Group: "connect-busy", Topic: "A.orders", UpstreamOffset: 100, Offset: d}))
	}
	got, err := tr.TranslateGroup(testContext(t), "connect-busy", map[TopicPartition]int64{{"orders", 0}: 100})
	require.NoError(t, err)
	p := got.Partitions[0]
	require.Equal(t, VerdictReplay, p.Verdict)
	require.Nil(t, p.ReplayBound)
	require.Contains(t, p.Reason, "still moving when the wait ended")
	require.Greater(t, p.Offset, int64(1))
	require.GreaterOrEqual(t, got.Waited, 800*time.Millisecond)
}
