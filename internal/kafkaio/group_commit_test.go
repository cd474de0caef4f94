package kafkaio

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCommitGroupOffsets: the commit reaches each group's coordinator among three brokers and
// carries what Admin.alterConsumerGroupOffsets sends for `new OffsetAndMetadata(offset)`:
// generation -1, no member or instance id, no leader epoch, empty metadata; a consumer reading
// the group back (OffsetFetch v5+) gets offset, epoch -1 and "" metadata.
func TestCommitGroupOffsets(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "orders", "payments"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var mu sync.Mutex
	var seen []*kmsg.OffsetCommitRequest
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.(*kmsg.OffsetCommitRequest))
		return nil, nil, false // the broker answers
	})
	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	ctx := testContext(t)
	offsets := []GroupOffset{{Topic: "orders", Partition: 2, Offset: 30}, {Topic: "payments", Partition: 0, Offset: 0}, {Topic: "orders", Partition: 0, Offset: 7}}
	for i := range 6 {
		require.NoError(t, CommitGroupOffsets(ctx, cl, fmt.Sprintf("connect-sink-%d", i), offsets))
	}

	empty := ""
	mu.Lock()
	defer mu.Unlock()
	for _, req := range seen {
		require.GreaterOrEqual(t, req.Version, int16(6), "a version with the committed leader epoch")
		require.Equal(t, int32(-1), req.Generation)
		require.Empty(t, req.MemberID)
		require.Nil(t, req.InstanceID)
		require.Len(t, req.Topics, 2, "one entry per topic")
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				require.Equal(t, int32(-1), p.LeaderEpoch)
				require.Equal(t, &empty, p.Metadata)
			}
		}
	}
	require.Len(t, seen, 6)

	kc, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer kc.Close()
	coordinators := map[int32]bool{}
	for i := range 6 {
		group := fmt.Sprintf("connect-sink-%d", i)
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = group
		fres, err := fc.RequestWith(ctx, kc)
		require.NoError(t, err)
		coordinators[fres.NodeID] = true
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 5
		req.Group = group
		var res *kmsg.OffsetFetchResponse
		res, err = req.RequestWith(ctx, kc)
		require.NoError(t, err)
		got := map[string]string{}
		for _, g := range res.Groups {
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					got[fmt.Sprintf("%s/%d", tp.Topic, p.Partition)] = fmt.Sprintf("%d %d %q", p.Offset, p.LeaderEpoch, *p.Metadata)
				}
			}
		}
		for _, tp := range res.Topics {
			for _, p := range tp.Partitions {
				got[fmt.Sprintf("%s/%d", tp.Topic, p.Partition)] = fmt.Sprintf("%d %d %q", p.Offset, p.LeaderEpoch, *p.Metadata)
			}
		}
		require.Equal(t, map[string]string{"orders/2": `30 -1 ""`, "orders/0": `7 -1 ""`, "payments/0": `0 -1 ""`}, got, group)
	}
	require.Greater(t, len(coordinators), 1, "the groups have different coordinators")
}

// TestCommitGroupOffsetsRefused: a partition the coordinator refuses comes back as a
// *GroupCommitError wrapping the kafka.Error, which the caller and Classify can tell.
func TestCommitGroupOffsetsRefused(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.OffsetCommitRequest)
		res := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, int16(kafka.UnknownMemberId)
				rt.Partitions = append(rt.Partitions, rp)
			}
			res.Topics = append(res.Topics, rt)
		}
		return res, nil, true
	})
	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	err = CommitGroupOffsets(testContext(t), cl, "connect-running", []GroupOffset{{Topic: "orders", Partition: 0, Offset: 1}})
	require.ErrorIs(t, err, kafka.UnknownMemberId)
	var ge *GroupCommitError
	require.True(t, errors.As(err, &ge))
	require.Equal(t, GroupCommitError{Topic: "orders", Partition: 0, Err: kafka.UnknownMemberId}, *ge)
	require.False(t, MayHaveWritten(fmt.Errorf("commit: %w", err)), "refused before anything was committed")
}

// A commit may have left offsets in the group unless no partition was accepted and every
// refusal is one a coordinator answers before it commits.
func TestMayHaveWrittenCommit(t *testing.T) {
	refused := func(err error) *GroupCommitError { return &GroupCommitError{Topic: "orders", Err: err} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "every partition refused for an ACL", want: false, err: &CommitError{Refused: []*GroupCommitError{
			refused(kafka.GroupAuthorizationFailed), refused(kafka.TopicAuthorizationFailed)}}},
		{name: "unknown topic", want: false, err: &CommitError{Refused: []*GroupCommitError{refused(kafka.UnknownTopicOrPartition)}}},
		{name: "one partition accepted", want: true, err: &CommitError{Committed: 1, Refused: []*GroupCommitError{
			refused(kafka.TopicAuthorizationFailed)}}},
		{name: "coordinator not available (may follow an append)", want: true, err: &CommitError{Refused: []*GroupCommitError{
			refused(kafka.GroupAuthorizationFailed), refused(kafka.GroupCoordinatorNotAvailable)}}},
		{name: "request timed out", want: true, err: &CommitError{Refused: []*GroupCommitError{refused(kafka.RequestTimedOut)}}},
		{name: "a round trip that failed", want: true, err: errors.New("read tcp: connection reset")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, MayHaveWritten(fmt.Errorf("commit offsets of group %q: %w", "g", tt.err)))
		})
	}
}

// TestFetchGroupOffsets: the fetch reaches each group's coordinator among three brokers as an
// OffsetFetch v5 (the version with the committed leader epoch) for all of the group's
// partitions, and returns what a commit carrying an epoch and metadata stored, as a consumer
// reads it back; an entry committed without them reads as none.
func TestFetchGroupOffsets(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "orders", "payments"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var mu sync.Mutex
	var seen []*kmsg.OffsetFetchRequest
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.(*kmsg.OffsetFetchRequest))
		return nil, nil, false // the broker answers
	})
	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	ctx := testContext(t)
	epoch := func(e int32) *int32 { return &e }
	offsets := []GroupOffset{
		{Topic: "orders", Partition: 2, Offset: 30, LeaderEpoch: epoch(7), Metadata: "m"},
		{Topic: "payments", Partition: 0, Offset: 0, LeaderEpoch: epoch(0)},
		{Topic: "orders", Partition: 0, Offset: 7, Metadata: "consumer-1"},
		{Topic: "orders", Partition: 1, Offset: 9},
	}
	for i := range 6 {
		group := fmt.Sprintf("connect-sink-%d", i)
		got, err := FetchGroupOffsets(ctx, cl, group)
		require.ErrorIs(t, err, kafka.GroupIdNotFound, "kfake: a group without offsets is unknown")
		require.Empty(t, got)
		require.NoError(t, CommitGroupOffsets(ctx, cl, group, offsets))
		got, err = FetchGroupOffsets(ctx, cl, group)
		require.NoError(t, err)
		require.ElementsMatch(t, offsets, got, group)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 12)
	for _, req := range seen {
		require.Equal(t, int16(5), req.Version)
		require.Nil(t, req.Topics, "every partition of the group")
	}
}
