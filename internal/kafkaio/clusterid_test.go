package kafkaio

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// idCluster is a kfake cluster of one broker on 127.0.0.1 with cluster id id.
func idCluster(t *testing.T, id string, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(id),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") })}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// countingTransport is a plaintext transport that counts its dials.
func countingTransport(n *atomic.Int32) *kafka.Transport {
	d := &net.Dialer{}
	return &kafka.Transport{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
}

// A cluster is known by the id its brokers answer with, under any address that reaches them:
// localhost or 127.0.0.1, a forwarded port no broker advertises; each (address, transport) is
// asked once, however many ask at once, its failure included; an address where nothing
// listens is a dial error; a broker that wants SASL answers only to SASL.
func TestClusterIDs(t *testing.T) {
	ctx := testContext(t)
	a, b := idCluster(t, "cluster-A"), idCluster(t, "cluster-B")
	_, portA, err := net.SplitHostPort(a)
	require.NoError(t, err)
	secured := idCluster(t, "cluster-S", kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "pw"))
	ids := NewClusterIDs(5*time.Second, 4)
	var dials atomic.Int32
	tr := countingTransport(&dials)

	for addr, want := range map[string]string{a: "cluster-A", "localhost:" + portA: "cluster-A", kafkatest.Forward(t, a): "cluster-A", b: "cluster-B"} {
		id, err := ids.Lookup(ctx, addr, tr)
		require.NoError(t, err, addr)
		require.Equal(t, want, id, addr)
	}

	t.Run("asked once", func(t *testing.T) {
		fwd := kafkatest.Forward(t, b)
		closed := kafkatest.ClosedAddr(t)
		before := dials.Load()
		var wg sync.WaitGroup
		got := make([]string, 20)
		for i := range got {
			wg.Go(func() {
				id, err := ids.Lookup(ctx, fwd, tr)
				_, errClosed := ids.Lookup(ctx, closed, tr)
				got[i] = fmt.Sprintf("%s %v %t", id, err, errClosed != nil)
			})
		}
		wg.Wait()
		for _, g := range got {
			require.Equal(t, "cluster-B <nil> true", g)
		}
		require.Equal(t, int32(2), dials.Load()-before, "one dial per (address, transport)")
	})

	t.Run("nothing listens", func(t *testing.T) {
		closed := kafkatest.ClosedAddr(t)
		_, err := ids.Lookup(ctx, closed, nil)
		require.ErrorContains(t, err, "ask "+closed+" for its cluster id")
		require.True(t, IsDialError(err), "%v", err)
	})

	t.Run("SASL", func(t *testing.T) {
		_, err := ids.Lookup(ctx, secured, nil)
		require.Error(t, err)
		require.False(t, IsDialError(err), "the broker was reached: %v", err)
		id, err := ids.Lookup(ctx, secured, &kafka.Transport{SASL: plain.Mechanism{Username: "admin", Password: "pw"}})
		require.NoError(t, err)
		require.Equal(t, "cluster-S", id)
	})

	t.Run("a cancelled lookup is not kept", func(t *testing.T) {
		fwd := kafkatest.Forward(t, a)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := ids.Lookup(cancelled, fwd, tr)
		require.ErrorIs(t, err, context.Canceled)
		id, err := ids.Lookup(ctx, fwd, tr)
		require.NoError(t, err)
		require.Equal(t, "cluster-A", id)
	})
}

// ClusterID is the id the brokers behind a client answer with; a client whose brokers do not
// answer says that it read no metadata.
func TestClusterID(t *testing.T) {
	ctx := testContext(t)
	id, err := ClusterID(ctx, NewClient(Options{Brokers: []string{idCluster(t, "cluster-A")}, Transport: testTransport(t)}))
	require.NoError(t, err)
	require.Equal(t, "cluster-A", id)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	cl := NewClient(Options{Brokers: []string{closed}, Transport: testTransport(t)})
	cl.Timeout = 2 * time.Second
	_, err = ClusterID(ctx, cl)
	require.ErrorContains(t, err, "read cluster metadata")
}

// Expired is true from a context's deadline on, never for a context without one.
func TestExpired(t *testing.T) {
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	future, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"no deadline", context.Background(), false},
		{"deadline passed", past, true},
		{"deadline ahead", future, false},
	} {
		require.Equal(t, tt.want, Expired(tt.ctx), tt.name)
	}
}
