package source

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// connectCluster starts a kfake broker holding a Connect cluster's config and offsets topics
// ("connect-configs", "connect-offsets"), and returns it, its addresses, a client of it and a
// context that ends with the test (a minute at most).
func connectCluster(t *testing.T) (*kfake.Cluster, []string, *kafka.Client, context.Context) {
	t.Helper()
	fake := kafkatest.Kfake(t)
	brokers := fake.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	return fake, brokers, cl, ctx
}

// readConnectTopics opens the reader of connectCluster's topics, closed at the test's end.
func readConnectTopics(ctx context.Context, t *testing.T, brokers []string) *topicsReader {
	t.Helper()
	r, err := openTopics(ctx, TopicsSource{Brokers: brokers, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		connectors.Builtin(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(r.close)
	return r
}
