package kafkatest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Kfake starts an in-process kfake broker listening on 127.0.0.1 only (opts added to one
// broker and that listener), closed when the test ends.
func Kfake(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") })}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}
