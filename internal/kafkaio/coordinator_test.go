package kafkaio

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client remembers each group's coordinator: every group request (describe, the probes,
// fetch, delete, commit) after the first goes straight to it, without a FindCoordinator
// before it. A coordinator that moved is asked for again once, and the request still
// succeeds; one that is not available, or a connection that failed, makes the client ask
// again for the next request.
func TestGroupRequestsRememberCoordinator(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var finds atomic.Int32
	c.ControlKey(int16(kmsg.FindCoordinator), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		finds.Add(1)
		return nil, nil, false // counted only: the broker answers
	})
	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	ctx := testContext(t)
	offsets := []GroupOffset{{Topic: "orders", Partition: 1, Offset: 5}}
	// Everything a sink request asks of its group, in its order.
	sinkRequest := func(group string) error {
		if _, err := DescribeGroup(ctx, cl, group); err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if err := ProbeGroupCommit(ctx, cl, group, []string{"orders"}); err != nil {
			return fmt.Errorf("probe commit: %w", err)
		}
		if err := ProbeGroupDelete(ctx, cl, group, "orders"); err != nil {
			return fmt.Errorf("probe delete: %w", err)
		}
		if _, err := FetchGroupOffsets(ctx, cl, group); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		if err := DeleteGroup(ctx, cl, group); err != nil && !errors.Is(err, kafka.GroupIdNotFound) {
			return fmt.Errorf("delete: %w", err)
		}
		if err := CommitGroupOffsets(ctx, cl, group, offsets); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	}
	groups := []string{"connect-a", "connect-b", "connect-c"}
	for range 3 {
		for _, g := range groups {
			require.NoError(t, sinkRequest(g), g)
		}
	}
	require.Equal(t, int32(len(groups)), finds.Load(), "one FindCoordinator per group for 3 rounds of 6 group requests each")

	t.Run("coordinator moved", func(t *testing.T) {
		before := c.CoordinatorFor("connect-a")
		for c.CoordinatorFor("connect-a") == before {
			c.RehashCoordinators()
		}
		n := finds.Load()
		got, err := FetchGroupOffsets(ctx, cl, "connect-a")
		require.NoError(t, err, "the request is sent again to the new coordinator")
		require.Equal(t, []GroupOffset{{Topic: "orders", Partition: 1, Offset: 5}}, got)
		require.Equal(t, n+1, finds.Load())
		_, err = FetchGroupOffsets(ctx, cl, "connect-a")
		require.NoError(t, err)
		require.Equal(t, n+1, finds.Load(), "the new coordinator is remembered")
	})

	t.Run("coordinator not available", func(t *testing.T) {
		require.NoError(t, sinkRequest("connect-c"))
		n := finds.Load()
		c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "connect-c", Err: kerr.CoordinatorNotAvailable, Count: 1})
		_, err := FetchGroupOffsets(ctx, cl, "connect-c")
		require.ErrorIs(t, err, kafka.GroupCoordinatorNotAvailable, "the caller sees the error and retries after its backoff")
		_, err = FetchGroupOffsets(ctx, cl, "connect-c")
		require.NoError(t, err)
		require.Equal(t, n+1, finds.Load(), "the coordinator is asked for again")
	})

	t.Run("connection failed", func(t *testing.T) {
		require.NoError(t, sinkRequest("connect-b"))
		n := finds.Load()
		c.ControlKey(int16(kmsg.DescribeGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("closed by the test"), true // the broker closes the connection
		})
		_, err := DescribeGroup(ctx, cl, "connect-b")
		require.Error(t, err)
		_, err = DescribeGroup(ctx, cl, "connect-b")
		require.NoError(t, err)
		require.Equal(t, n+1, finds.Load(), "the coordinator is asked for again after the failed round trip")
	})
}
