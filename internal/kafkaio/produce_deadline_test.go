package kafkaio

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// holdProduces holds every Produce request to topic in the broker until release is closed,
// then lets the broker append and answer it; seen gets each held request's timeout_ms.
func holdProduces(c *kfake.Cluster, topic string, release <-chan struct{}) (seen <-chan int32) {
	ch := make(chan int32, 16)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		for _, t := range req.Topics {
			if t.Topic == topic {
				ch <- req.TimeoutMillis
				c.SleepControl(func() { <-release })
				break
			}
		}
		return nil, nil, false
	})
	return ch
}

// A write whose ctx has a deadline sends Produce requests whose own timeout ends before it, by
// the answer margin: a broker that honours the timeout answers before the writer stops
// waiting. Without a deadline the timeout is the default 30 s.
func TestWriteDeadlineBoundsTheProduceTimeout(t *testing.T) {
	tests := []struct {
		name     string
		n        int // records: up to SmallWrite go through the queued producer, more in rounds
		deadline time.Duration
		max      int32 // the largest timeout_ms allowed
	}{
		{name: "no deadline", n: 1, max: produceTimeoutMs},
		{name: "queued, deadline in 10s", n: 1, deadline: 10 * time.Second, max: 9_000},
		{name: "in rounds, deadline in 10s", n: SmallWrite + 1, deadline: 10 * time.Second, max: 9_000},
		{name: "queued, deadline in 2s", n: 1, deadline: 2 * time.Second, max: 1_500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, p := startProducerCluster(t, "w")
			release := make(chan struct{})
			close(release)
			seen := holdProduces(c, "w", release)
			ctx := context.Background() // no deadline unless the case has one
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			recs := make([]Record, tt.n)
			parts := make([]int32, tt.n)
			for i := range recs {
				recs[i] = Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
			}
			require.NoError(t, p.Write(ctx, "w", recs, parts, nil))
			timeout := <-seen
			require.Positive(t, timeout)
			require.LessOrEqual(t, timeout, tt.max, "the Produce request's own timeout outlasts the writer's deadline")
			if tt.deadline == 0 {
				require.Equal(t, int32(produceTimeoutMs), timeout)
			}
		})
	}
}

// A write sent before its deadline is waited for until the broker answers, even past the
// deadline: a broker that holds it longer than its timeout appends it, if at all, before it
// answers, and the writer must know (its rollback must see the records). A write queued behind
// it whose deadline passes before its turn is never sent, and says so (NotWritten).
func TestWriteDeadlineEndsTheWrite(t *testing.T) {
	c, brokers, p := startProducerCluster(t, "w")
	ctx := testContext(t)
	require.NoError(t, p.Write(ctx, "w", []Record{{Key: []byte("warm-up"), Value: []byte("v")}}, []int32{0}, nil))

	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	seen := holdProduces(c, "w", release)

	held, cancelHeld := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelHeld()
	first := make(chan error, 1)
	go func() {
		first <- p.Write(held, "w", []Record{{Key: []byte("held"), Value: []byte("v")}}, []int32{0}, nil)
	}()
	<-seen // the first write is in the broker, which holds it

	// The second write queues behind the first (one Produce request in flight per leader),
	// and its deadline passes before its turn.
	queued, cancelQueued := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelQueued()
	second := make(chan error, 1)
	go func() {
		second <- p.Write(queued, "w", []Record{{Key: []byte("queued"), Value: []byte("v")}}, []int32{0}, nil)
	}()
	<-queued.Done()
	<-held.Done()
	releaseOnce.Do(func() { close(release) })

	wait := func(name string, done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s write never returned", name)
			return nil
		}
	}
	require.NoError(t, wait("held", first), "the write sent before its deadline is acknowledged, late")
	err := wait("queued", second)
	var we *WriteError
	require.ErrorAs(t, err, &we, "the write whose deadline passed in the queue fails")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, []int{0}, we.NotWritten, "it was never sent: %v", err)
	require.False(t, MayHaveWritten(err))

	require.NoError(t, p.Write(ctx, "w", []Record{{Key: []byte("after"), Value: []byte("v")}}, []int32{0}, nil))
	require.Equal(t, []string{"warm-up=v", "held=v", "after=v"}, readPartition(t, brokers, "w", 0), "a write past its deadline was sent")
}
