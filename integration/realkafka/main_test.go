package realkafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// requireEnv turns a missing java or mvn into a failure instead of a skip (set by .ci/run).
const requireEnv = "OFFSETAGENT_REQUIRE_REAL_KAFKA"

// setupTimeout bounds the jar download (first run only), the JVM start-ups and the agent build.
const setupTimeout = 8 * time.Minute

// peers are the processes every test of the package shares: one broker (or an external cluster),
// one Connect worker, the agent binary and the main agent, which writes to that worker's topics
// and validates configs with its REST API (OFFSETAGENT_CONNECT_URL).
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

	mu      sync.Mutex
	cleanup []func() // run after the tests, last first
}

var nameSeq atomic.Int64

// unique returns prefix-<run>-<n>, a name no other test or run uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%s-%d", prefix, peers.run, nameSeq.Add(1))
}

// atExit registers f to run after every test.
func atExit(f func()) {
	peers.mu.Lock()
	defer peers.mu.Unlock()
	peers.cleanup = append(peers.cleanup, f)
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if reason := missingTools(); reason != "" {
		if os.Getenv(requireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL real Kafka tier: %s (%s=1 forbids skipping it)\n", reason, requireEnv)
			return 1
		}
		peers.skip = "real Kafka tier skipped: " + reason
		fmt.Println("SKIP " + peers.skip)
		return m.Run()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	peers.run = hex.EncodeToString(b)
	dir, err := os.MkdirTemp("", "offsetagent-realkafka-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	peers.dir = dir
	code := 1
	defer func() {
		peers.mu.Lock()
		fns := peers.cleanup
		peers.mu.Unlock()
		for i := len(fns) - 1; i >= 0; i-- {
			fns[i]()
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "real Kafka tier: logs of the broker, workers and agents kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := setup(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "real Kafka tier setup: %v\n", err)
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
	if os.Getenv("OFFSETAGENT_TEST_BROKERS") != "" && os.Getenv("OFFSETAGENT_KAFKA_CACHE") != "" {
		return ""
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		// The jars may be cached from an earlier run; Jars says so without Maven.
		lib, jerr := realkafka.Jars(context.Background(), jarsConfig())
		if jerr != nil {
			return jerr.Error()
		}
		peers.lib = lib
	}
	return ""
}

func jarsConfig() realkafka.JarsConfig {
	return realkafka.JarsConfig{Version: os.Getenv("OFFSETAGENT_KAFKA_VERSION"), CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE")}
}

// setup starts the shared peers: the agent build runs while the JVMs start.
func setup(ctx context.Context) error {
	built := make(chan error, 1)
	go func() { built <- buildAgent(ctx) }()
	if peers.lib == "" {
		start := time.Now()
		lib, err := realkafka.Jars(ctx, jarsConfig())
		if err != nil {
			return err
		}
		peers.lib = lib
		if d := time.Since(start); d > 5*time.Second {
			fmt.Printf("real Kafka tier: resolved the jars in %s\n", d.Round(time.Second))
		}
	}
	switch {
	case os.Getenv("OFFSETAGENT_TEST_BROKERS") != "":
		peers.brokers = strings.Split(os.Getenv("OFFSETAGENT_TEST_BROKERS"), ",")
	case os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1":
		kc, err := tckafka.Run(ctx, "apache/kafka:"+or(os.Getenv("OFFSETAGENT_KAFKA_VERSION"), realkafka.DefaultVersion))
		if err != nil {
			return fmt.Errorf("start the Kafka container: %w", err)
		}
		atExit(func() { _ = testcontainers.TerminateContainer(kc) })
		if peers.brokers, err = kc.Brokers(ctx); err != nil {
			return err
		}
	default:
		d, err := subdir("broker")
		if err != nil {
			return err
		}
		b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: peers.lib, Dir: d})
		if err != nil {
			return err
		}
		atExit(b.Stop)
		peers.broker, peers.brokers = b, []string{b.Addr}
	}
	w, err := startWorker(ctx, "worker", connectNames("main"))
	if err != nil {
		return err
	}
	peers.worker = w
	if err := <-built; err != nil {
		return err
	}
	names := connectNames("main")
	a, err := startAgent(ctx, "agent", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":           names.config,
		"OFFSETAGENT_OFFSETS_TOPIC":          names.offsets,
		"OFFSETAGENT_ALLOWED_OFFSETS_TOPICS": names.offsets + "|" + "own-offsets-.*",
		"OFFSETAGENT_CONNECT_URL":            w.URL,
	})
	if err != nil {
		return err
	}
	peers.agent = a
	return nil
}

// connect names one Connect cluster's group and internal topics.
type connect struct{ group, config, offsets, status string }

func connectNames(cluster string) connect {
	p := "rk-" + peers.run + "-" + cluster
	return connect{group: p + "-connect", config: p + "-configs", offsets: p + "-offsets", status: p + "-status"}
}

// startWorker starts a Connect worker for the cluster names n, stopped after the tests.
func startWorker(ctx context.Context, name string, n connect) (*realkafka.Worker, error) {
	d, err := subdir(name)
	if err != nil {
		return nil, err
	}
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: peers.lib, Dir: d, Brokers: peers.brokers,
		GroupID: n.group, ConfigTopic: n.config, OffsetsTopic: n.offsets, StatusTopic: n.status})
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

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// requirePeers skips the test when the tier is skipped.
func requirePeers(t *testing.T) {
	t.Helper()
	if peers.skip != "" {
		t.Skip(peers.skip)
	}
}
