package compat39_test

import (
	"context"
	"flag"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// Version is the Apache Kafka version of this package's broker and worker.
const Version = "3.9.1"

// env is the package's peers. OFFSETAGENT_KAFKA_VERSION and OFFSETAGENT_TEST_BROKERS do not
// apply: the package proves 3.9.1 on a broker of its own.
var env = tier.New(tier.Config{Version: Version, CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE")})

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(env.Main(m, func() {}))
}

// TestSourceInitialStates: the seed example's class, created by the agent in each
// initial_state on a 3.9.1 worker.
func TestSourceInitialStates(t *testing.T) { tier.SourceInitialStates(t, env) }

// TestSinkInitialOffsets: a FileStream sink born at topic offsets on a 3.9.1 worker.
func TestSinkInitialOffsets(t *testing.T) { tier.SinkInitialOffsets(t, env) }

// TestOffsetsRecordsByteParity: the agent's offsets records are 3.9.1's PATCH's, byte for byte.
func TestOffsetsRecordsByteParity(t *testing.T) { tier.OffsetsRecordsByteParity(t, env) }

// TestConfigRecordsParity: the agent's config records are 3.9.1's POST /connectors', byte for
// byte, in each initial state.
func TestConfigRecordsParity(t *testing.T) { tier.ConfigRecordsParity(t, env) }

// TestSinkOffsetsParity: the agent's sink group commits are 3.9.1's PATCH's.
func TestSinkOffsetsParity(t *testing.T) { tier.SinkOffsetsParity(t, env) }

// TestMigrateStopSource: `migrate --stop-source` moves a busy source and sink from a 3.9.1
// cluster (A: the package's broker and worker) to a realkafka.DefaultVersion one (B), the
// upgrade path off Connect 3.x: A's 3.9.1 worker stops them and its topics give their offsets,
// B's newer worker runs them on from there. (3.9.1 to 3.9.1 would prove nothing more: the
// writes to a 3.9.1 worker's topics are the other tests'.)
func TestMigrateStopSource(t *testing.T) {
	env.RequirePeers(t)
	libB, err := realkafka.Jars(context.Background(), realkafka.JarsConfig{CacheDir: env.Cfg.CacheDir})
	require.NoError(t, err, "the Kafka %s jars of cluster B", realkafka.DefaultVersion)
	tier.MigrateStopSource(t, env, tier.Migration{LibB: libB, SharedWorkerA: true})
}

// TestPluginVersionUnknown: Connect 3.9 has no connector.plugin.version (KIP-891, 4.1): its
// POST /connectors takes a range that 4.3.1 refuses (realkafka's TestConnectURLValidation) as
// a plain property, and the agent, which asks the worker's validate endpoint, accepts it alike.
func TestPluginVersionUnknown(t *testing.T) {
	env.RequirePeers(t)
	for _, version := range []string{"[1.0", "[0.1,0.2]"} {
		cfg := map[string]string{"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/x",
			"connector.plugin.version": version}
		name := env.Unique("plugin-version")
		tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg, "initial_state": "STOPPED"})
		env.Agent.Create(t, map[string]any{"name": name + "-agent", "config": cfg, "initial_state": "STOPPED"})
	}
}
