package cdc_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// TestFamilyStateRefusedBeforeStop: a Debezium PostgreSQL connector running on A with
// slot.drop.on.stop=true and a Kafka signal channel is refused by `migrate --stop-source`
// before anything is stopped, as its real config tells: stopping it on A would drop the slot
// B must resume from, and B (an in-process broker with Connect's and the agents' topics) has
// no signal topic. The connector is still RUNNING on A, its slot still there, nothing is
// published to B.
func TestFamilyStateRefusedBeforeStop(t *testing.T) {
	env.RequirePeers(t)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, db := env.Worker, "family_"+env.Run
	name, slot := "cdc-"+env.Run+"-family", "family_"+env.Run
	createSourceDB(t, db)
	clA := &kafka.Client{Addr: kafka.TCP(env.Broker.Addr), Timeout: 10 * time.Second}
	_, err := clA.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: name + "-signal", NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	cfg := debeziumConfig(db, slot, name)
	cfg["snapshot.mode"] = "no_data"
	cfg["slot.drop.on.stop"] = "true"
	cfg["signal.enabled.channels"] = "source,kafka"
	cfg["signal.kafka.bootstrap.servers"] = env.Broker.Addr
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg})
	t.Cleanup(func() { tier.RestOK(t, w, http.MethodDelete, "/connectors/"+name, nil) })
	tier.WaitState(t, w, name, "RUNNING")
	require.Eventually(t, func() bool { return strings.Join(slots(t, db), ",") == slot+" true" }, 30*time.Second, 100*time.Millisecond,
		"A's task streams from its slot")

	// B: an in-process broker with B's Connect topics and the agents' topics; no agent.
	fake, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	to := target.Target{Brokers: fake.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results",
		ConfigTopic: "b-configs", OffsetsTopic: "b-offsets"}
	clB := &kafka.Client{Addr: kafka.TCP(to.Brokers...), Timeout: 10 * time.Second}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clB, to.ConfigTopic, to.OffsetsTopic, true))
	_, err = clB.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: to.RequestTopic, NumPartitions: 1, ReplicationFactor: 1}, {Topic: to.ResultTopic, NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)

	// The signal channel is mapped to B: its settings are right, the state it needs is not.
	sel, err := source.NewSelection(source.SelectionFlags{Include: []string{name}, MapValue: []string{env.Broker.Addr + "=" + to.Brokers[0]}})
	require.NoError(t, err)
	rep, _, err := migrate.Migrate(ctx, migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:     &source.TopicsSource{Brokers: []string{env.Broker.Addr}, ConfigTopic: namesA.Config, OffsetsTopic: namesA.Offsets},
			ConnectURL: w.URL, StopSource: true, Selection: sel,
		},
		To: to, SelectionKey: name, Timeout: 30 * time.Second,
	})
	require.NoError(t, err)
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	out, err := json.MarshalIndent(e, "", "  ")
	require.NoError(t, err)
	t.Logf("the report's entry:\n%s", out)
	require.Equal(t, apply.OutcomeSkipped, e.Outcome)
	require.True(t, strings.HasPrefix(e.Message.String(), "refused before anything was stopped (family_state)"), e.Message.String())
	refused := map[string]string{}
	for _, h := range e.Hazards {
		if h.Check == hazard.HazardFamilyState && h.Refuse {
			refused[h.Key] = h.Message.String()
		}
	}
	require.Contains(t, refused["slot.drop.on.stop"], `drops its replication slot "`+slot+`" when it stops`)
	require.Contains(t, refused["signal.kafka.topic"], `the signal topic "`+name+`-signal" is not on B`)

	var st tier.ConnectorStatus
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)), &st))
	require.Equal(t, "RUNNING", st.Connector.State, "not stopped on A")
	require.Contains(t, slots(t, db), slot+" true", "the slot is still A's")
	lo, err := clB.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{to.RequestTopic: {kafka.LastOffsetOf(0)}}})
	require.NoError(t, err)
	require.Zero(t, lo.Topics[to.RequestTopic][0].LastOffset, "nothing published to B")
	t.Logf("refused before any stop; took %s", time.Since(started).Round(time.Millisecond))
}
