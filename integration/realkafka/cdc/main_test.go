package cdc_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// requireEnv turns a missing java, mvn or PostgreSQL into a failure instead of a skip (set by
// .ci/run).
const requireEnv = "OFFSETAGENT_REQUIRE_REAL_KAFKA"

// setupTimeout bounds the jar and plugin download (first run only), the JVM and PostgreSQL
// start-ups and the agent build.
const setupTimeout = 8 * time.Minute

// peers are what every test of the package shares: one PostgreSQL server, cluster A (a broker,
// a Connect worker with Debezium's plugins, an agent writing to that worker's topics) and the
// agent binary. The pipeline test and the test of settings pointing at A each add a cluster B
// of their own.
var peers struct {
	lib, plugins string
	dir          string
	pg           *realkafka.Postgres
	brokerA      *realkafka.Broker
	workerA      *realkafka.Worker
	namesA       connect
	agentA       *agentProc
	agentBin     string
	run          string // unique to this run: prefixes names
	skip         string

	r *realkafka.Run
}

// atExit registers f to run after every test.
func atExit(f func()) { peers.r.AtExit(f) }

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if reason := missingTools(); reason != "" {
		if os.Getenv(requireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL real CDC tier: %s (%s=1 forbids skipping it)\n", reason, requireEnv)
			return 1
		}
		peers.skip = "real CDC tier skipped: " + reason
		fmt.Println("SKIP " + peers.skip)
		return m.Run()
	}
	r, err := realkafka.NewRun("offsetagent-cdc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	peers.r, peers.run, peers.dir = r, r.ID, r.Dir
	code := 1
	defer func() { r.End(code != 0, "real CDC tier (PostgreSQL, the brokers, workers and agents)") }()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := setup(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "real CDC tier setup: %v\n", err)
		return code
	}
	code = m.Run()
	return code
}

// missingTools says why the tier cannot run here, or "".
func missingTools() string {
	if _, err := realkafka.Java(); err != nil {
		return err.Error()
	}
	if _, err := realkafka.PostgresBin(os.Getenv("OFFSETAGENT_POSTGRES_BIN")); err != nil {
		return err.Error()
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		// The jars may be cached from an earlier run; Jars says so without Maven.
		if _, jerr := realkafka.Jars(context.Background(), jarsConfig()); jerr != nil {
			return jerr.Error()
		}
	}
	return ""
}

func jarsConfig() realkafka.JarsConfig {
	return realkafka.JarsConfig{Version: os.Getenv("OFFSETAGENT_KAFKA_VERSION"), CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE"), Debezium: true}
}

// setup starts the shared peers: the agent build and PostgreSQL start while the JVMs start.
func setup(ctx context.Context) error {
	built := make(chan error, 1)
	go func() { built <- buildAgent(ctx) }()
	pgDir, err := subdir("postgres")
	if err != nil {
		return err
	}
	pg, err := realkafka.StartPostgres(ctx, realkafka.PostgresConfig{Bin: os.Getenv("OFFSETAGENT_POSTGRES_BIN"), LogDir: pgDir})
	if err != nil {
		return err
	}
	atExit(pg.Stop)
	peers.pg = pg
	start := time.Now()
	if peers.lib, err = realkafka.Jars(ctx, jarsConfig()); err != nil {
		return err
	}
	if d := time.Since(start); d > 5*time.Second {
		fmt.Printf("real CDC tier: resolved the jars and Debezium's plugins in %s\n", d.Round(time.Second))
	}
	peers.plugins = realkafka.PluginPath(peers.lib)
	peers.namesA = connectNames("a")
	if peers.brokerA, peers.workerA, err = startCluster(ctx, "a", peers.namesA); err != nil {
		return err
	}
	if err := <-built; err != nil {
		return err
	}
	peers.agentA, err = startAgent(ctx, "agent-a", peers.brokerA.Addr, peers.namesA)
	return err
}

// connect names one Connect cluster's group and internal topics.
type connect struct{ group, config, offsets, status string }

func connectNames(cluster string) connect {
	p := "cdc-" + peers.run + "-" + cluster
	return connect{group: p + "-connect", config: p + "-configs", offsets: p + "-offsets", status: p + "-status"}
}

// startCluster starts a broker and a Connect worker with Debezium's plugins on it, both stopped
// after the tests.
func startCluster(ctx context.Context, name string, n connect) (*realkafka.Broker, *realkafka.Worker, error) {
	d, err := subdir("broker-" + name)
	if err != nil {
		return nil, nil, err
	}
	b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: peers.lib, Dir: d})
	if err != nil {
		return nil, nil, err
	}
	atExit(b.Stop)
	w, err := startWorker(ctx, "worker-"+name, b.Addr, n)
	if err != nil {
		return nil, nil, err
	}
	return b, w, nil
}

// startWorker starts a Connect worker of the cluster n on broker with Debezium's plugins,
// stopped after the tests.
func startWorker(ctx context.Context, name, broker string, n connect) (*realkafka.Worker, error) {
	d, err := subdir(name)
	if err != nil {
		return nil, err
	}
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: peers.lib, Dir: d, Brokers: []string{broker},
		PluginPath: peers.plugins, GroupID: n.group, ConfigTopic: n.config, OffsetsTopic: n.offsets, StatusTopic: n.status})
	if err != nil {
		return nil, err
	}
	atExit(w.Stop)
	return w, nil
}

func subdir(name string) (string, error) {
	d := filepath.Join(peers.dir, name)
	return d, os.MkdirAll(d, 0o755)
}

// buildAgent builds cmd/offsetagent into the run's folder.
func buildAgent(ctx context.Context) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command: %w", err)
	}
	peers.agentBin = filepath.Join(peers.dir, "offsetagent")
	out, err := exec.CommandContext(ctx, goBin, "build", "-o", peers.agentBin,
		"github.com/offsetagent/offsetagent/cmd/offsetagent").CombinedOutput()
	if err != nil {
		return fmt.Errorf("build the agent: %w\n%s", err, out)
	}
	return nil
}

// requirePeers skips the test when the tier is skipped.
func requirePeers(t *testing.T) {
	t.Helper()
	if peers.skip != "" {
		t.Skip(peers.skip)
	}
}
