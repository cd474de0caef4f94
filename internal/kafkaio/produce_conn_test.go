package kafkaio

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readerOfProduce returns the stack of the goroutine that waits for the answer to the
// Produce request the broker is holding, among stacks.
func readerOfProduce(t *testing.T, stacks []string) string {
	t.Helper()
	var readers []string
	for _, g := range stacks {
		if strings.Contains(g, "kafkaio.(*rawProduce).RawExchange(") {
			readers = append(readers, g)
		}
	}
	require.Len(t, readers, 1, "one goroutine waits for the Produce's answer")
	return readers[0]
}

// A write made while the producer is idle is written on the connection and its answer read
// by the writer's own goroutine: not handed to the connection's goroutine of kafka-go's
// Transport and back (two wake-ups per round trip, five round trips on an agent's request),
// with SASL as without.
func TestProducerRoundTripOnWritersGoroutine(t *testing.T) {
	plain, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(2, "a"))
	require.NoError(t, err)
	t.Cleanup(plain.Close)
	secure, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "a"),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "admin", "admin"))
	require.NoError(t, err)
	t.Cleanup(secure.Close)
	mech, err := scram.Mechanism(scram.SHA256, "admin", "admin")
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		c    *kfake.Cluster
		tr   *kafka.Transport
	}{
		{"plain", plain, &kafka.Transport{MetadataTTL: 100 * time.Millisecond}},
		{"sasl", secure, &kafka.Transport{MetadataTTL: 100 * time.Millisecond, SASL: mech}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProducer(Options{Brokers: tc.c.ListenAddrs(), Transport: tc.tr})
			ctx := testContext(t)
			require.Nil(t, p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}).Wait(ctx))
			var stacks []string
			tc.c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
				tc.c.DropControl() // this Produce only
				buf := make([]byte, 1<<20)
				stacks = strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
				return nil, nil, false
			})
			require.Nil(t, p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 1, Value: []byte("v")}}).Wait(ctx))
			reader := readerOfProduce(t, stacks)
			require.Contains(t, reader, "kafkaio.(*Producer).sendInline(", "the writer did not make the round trip:\n%s", reader)
			require.NotContains(t, reader, "kafka-go.(*conn).run(", "a connection's goroutine made the round trip")
		})
	}
}

// A round trip that fails on the producer's own connection closes it (what was written or
// read of the answer is not known): the write gets the error, and the next write goes on a
// connection dialled again.
func TestProducerOwnConnectionDialledAgainAfterFailure(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("warm-up")}}).Wait(ctx))
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		return nil, errors.New("connection dropped"), true // the broker closes the connection
	})
	errs := p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("lost")}}).Wait(ctx)
	require.Len(t, errs, 1)
	require.Error(t, errs[0])

	var stacks []string
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		buf := make([]byte, 1<<20)
		stacks = strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		return nil, nil, false
	})
	require.Nil(t, p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("next")}}).Wait(ctx))
	require.Contains(t, readerOfProduce(t, stacks), "kafkaio.(*Producer).sendInline(", "the next write is on a connection of the producer's own")
}

// A fetcher's Fetch on its own connections (FetchConns) is written and read by the goroutine
// that makes it; one whose context ends while the broker holds it ends with the context, and
// the next goes on a connection dialled again.
func TestFetchOnOwnConnections(t *testing.T) {
	c, _, p := startProducerCluster(t, "a")
	ctx := testContext(t)
	require.Nil(t, p.EnqueueAwaited(ctx, []kafka.Message{{Topic: "a", Partition: 0, Value: []byte("v")}}).Wait(ctx))
	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	conns := NewFetchConns(cl)
	t.Cleanup(conns.Close)
	bounds := FetchBounds{BatchMax: 1 << 20, TotalMax: 1 << 20, Conns: conns}

	var stacks []string
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		buf := make([]byte, 1<<20)
		stacks = strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		return nil, nil, false
	})
	f, err := FetchPartitionBounded(ctx, cl, "a", 0, 0, 1<<20, 10*time.Millisecond, bounds)
	require.NoError(t, err)
	require.Len(t, f.Messages, 1)
	var reader string
	for _, g := range stacks {
		if strings.Contains(g, "kafkaio.(*rawFetch).RawExchange(") {
			reader = g
		}
	}
	require.Contains(t, reader, "kafkaio.FetchPartitionBounded(", "the fetcher did not read the answer itself:\n%s", reader)

	// A long poll of an empty partition, cut short by its context.
	wctx, cancel := context.WithCancel(ctx)
	held := make(chan struct{})
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		close(held)
		return nil, nil, false // kfake then waits out the request's MaxWait
	})
	go func() { <-held; cancel() }()
	_, err = FetchPartitionBounded(wctx, cl, "a", 1, 0, 1<<20, time.Minute, bounds)
	require.ErrorIs(t, err, context.Canceled)
	f, err = FetchPartitionBounded(ctx, cl, "a", 0, 0, 1<<20, 10*time.Millisecond, bounds)
	require.NoError(t, err)
	require.Len(t, f.Messages, 1)
}
