package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Into an operator-managed B, every selected connector is checked against B's config topic
// before anything is stopped on A, with or without offsets on A: one that exists on B with
// another config than its manifest declares is refused (409), stays untouched on A, and gets
// neither a request nor a manifest (applying it would replace B's connector's config). One that
// exists with the same config (its manifest applied already) goes on.
func TestStrimziChecksBForEveryConnector(t *testing.T) {
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clB := &kafka.Client{Addr: kafka.TCP(brokersB...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clB, "connect-configs", "connect-offsets", true))
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, clB, topic, 1, nil))
	}
	other := func(name string) map[string]string {
		cfg := fileSourceConfig(name)
		cfg["file"] = "another.txt"
		return cfg
	}
	// B's connectors: as the operator creates them from a manifest (spec.class as
	// connector.class, and the name Connect adds).
	writeConfigs(t, ctx, clB, other("fresh-other"), other("placed-other"), fileSourceConfig("fresh-same"))

	withOffsets := []string{`{"partition":{"filename":"placed-other.txt"},"offset":{"position":3}}`}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{}}
	for _, n := range []string{"fresh-other", "fresh-same", "fresh-new", "placed-other"} {
		fc.connectors[n] = &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, config: fileSourceConfig(n)}
	}
	fc.connectors["placed-other"].offsets = withOffsets
	dir := filepath.Join(t.TempDir(), "manifests")
	rep, _, err := Migrate(ctx, MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond,
			StopTimeout: 5 * time.Second},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 10 * time.Second, Grace: 100 * time.Millisecond,
		Strimzi: &strimzi.Target{Cluster: "connect-b", Dir: dir},
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range rep.Connectors {
		got[e.Name] = string(e.Outcome) + " " + e.Message.String()
	}
	require.Equal(t, map[string]string{
		"fresh-other": "skipped 409 Connector fresh-other already exists on B with another config (file): its manifest would replace that " +
			"config; delete the connector on B first, or give this one another name (Rename)",
		"placed-other": "skipped 409 Connector placed-other already exists on B with another config (file): its manifest would replace that " +
			"config; delete the connector on B first, or give this one another name (Rename)",
		"fresh-same": "succeeded no offsets on A: nothing to place on B",
		"fresh-new":  "succeeded no offsets on A: nothing to place on B",
	}, got)
	fc.mu.Lock()
	require.ElementsMatch(t, []string{"fresh-same", "fresh-new"}, fc.stops, "the refused connectors stay untouched on A")
	fc.mu.Unlock()
	for n, want := range map[string]bool{"fresh-other": false, "placed-other": false, "fresh-same": true, "fresh-new": true} {
		_, err := os.Stat(filepath.Join(dir, n+".yaml"))
		require.Equal(t, want, err == nil, "manifest of %s: %v", n, err)
	}
}

// A re-run into an operator-managed B of a sink moved across MirrorMaker 2's default policy:
// B holds the connector its manifest declared, with the topics renamed and the transform that
// gives the records back their names on A first in its chain. That is the config the re-run
// would declare again, so it goes on; a connector on B with A's config as it is (neither the
// rename nor the transform) is another config, and refused, naming those keys.
func TestStrimziRerunOfSinkAcrossMirrorMaker2(t *testing.T) {
	policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"}
	brokersB := startMM2Target(t, policy.CheckpointsTopic())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clB := &kafka.Client{Addr: kafka.TCP(brokersB...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clB, "connect-configs", "connect-offsets", true))
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, clB, topic, 1, nil))
	}
	sinkConfig := func(name string) map[string]string {
		cfg := map[string]string{"connector.class": fileSink, "file": "out.txt", "name": name}
		for i, kv := 0, routedChain("topics", "orders"); i+1 < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return cfg
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"snk":       {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: sinkConfig("snk")},
		"snk-other": {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: sinkConfig("snk-other")},
	}}
	tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokersB}, Policy: policy})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "manifests")
	run := func(key string) map[string]*apply.Entry {
		rep, _, err := Migrate(ctx, MigrateOptions{
			Options: Options{ConnectURL: fc.serve(t), SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2: &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: true}},
			To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
				OffsetsTopic: "connect-offsets"},
			SelectionKey: key, Timeout: 10 * time.Second, Grace: 100 * time.Millisecond,
			Strimzi: &strimzi.Target{Cluster: "connect-b", Dir: dir},
		})
		require.NoError(t, err)
		got := map[string]*apply.Entry{}
		for _, e := range rep.Connectors {
			got[e.Name] = e
		}
		return got
	}
	first := run(t.Name())
	require.Equal(t, apply.OutcomeSucceeded, first["snk"].Outcome, first["snk"].Message)
	require.NotNil(t, first["snk"].Body)
	onB := first["snk"].Body.Config.Map()
	require.Equal(t, "A.orders", onB["topics"])
	require.Equal(t, "restoreTopicNamesOfA,route,tag", onB["transforms"])

	// The operator applied snk's manifest; snk-other on B was made from A's config as it is.
	writeConfigs(t, ctx, clB, strimzi.OperatorConfig(first["snk"].Body.Config), sinkConfig("snk-other"))
	again := run(t.Name())
	require.Equal(t, apply.OutcomeSucceeded, again["snk"].Outcome, again["snk"].Message)
	require.Equal(t, apply.OutcomeSkipped, again["snk-other"].Outcome)
	require.Equal(t, "409 Connector snk-other already exists on B with another config (topics, transforms, transforms.restoreTopicNamesOfA.regex, "+
		"transforms.restoreTopicNamesOfA.replacement, transforms.restoreTopicNamesOfA.type): its manifest would replace that config; "+
		"delete the connector on B first, or give this one another name (Rename)", again["snk-other"].Message.String())
}
