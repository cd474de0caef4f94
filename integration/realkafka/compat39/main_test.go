package compat39_test

import (
	"context"
	"flag"
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
// cluster (A) to a realkafka.DefaultVersion one (B), the upgrade path off Connect 3.x: A's
// 3.9.1 worker stops them and reports their offsets, B's newer worker runs them on from there.
func TestMigrateStopSource(t *testing.T) {
	env.RequirePeers(t)
	libB, err := realkafka.Jars(context.Background(), realkafka.JarsConfig{CacheDir: env.Cfg.CacheDir})
	require.NoError(t, err, "the Kafka %s jars of cluster B", realkafka.DefaultVersion)
	tier.MigrateStopSource(t, env, libB)
}
