package kafkaio

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testTransport is a kafka-go Transport of the test's own. kafka.DefaultTransport, which a
// client built without one shares with every test of the process, keeps a cluster's layout per
// bootstrap address for its MetadataTTL: a test whose broker listened on a port that a closed
// broker of an earlier test had used was routed by that cluster's layout, to its closed peers
// ("find coordinator of group ...: dial tcp ...: connection refused").
func testTransport(t testing.TB) *kafka.Transport {
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}
