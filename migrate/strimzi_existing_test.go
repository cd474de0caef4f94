package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

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
		require.NoError(t, offsetstore.EnsureTopic(ctx, clB, topic, 1, nil))
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
		fc.connectors[n] = &fakeConnector{typ: "source", state: StateRunning, stopAt: -1, config: fileSourceConfig(n)}
	}
	fc.connectors["placed-other"].offsets = withOffsets
	dir := filepath.Join(t.TempDir(), "manifests")
	rep, err := Migrate(ctx, MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond,
			StopTimeout: 5 * time.Second},
		To: Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 10 * time.Second, Grace: 100 * time.Millisecond,
		Strimzi: &StrimziTarget{Cluster: "connect-b", Dir: dir},
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range rep.Connectors {
		got[e.Name] = string(e.Outcome) + " " + e.Message
	}
	require.Equal(t, map[string]string{
		"fresh-other": "skipped 409 Connector fresh-other already exists on B with another config (file): its manifest would replace that " +
			"config; delete the connector on B first, or give this one another name (--rename)",
		"placed-other": "skipped 409 Connector placed-other already exists on B with another config (file): its manifest would replace that " +
			"config; delete the connector on B first, or give this one another name (--rename)",
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
