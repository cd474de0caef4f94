package realkafka_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// env is the package's peers (package tier): one broker (or an external cluster), one Connect
// worker, the agent binary and the main agent, which writes to that worker's topics and
// validates configs with its REST API (OFFSETAGENT_CONNECT_URL). The Kafka version is
// OFFSETAGENT_KAFKA_VERSION, realkafka.DefaultVersion by default.
var env = tier.New(tier.Config{Version: os.Getenv("OFFSETAGENT_KAFKA_VERSION"),
	CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE"), ExternalBrokers: true})

// peers are env's processes under the names the tests use.
var peers struct {
	lib      string
	dir      string
	brokers  []string
	broker   *realkafka.Broker
	worker   *realkafka.Worker
	agentBin string
	agent    *agentProc
	run      string // unique to this run: prefixes topic and group names
	skip     string
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(env.Main(m, func() {
		peers.lib, peers.dir, peers.brokers, peers.broker = env.Lib, env.Dir, env.Brokers, env.Broker
		peers.worker, peers.agentBin, peers.run, peers.skip = env.Worker, env.AgentBin, env.Run, env.Skip
		if env.Agent != nil {
			peers.agent = wrapAgent(env.Agent)
		}
	}))
}

// unique returns prefix-<run>-<n>, a name no other test or run uses.
func unique(prefix string) string { return env.Unique(prefix) }

// stopAfter stops a process t started when t ends (and, should that not happen, after every
// test).
func stopAfter(t testing.TB, stop func()) {
	env.AtExit(stop)
	realkafka.StopAfter(t, stop)
}

// connect names one Connect cluster's group and internal topics.
type connect struct{ group, config, offsets, status string }

func connectNames(cluster string) connect {
	n := env.ConnectNames(cluster)
	return connect{group: n.Group, config: n.Config, offsets: n.Offsets, status: n.Status}
}

// startWorker starts a Connect worker for the cluster names n, stopped when t ends.
func startWorker(ctx context.Context, t testing.TB, name string, n connect) (*realkafka.Worker, error) {
	w, err := env.StartWorker(ctx, name, tier.Connect{Group: n.group, Config: n.config, Offsets: n.offsets, Status: n.status})
	if err == nil {
		realkafka.StopAfter(t, w.Stop)
	}
	return w, err
}

func subdir(name string) (string, error) { return env.Subdir(name) }

// requirePeers skips the test when the tier is skipped.
func requirePeers(t *testing.T) {
	t.Helper()
	env.RequirePeers(t)
}
