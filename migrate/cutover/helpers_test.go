package cutover

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// startKfake starts a kfake broker on 127.0.0.1 and returns its addresses.
func startKfake(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	return startKfakeCluster(t, opts...).ListenAddrs()
}

// startKfakeCluster is startKfake's cluster, for a test that watches its requests.
func startKfakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	return kafkatest.Kfake(t, opts...)
}
