package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Every check runs on every selected connector: one that refuses does not hide what the next
// would find, so a dry run lists all that is to fix at once, not one per run. The connector's
// problem is the first refusal.
func TestHazardsOneRefusalHidesNoOther(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokersA, brokersB := startKfake(t, kfake.ClusterID("cluster-A")), startKfake(t, kfake.ClusterID("cluster-B"))
	clA := &kafka.Client{Addr: kafka.TCP(brokersA...)}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clA, "connect-configs", "connect-offsets", true))
	writeConfigs(t, ctx, clA, map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "shop",
		"schema.history.internal.kafka.topic": "history.shop", "producer.override.bootstrap.servers": brokersA[0]})
	sel, err := source.NewSelection(source.SelectionFlags{})
	require.NoError(t, err)
	opts := Options{Topics: &source.TopicsSource{Brokers: brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"}, Selection: sel}
	src, err := openA(ctx, &opts)
	require.NoError(t, err)
	defer src.Close()
	p, err := planOn(ctx, src, &hazard.B{Target: target.Target{Brokers: brokersB}}, opts)
	require.NoError(t, err)
	entries := apply.EntriesOf(p)
	require.Len(t, entries, 1)
	refused := map[string]string{}
	for _, h := range entries[0].Hazards {
		if h.Refuse {
			refused[h.Check] = h.Key
		}
	}
	require.Equal(t, map[string]string{hazard.HazardPointsAtA: "producer.override.bootstrap.servers", hazard.HazardFamilyState: "schema.history.internal.kafka.topic"},
		refused, "%+v", entries[0].Hazards)
	require.Contains(t, entries[0].Connector.Problem.String(), "refused before anything was stopped (points_at_a)")
}
