package cdc_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// env is what every test of the package shares (package tier): one PostgreSQL server, one
// MariaDB server (its tests skip without it), cluster A (Broker, Worker with Debezium's
// plugins, and Agent writing to that worker's topics, namesA) and the agent binary. The
// pipeline test and the test of settings pointing at A each add a cluster B of their own; the
// tests judging by records share one on A's Kafka cluster (clusterBOnA).
var env = tier.New(tier.Config{
	Version:       os.Getenv("OFFSETAGENT_KAFKA_VERSION"),
	CacheDir:      os.Getenv("OFFSETAGENT_KAFKA_CACHE"),
	Name:          "cdc",
	NamePrefix:    "cdc",
	Label:         "real CDC tier",
	Debezium:      true,
	Postgres:      true,
	PostgresBin:   os.Getenv("OFFSETAGENT_POSTGRES_BIN"),
	MariaDB:       true,
	MariaDBPrefix: os.Getenv("OFFSETAGENT_MARIADB_PREFIX"),
})

// namesA names cluster A's Connect group and topics.
var namesA tier.Connect

func TestMain(m *testing.M) {
	flag.Parse()
	env.Cfg.Peers = startClusterA
	os.Exit(env.Main(m, func() {}))
}

// startClusterA starts cluster A: a broker, a worker with Debezium's plugins and an agent
// writing to that worker's topics.
func startClusterA(ctx context.Context, e *tier.Env) error {
	namesA = e.ConnectNames("a")
	b, w, err := e.StartCluster(ctx, "a", namesA)
	if err != nil {
		return err
	}
	e.Broker, e.Brokers, e.Worker = b, []string{b.Addr}, w
	e.Agent, err = e.StartAgentOn(ctx, "agent-a", b.Addr, namesA)
	return err
}
