// Package kafkatest holds the helpers that tests of several packages use to look at a Kafka
// cluster the way a client other than the agent sees it (franz-go's kgo and kmsg), or to reach
// it by an address its brokers do not advertise (Forward). Only tests import it.
package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// GroupEntry is a committed entry of a consumer group as a consumer (or an admin client) may
// have written it: offset, committed leader epoch (-1 for none) and metadata.
type GroupEntry struct {
	Topic     string
	Partition int32
	Offset    int64
	Epoch     int32
	Metadata  string
}

// GroupEntries reads the committed offsets of group with franz-go's OffsetFetch (v5+, the
// versions that return the committed leader epoch), as "topic/partition" → "offset=N epoch=E
// metadata=M" (a null metadata as <null>): what a consumer that joins the group resumes from.
func GroupEntries(t testing.TB, brokers []string, group string) map[string]string {
	t.Helper()
	cl, ctx, done := requestClient(t, brokers)
	defer done()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group // every partition of the group (Topics nil)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Version, int16(5), "OffsetFetch without the leader epoch")
	out := map[string]string{}
	add := func(topic string, p int32, offset int64, epoch int32, metadata *string, code int16) {
		require.Zero(t, code, "topic %s partition %d", topic, p)
		if offset < 0 {
			return
		}
		m := "<null>"
		if metadata != nil {
			m = *metadata
		}
		out[fmt.Sprintf("%s/%d", topic, p)] = fmt.Sprintf("offset=%d epoch=%d metadata=%q", offset, epoch, m)
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

// CommitEntries commits entries for an empty group with franz-go's OffsetCommit (v6+, the
// versions that carry the committed leader epoch; at most v9, which names topics rather than
// topic ids), generation -1 as an admin client commits.
func CommitEntries(t testing.TB, brokers []string, group string, entries ...GroupEntry) {
	t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	cl, ctx, done := requestClient(t, brokers, kgo.MaxVersions(versions))
	defer done()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	for _, e := range entries {
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = e.Topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		metadata := e.Metadata
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = e.Partition, e.Offset, e.Epoch, &metadata
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Version, int16(6), "OffsetCommit without the leader epoch")
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			require.Zero(t, p.ErrorCode, "topic %s partition %d", tp.Topic, p.Partition)
		}
	}
}

// PatchEntries are the entries Connect's PATCH /connectors/NAME/offsets commits for offsets
// ("topic/partition" → offset), in GroupEntries' form: Admin.alterConsumerGroupOffsets with
// `new OffsetAndMetadata(offset)`, no leader epoch (-1) and empty metadata.
func PatchEntries(offsets map[string]int64) map[string]string {
	out := map[string]string{}
	for tp, o := range offsets {
		out[tp] = fmt.Sprintf("offset=%d epoch=-1 metadata=%q", o, "")
	}
	return out
}

// requestClient is a franz-go client of brokers for a helper's few requests, and their context
// (30 s); done closes both.
func requestClient(t testing.TB, brokers []string, opts ...kgo.Opt) (*kgo.Client, context.Context, func()) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	return cl, ctx, func() { cancel(); cl.Close() }
}
