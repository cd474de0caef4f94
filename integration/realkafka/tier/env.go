package tier

import (
	"context"
	"errors"
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

	// Name names the package's run: its folder is offsetagent-<Name>-*; "realkafka" when empty.
	Name string
	// NamePrefix begins the names of its topics, groups and Connect clusters; "rk" when empty.
	NamePrefix string
	// Label names the tier in its messages; "real Kafka tier" when empty.
	Label string
	// Debezium adds Debezium's plugins to the jars (realkafka.JarsConfig.Debezium), and gives
	// every worker the Env starts their plugin.path (Plugins).
	Debezium bool
	// Postgres starts a PostgreSQL server (Env.Postgres) from the programs in PostgresBin
	// (realkafka.PostgresConfig.Bin; empty is the machine's default).
	Postgres    bool
	PostgresBin string
	// MariaDB starts a MariaDB server (Env.MariaDB) from the programs under MariaDBPrefix
	// (realkafka.MariaDBConfig.Prefix; empty is the machine's default) beside the other peers.
	// Unlike PostgreSQL's, its absence skips only the tests that call RequireMariaDB (and fails
	// them under OFFSETAGENT_REQUIRE_REAL_KAFKA=1).
	MariaDB       bool
	MariaDBPrefix string
	// Tools are the other programs the package needs, each with why; one missing skips the tier.
	Tools map[string]string
	// AgentBin is an agent binary to test instead of building this tree's.
	AgentBin string
	// Peers starts the package's shared peers instead of the default ones (a broker, a worker
	// and the main agent); it runs once the jars are resolved and PostgreSQL runs, while the
	// agent builds (StartAgent and LaunchAgent wait for the build).
	Peers func(ctx context.Context, e *Env) error
	// Lazy starts the peers at the first RequirePeers instead of before the tests, so that a
	// run of the package's JVM-free tests alone starts none.
	Lazy bool
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
	// Skip says why the tier is skipped, or why a peer the tests share is gone (a test that
	// killed it sets it), or "": RequirePeers ends every later test with it (SkipOrFail).
	Skip string
	// Plugins is the plugin.path of Debezium's plugins (Config.Debezium), or "".
	Plugins string
	// Postgres is the PostgreSQL server (Config.Postgres), or nil.
	Postgres *realkafka.Postgres
	// MariaDB is the MariaDB server (Config.MariaDB), or nil; RequireMariaDB returns it.
	MariaDB *realkafka.MariaDB
	// mariadbErr is why MariaDB did not start (realkafka.ErrNoMariaDB: it is not installed).
	mariadbErr error

	seq atomic.Int64
	run *Run

	// transport refreshes metadata every second: kafka-go's shared default caches it for 6 s and
	// would not see the topics the agents and the worker create meanwhile.
	transport *kafka.Transport

	built     chan error
	buildOnce sync.Once
	buildErr  error

	setupOnce sync.Once
	setupErr  error

	parityOnce  sync.Once
	parityAgent *Agent
	parityErr   error
}

// New returns the Env of cfg, not started yet (see Main).
func New(cfg Config) *Env {
	if cfg.Version == "" {
		cfg.Version = realkafka.DefaultVersion
	}
	if cfg.Name == "" {
		cfg.Name = "realkafka"
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = "rk"
	}
	if cfg.Label == "" {
		cfg.Label = "real Kafka tier"
	}
	return &Env{Cfg: cfg, transport: &kafka.Transport{MetadataTTL: time.Second}, built: make(chan error, 1)}
}

// Main is a test package's TestMain: it starts the peers (or records why the tier is skipped;
// with Config.Lazy, the first RequirePeers starts them), calls ready, runs the tests and stops
// the peers. It keeps the logs when a test failed.
func (e *Env) Main(m *testing.M, ready func()) int {
	if reason := e.missingTools(); reason != "" {
		if Required() {
			fmt.Fprintf(os.Stderr, "FAIL %s (%s): %s (%s=1 forbids skipping it)\n", e.Cfg.Label, e.Cfg.Version, reason, RequireEnv)
			return 1
		}
		e.Skip = e.Cfg.Label + " skipped: " + reason
		fmt.Println("SKIP " + e.Skip)
		ready()
		return m.Run()
	}
	run, err := NewRun("offsetagent-" + e.Cfg.Name + "-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e.run, e.Run, e.Dir = run, run.ID, run.Dir
	code := 1
	defer func() { run.End(code != 0, e.Cfg.Label+" (its processes)") }()
	if !e.Cfg.Lazy {
		if err := e.setup(); err != nil {
			fmt.Fprintf(os.Stderr, "%s setup (Kafka %s): %v\n", e.Cfg.Label, e.Cfg.Version, err)
			return code
		}
	}
	ready()
	code = m.Run()
	if e.setupErr != nil {
		code = 1
	}
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
	if e.Cfg.Postgres {
		if _, err := realkafka.PostgresBin(e.Cfg.PostgresBin); err != nil {
			return err.Error()
		}
	}
	for tool, why := range e.Cfg.Tools {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not on the PATH (" + why + ")"
		}
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
	return realkafka.JarsConfig{Version: e.Cfg.Version, CacheDir: e.Cfg.CacheDir, Debezium: e.Cfg.Debezium}
}

// setup starts the shared peers once (see Main and RequirePeers) and says why they did not.
func (e *Env) setup() error {
	e.setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		start := time.Now()
		e.setupErr = e.start(ctx)
		if e.setupErr == nil && e.Cfg.Lazy {
			fmt.Printf("%s: peers up in %s\n", e.Cfg.Label, time.Since(start).Round(100*time.Millisecond))
		}
	})
	return e.setupErr
}

// start starts the shared peers: the agent build and MariaDB's start run while PostgreSQL and
// the JVMs start.
func (e *Env) start(ctx context.Context) error {
	go func() { e.built <- e.buildAgent(ctx) }()
	mariadb := make(chan error, 1)
	if e.Cfg.MariaDB {
		go func() { mariadb <- e.startMariaDB(ctx) }()
	} else {
		mariadb <- nil
	}
	// Whatever else fails, setup's ctx ends only once MariaDB's start has: its server is
	// stopped after the tests, never left running.
	defer func() { e.mariadbErr = <-mariadb }()
	if e.Cfg.Postgres {
		d, err := e.Subdir("postgres")
		if err != nil {
			return err
		}
		pg, err := realkafka.StartPostgres(ctx, realkafka.PostgresConfig{Bin: e.Cfg.PostgresBin, LogDir: d})
		if err != nil {
			return err
		}
		e.AtExit(pg.Stop)
		e.Postgres = pg
	}
	if e.Lib == "" {
		start := time.Now()
		lib, err := realkafka.Jars(ctx, e.JarsConfig())
		if err != nil {
			return err
		}
		e.Lib = lib
		if d := time.Since(start); d > 5*time.Second {
			fmt.Printf("%s: resolved the Kafka %s jars in %s\n", e.Cfg.Label, e.Cfg.Version, d.Round(time.Second))
		}
	}
	if e.Cfg.Debezium {
		e.Plugins = realkafka.PluginPath(e.Lib)
	}
	start := e.startDefault
	if e.Cfg.Peers != nil {
		start = func(ctx context.Context) error { return e.Cfg.Peers(ctx, e) }
	}
	if err := start(ctx); err != nil {
		return err
	}
	return e.awaitBuild()
}

// startMariaDB starts the MariaDB server (Config.MariaDB), stopped after the tests.
func (e *Env) startMariaDB(ctx context.Context) error {
	if _, _, _, err := realkafka.MariaDBPrograms(e.Cfg.MariaDBPrefix); err != nil {
		return err
	}
	d, err := e.Subdir("mariadb")
	if err != nil {
		return err
	}
	m, err := realkafka.StartMariaDB(ctx, realkafka.MariaDBConfig{Prefix: e.Cfg.MariaDBPrefix, LogDir: d})
	if err != nil {
		return err
	}
	e.AtExit(m.Stop)
	e.MariaDB = m
	return nil
}

// startDefault starts the default peers: a broker (or the external one), a worker and the main
// agent.
func (e *Env) startDefault(ctx context.Context) error {
	switch {
	case e.Cfg.ExternalBrokers && os.Getenv("OFFSETAGENT_TEST_BROKERS") != "":
		e.Brokers = strings.Split(os.Getenv("OFFSETAGENT_TEST_BROKERS"), ",")
	case e.Cfg.ExternalBrokers && os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1":
		if err := e.startContainer(ctx); err != nil {
			return err
		}
	default:
		b, err := e.StartBroker(ctx, "broker", e.Lib)
		if err != nil {
			return err
		}
		e.Broker, e.Brokers = b, []string{b.Addr}
	}
	w, err := e.StartWorker(ctx, "worker", e.ConnectNames("main"))
	if err != nil {
		return err
	}
	e.Worker = w
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

// awaitBuild waits for the agent build and says how it went.
func (e *Env) awaitBuild() error {
	e.buildOnce.Do(func() { e.buildErr = <-e.built })
	return e.buildErr
}

// StartBroker starts a single-node KRaft broker from the jars lib in the run's folder name,
// stopped after the tests.
func (e *Env) StartBroker(ctx context.Context, name, lib string) (*realkafka.Broker, error) {
	d, err := e.Subdir(name)
	if err != nil {
		return nil, err
	}
	b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: lib, Dir: d})
	if err != nil {
		return nil, err
	}
	e.AtExit(b.Stop)
	return b, nil
}

// StartCluster starts a Kafka cluster of the Env's version: a broker ("broker-"+name) and a
// Connect worker ("worker-"+name) for the cluster names n on it, stopped after the tests.
func (e *Env) StartCluster(ctx context.Context, name string, n Connect) (*realkafka.Broker, *realkafka.Worker, error) {
	b, err := e.StartBroker(ctx, "broker-"+name, e.Lib)
	if err != nil {
		return nil, nil, err
	}
	w, err := e.StartWorkerOn(ctx, "worker-"+name, e.Lib, []string{b.Addr}, n)
	if err != nil {
		return nil, nil, err
	}
	return b, w, nil
}

// StartTestWorker starts a Connect worker (StartWorker) for the cluster names n that stops when
// t ends.
func (e *Env) StartTestWorker(ctx context.Context, t testing.TB, name string, n Connect) (*realkafka.Worker, error) {
	return e.StartTestWorkerWith(ctx, t, name, n, nil)
}

// StartTestWorkerWith is StartTestWorker with extra worker properties (WorkerConfig.Extra).
func (e *Env) StartTestWorkerWith(ctx context.Context, t testing.TB, name string, n Connect, extra map[string]string) (*realkafka.Worker, error) {
	w, err := e.startWorker(ctx, name, e.Lib, e.Brokers, n, extra)
	if err == nil {
		StopAfter(t, w.Stop)
	}
	return w, err
}

// StopAfter stops a process t started when t ends (and, should that not happen, after every
// test).
func (e *Env) StopAfter(t testing.TB, stop func()) {
	e.AtExit(stop)
	StopAfter(t, stop)
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
	p := e.Cfg.NamePrefix + "-" + e.Run + "-" + cluster
	return Connect{Group: p + "-connect", Config: p + "-configs", Offsets: p + "-offsets", Status: p + "-status"}
}

// StartWorker starts a Connect worker of the Env's version on its brokers for the cluster names
// n, stopped after the tests.
func (e *Env) StartWorker(ctx context.Context, name string, n Connect) (*realkafka.Worker, error) {
	return e.StartWorkerOn(ctx, name, e.Lib, e.Brokers, n)
}

// StartWorkerOn starts a Connect worker from the jars lib on brokers, stopped after the tests.
func (e *Env) StartWorkerOn(ctx context.Context, name, lib string, brokers []string, n Connect) (*realkafka.Worker, error) {
	return e.startWorker(ctx, name, lib, brokers, n, nil)
}

func (e *Env) startWorker(ctx context.Context, name, lib string, brokers []string, n Connect, extra map[string]string) (*realkafka.Worker, error) {
	d, err := e.Subdir(name)
	if err != nil {
		return nil, err
	}
	cfg := realkafka.WorkerConfig{Lib: lib, Dir: d, Brokers: brokers, PluginPath: e.Plugins,
		GroupID: n.Group, ConfigTopic: n.Config, OffsetsTopic: n.Offsets, StatusTopic: n.Status, Extra: extra}
	w, err := realkafka.StartWorker(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.AtExit(w.Stop)
	return w, nil
}

// Subdir creates (if needed) and returns a folder of the run's folder.
func (e *Env) Subdir(name string) (string, error) {
	d := filepath.Join(e.Dir, name)
	return d, os.MkdirAll(d, 0o755)
}

// buildAgent builds cmd/offsetagent into the run's folder (or takes Config.AgentBin) as the
// release build makes it (the Makefile's build target, the Dockerfile): cgo off and -trimpath,
// the flags that decide what is compiled (the release's -ldflags only stamp the version at
// link). make test runs this tier's tests with the same flags, so the agent's packages are the
// ones its test binaries already compiled, on an empty Go build cache too.
func (e *Env) buildAgent(ctx context.Context) error {
	if e.Cfg.AgentBin != "" {
		e.AgentBin = e.Cfg.AgentBin
		return nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command: %w", err)
	}
	e.AgentBin = filepath.Join(e.Dir, "offsetagent")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", e.AgentBin,
		"github.com/offsetagent/offsetagent/cmd/offsetagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("build the agent: %w\n%s", err, out)
	}
	return nil
}

// RequirePeers skips the test when the tier is skipped or a peer is gone (Skip), or fails it
// under RequireEnv=1 (SkipOrFail); with Config.Lazy it starts the peers on first use and fails
// the test when they cannot start. Once it returns, Lib holds the jars of Cfg.Version: the
// peers do not start without them, external brokers or not.
func (e *Env) RequirePeers(t testing.TB) {
	t.Helper()
	if e.Skip != "" {
		SkipOrFail(t, e.Skip)
		return
	}
	if err := e.setup(); err != nil {
		t.Fatalf("%s setup (Kafka %s): %v", e.Cfg.Label, e.Cfg.Version, err)
	}
}

// RequireMariaDB is RequirePeers for a test of MariaDB (Config.MariaDB): it returns the server,
// skips the test when MariaDB is not installed (a failure under OFFSETAGENT_REQUIRE_REAL_KAFKA=1)
// and fails it when the server did not start.
func (e *Env) RequireMariaDB(t testing.TB) *realkafka.MariaDB {
	t.Helper()
	e.RequirePeers(t)
	switch {
	case !e.Cfg.MariaDB:
		t.Fatalf("%s: Config.MariaDB is not set", e.Cfg.Label)
	case errors.Is(e.mariadbErr, realkafka.ErrNoMariaDB):
		SkipOrFail(t, fmt.Sprintf("%s: %v", e.Cfg.Label, e.mariadbErr))
	case e.mariadbErr != nil:
		t.Fatalf("%s: start MariaDB: %v", e.Cfg.Label, e.mariadbErr)
	}
	return e.MariaDB
}
