package realkafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// TestGroupSnapshotRestoredOnKafka: on a real broker, the snapshot a sink request takes of its
// group before the wipe (Store.GroupOffsets, OffsetFetch v5) reads each entry's committed
// leader epoch and metadata, and the rollback's restore (DeleteGroup, then CommitGroupOffsets
// of the snapshot) gives the group back its entries byte for byte. A null metadata is stored
// as "" by the broker, so "" is what the snapshot keeps.
func TestGroupSnapshotRestoredOnKafka(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic, group := env.Unique("snap-in"), env.Unique("connect-snap")
	env.CreateTopic(t, topic, 3, false)

	// A consumer's commit (at most v9: v10 names topics by id), generation -1 as an admin's.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	kc, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.MaxVersions(versions))
	require.NoError(t, err)
	defer kc.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = topic
	for _, e := range []struct {
		partition, epoch int32
		offset           int64
		metadata         *string
	}{{0, 3, 40, ptr("m")}, {1, 0, 17, nil}, {2, -1, 41, ptr("task-0 generation 3")}} {
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = e.partition, e.offset, e.epoch, e.metadata
		tp.Partitions = append(tp.Partitions, p)
	}
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, kc)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Version, int16(6))
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.Zero(t, p.ErrorCode, "partition %d", p.Partition)
		}
	}
	before := kafkatest.GroupEntries(t, env.Brokers, group)
	require.Equal(t, map[string]string{
		topic + "/0": `offset=40 epoch=3 metadata="m"`,
		topic + "/1": `offset=17 epoch=0 metadata=""`,
		topic + "/2": `offset=41 epoch=-1 metadata="task-0 generation 3"`,
	}, before)

	s, err := offsetstore.New(offsetstore.Options{Brokers: env.Brokers, ConfigTopic: env.ConnectNames("main").Config,
		OffsetsTopic: env.ConnectNames("main").Offsets})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	snap, err := s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Equal(t, []offsetstore.GroupOffset{
		{Topic: topic, Partition: 0, Offset: 40, LeaderEpoch: ptr(int32(3)), Metadata: "m"},
		{Topic: topic, Partition: 1, Offset: 17, LeaderEpoch: ptr(int32(0))},
		{Topic: topic, Partition: 2, Offset: 41, Metadata: "task-0 generation 3"},
	}, snap)
	require.NoError(t, s.DeleteGroup(ctx, group))
	gone, err := s.GroupOffsets(ctx, group)
	require.NoError(t, err)
	require.Empty(t, gone)
	require.NoError(t, s.CommitGroupOffsets(ctx, group, snap))
	require.Equal(t, before, kafkatest.GroupEntries(t, env.Brokers, group), "restored byte for byte")
}

func ptr[T any](v T) *T { return &v }
