package tier

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// RequireEnv turns a missing java or mvn into a failure instead of a skip (set by .ci/run).
const RequireEnv = "OFFSETAGENT_REQUIRE_REAL_KAFKA"

// setupTimeout bounds the jar download (first run only), the JVM start-ups and the agent build.
const setupTimeout = 8 * time.Minute

// Config says which peers a test package runs against.
type Config struct {
	// Version is the Apache Kafka version of the broker and the worker; empty means
	// realkafka.DefaultVersion.
	Version string
	// CacheDir is the jar cache folder (realkafka.JarsConfig.CacheDir).
	CacheDir string
	// ExternalBrokers lets OFFSETAGENT_TEST_BROKERS (an external cluster) and
	// OFFSETAGENT_TEST_DOCKER=1 (testcontainers' apache/kafka:Version) replace the JVM broker.
	ExternalBrokers bool
}

// Env is one test package's peers: the processes every test of the package shares.
type Env struct {
	Cfg Config
	// Lib is the jar folder of Cfg.Version.
	Lib string
	// Dir is the run's folder: logs, data and files of the tests.
	Dir     string
	Brokers []string
	// Broker is nil when the brokers are external.
	Broker *realkafka.Broker
	Worker *realkafka.Worker
	// AgentBin is the agent binary built for the run.
	AgentBin string
	// Agent writes to Worker's topics and validates configs with its REST API
	// (OFFSETAGENT_CONNECT_URL).
	Agent *Agent
	// Run is unique to this run: it prefixes topic and group names.
	Run string
	// Skip says why the tier is skipped, or "".
	Skip string

	seq atomic.Int64
	run *realkafka.Run

	// transport refreshes metadata every second: kafka-go's shared default caches it for 6 s and
	// would not see the topics the agents and the worker create meanwhile.
	transport *kafka.Transport

	parityOnce  sync.Once
	parityAgent *Agent
	parityErr   error
}

// New returns the Env of cfg, not started yet (see Main).
func New(cfg Config) *Env {
	if cfg.Version == "" {
		cfg.Version = realkafka.DefaultVersion
	}
	return &Env{Cfg: cfg, transport: &kafka.Transport{MetadataTTL: time.Second}}
}

// Main is a test package's TestMain: it starts the peers (or records why the tier is skipped),
// calls ready, runs the tests and stops the peers. It keeps the logs when a test failed.
func (e *Env) Main(m *testing.M, ready func()) int {
	if reason := e.missingTools(); reason != "" {
		if os.Getenv(RequireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL real Kafka tier (%s): %s (%s=1 forbids skipping it)\n", e.Cfg.Version, reason, RequireEnv)
			return 1
		}
		e.Skip = "real Kafka tier skipped: " + reason
		fmt.Println("SKIP " + e.Skip)
		ready()
		return m.Run()
	}
	run, err := realkafka.NewRun("offsetagent-realkafka-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e.run, e.Run, e.Dir = run, run.ID, run.Dir
	code := 1
	defer func() { run.End(code != 0, "real Kafka tier (the broker, workers and agents)") }()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := e.setup(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "real Kafka tier setup (Kafka %s): %v\n", e.Cfg.Version, err)
		return code
	}
	ready()
	code = m.Run()
	return code
}

// external reports whether the brokers come from outside (an external cluster or a container).
func (e *Env) external() bool {
	return e.Cfg.ExternalBrokers && (os.Getenv("OFFSETAGENT_TEST_BROKERS") != "" || os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1")
}

// missingTools says why the tier cannot run here, or "".
func (e *Env) missingTools() string {
	if _, err := realkafka.Java(); err != nil {
		return err.Error()
	}
	if e.Cfg.ExternalBrokers && os.Getenv("OFFSETAGENT_TEST_BROKERS") != "" && e.Cfg.CacheDir != "" {
		return ""
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		// The jars may be cached from an earlier run; Jars says so without Maven.
		lib, jerr := realkafka.Jars(context.Background(), e.JarsConfig())
		if jerr != nil {
			return jerr.Error()
		}
		e.Lib = lib
	}
	return ""
}

// JarsConfig is the jar resolution of the Env's version.
func (e *Env) JarsConfig() realkafka.JarsConfig {
	return realkafka.JarsConfig{Version: e.Cfg.Version, CacheDir: e.Cfg.CacheDir}
}

// setup starts the shared peers: the agent build runs while the JVMs start.
func (e *Env) setup(ctx context.Context) error {
	built := make(chan error, 1)
	go func() { built <- e.buildAgent(ctx) }()
	if e.Lib == "" {
		start := time.Now()
		lib, err := realkafka.Jars(ctx, e.JarsConfig())
		if err != nil {
			return err
		}
		e.Lib = lib
		if d := time.Since(start); d > 5*time.Second {
			fmt.Printf("real Kafka tier: resolved the Kafka %s jars in %s\n", e.Cfg.Version, d.Round(time.Second))
		}
	}
	switch {
	case e.Cfg.ExternalBrokers && os.Getenv("OFFSETAGENT_TEST_BROKERS") != "":
		e.Brokers = strings.Split(os.Getenv("OFFSETAGENT_TEST_BROKERS"), ",")
	case e.Cfg.ExternalBrokers && os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1":
		kc, err := tckafka.Run(ctx, "apache/kafka:"+e.Cfg.Version)
		if err != nil {
			return fmt.Errorf("start the Kafka container: %w", err)
		}
		e.AtExit(func() { _ = testcontainers.TerminateContainer(kc) })
		if e.Brokers, err = kc.Brokers(ctx); err != nil {
			return err
		}
	default:
		d, err := e.Subdir("broker")
		if err != nil {
			return err
		}
		b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: e.Lib, Dir: d})
		if err != nil {
			return err
		}
		e.AtExit(b.Stop)
		e.Broker, e.Brokers = b, []string{b.Addr}
	}
	w, err := e.StartWorker(ctx, "worker", e.ConnectNames("main"))
	if err != nil {
		return err
	}
	e.Worker = w
	if err := <-built; err != nil {
		return err
	}
	names := e.ConnectNames("main")
	a, err := e.StartAgent(ctx, "agent", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":           names.Config,
		"OFFSETAGENT_OFFSETS_TOPIC":          names.Offsets,
		"OFFSETAGENT_ALLOWED_OFFSETS_TOPICS": names.Offsets + "|" + "own-offsets-.*",
		"OFFSETAGENT_CONNECT_URL":            w.URL,
	})
	if err != nil {
		return err
	}
	e.Agent = a
	return nil
}

// Unique returns prefix-<run>-<n>, a name no other test or run uses.
func (e *Env) Unique(prefix string) string {
	return fmt.Sprintf("%s-%s-%d", prefix, e.Run, e.seq.Add(1))
}

// AtExit registers f to run after every test.
func (e *Env) AtExit(f func()) { e.run.AtExit(f) }

// Connect names one Connect cluster's group and internal topics.
type Connect struct{ Group, Config, Offsets, Status string }

// ConnectNames names the Connect cluster "cluster" of this run.
func (e *Env) ConnectNames(cluster string) Connect {
	p := "rk-" + e.Run + "-" + cluster
	return Connect{Group: p + "-connect", Config: p + "-configs", Offsets: p + "-offsets", Status: p + "-status"}
}

// StartWorker starts a Connect worker of the Env's version on its brokers for the cluster names
// n, stopped after the tests.
func (e *Env) StartWorker(ctx context.Context, name string, n Connect) (*realkafka.Worker, error) {
	return e.StartWorkerOn(ctx, name, e.Lib, e.Brokers, n)
}

// StartWorkerOn starts a Connect worker from the jars lib on brokers, stopped after the tests.
func (e *Env) StartWorkerOn(ctx context.Context, name, lib string, brokers []string, n Connect) (*realkafka.Worker, error) {
	d, err := e.Subdir(name)
	if err != nil {
		return nil, err
	}
	cfg := realkafka.WorkerConfig{Lib: lib, Dir: d, Brokers: brokers,
		GroupID: n.Group, ConfigTopic: n.Config, OffsetsTopic: n.Offsets, StatusTopic: n.Status}
	// The fixture picks a free REST port and frees it for the worker: on a machine shared with
	// other test runs, another process may take it first. A new port is tried then.
	for attempt := 1; ; attempt++ {
		w, err := realkafka.StartWorker(ctx, cfg)
		if err == nil {
			e.AtExit(w.Stop)
			return w, nil
		}
		if attempt == 3 || !portTaken(filepath.Join(d, "worker.log")) {
			return nil, err
		}
		fmt.Printf("real Kafka tier: %s's REST port was taken by another process, starting it again\n", name)
	}
}

// portTaken reports whether the JVM that logged to path failed to bind a port.
func portTaken(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte("java.net.BindException: Address already in use"))
}

// Subdir creates (if needed) and returns a folder of the run's folder.
func (e *Env) Subdir(name string) (string, error) {
	d := filepath.Join(e.Dir, name)
	return d, os.MkdirAll(d, 0o755)
}

// buildAgent builds cmd/offsetagent into the run's folder.
func (e *Env) buildAgent(ctx context.Context) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command: %w", err)
	}
	e.AgentBin = filepath.Join(e.Dir, "offsetagent")
	out, err := exec.CommandContext(ctx, goBin, "build", "-o", e.AgentBin,
		"github.com/offsetagent/offsetagent/cmd/offsetagent").CombinedOutput()
	if err != nil {
		return fmt.Errorf("build the agent: %w\n%s", err, out)
	}
	return nil
}

// RequirePeers skips the test when the tier is skipped.
func (e *Env) RequirePeers(t testing.TB) {
	t.Helper()
	if e.Skip != "" {
		t.Skip(e.Skip)
	}
}
