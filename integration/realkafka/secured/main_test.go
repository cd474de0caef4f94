package secured_test

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// requireEnv turns a missing java or mvn into a failure instead of a skip (as package realkafka).
const requireEnv = "OFFSETAGENT_REQUIRE_REAL_KAFKA"

// setupTimeout bounds the jar download (first run only), the JVM start-ups and the agent build.
const setupTimeout = 8 * time.Minute

// peers are the processes every test of the package shares: two secured clusters, A and B,
// each a broker and a Connect worker, and the agent binary.
var peers struct {
	lib      string
	dir      string
	run      string // unique to this run: prefixes topic, group and user names
	skip     string
	agentBin string
	a, b     *cluster
	once     sync.Once
	setupErr error

	r *realkafka.Run
}

var nameSeq atomic.Int64

// unique returns prefix-<run>-<n>, a name no other test or run uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%s-%d", prefix, peers.run, nameSeq.Add(1))
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
			fmt.Fprintf(os.Stderr, "FAIL secured real Kafka tier: %s (%s=1 forbids skipping it)\n", reason, requireEnv)
			return 1
		}
		peers.skip = "secured real Kafka tier skipped: " + reason
		fmt.Println("SKIP " + peers.skip)
		return m.Run()
	}
	r, err := realkafka.NewRun("offsetagent-secured-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	peers.r, peers.run, peers.dir = r, r.ID, r.Dir
	code := 1
	defer func() {
		r.End(code != 0 && (peers.a != nil || peers.b != nil || peers.setupErr != nil), "secured real Kafka tier (the brokers, workers and agents)")
	}()
	code = m.Run()
	if peers.setupErr != nil {
		code = 1
	}
	return code
}

// requirePeers skips the test when the tier is skipped, and otherwise starts the peers on
// first use (a run of the package's JVM-free tests alone starts none), failing the test when
// they cannot start.
func requirePeers(t *testing.T) {
	t.Helper()
	if peers.skip != "" {
		t.Skip(peers.skip)
	}
	peers.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		start := time.Now()
		peers.setupErr = setup(ctx)
		if peers.setupErr == nil {
			fmt.Printf("secured real Kafka tier: two secured clusters up in %s\n", time.Since(start).Round(100*time.Millisecond))
		}
	})
	if peers.setupErr != nil {
		t.Fatalf("secured real Kafka tier setup: %v", peers.setupErr)
	}
}

// missingTools says why the tier cannot run here, or "".
func missingTools() string {
	if _, err := realkafka.Java(); err != nil {
		return err.Error()
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		return "openssl is not on the PATH (it makes the Connect worker's PKCS#12 REST keystore)"
	}
	if _, err := exec.LookPath("mvn"); err != nil {
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

// setup builds the agent and starts clusters A and B side by side.
func setup(ctx context.Context) error {
	built := make(chan error, 1)
	go func() { built <- buildAgent(ctx) }()
	if peers.lib == "" {
		lib, err := realkafka.Jars(ctx, jarsConfig())
		if err != nil {
			return err
		}
		peers.lib = lib
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := startCluster(ctx, name)
			if err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", name, err)
				return
			}
			if name == "a" {
				peers.a = c
			} else {
				peers.b = c
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, <-built)...)
}

// agentBinEnv names an agent binary to test instead of building this tree's: an older build,
// to show what the tests catch in it.
const agentBinEnv = "OFFSETAGENT_SECURED_AGENT_BIN"

// buildAgent builds cmd/offsetagent into the run's folder (or takes $OFFSETAGENT_SECURED_AGENT_BIN).
func buildAgent(ctx context.Context) error {
	if bin := os.Getenv(agentBinEnv); bin != "" {
		peers.agentBin = bin
		return nil
	}
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

// adminTLS is the fixture admin's TLS settings for cluster c: its CA and the admin's client
// certificate, a super user on the internal listener.
func (c *cluster) adminTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.ca.pool(), Certificates: []tls.Certificate{c.adminCert.TLS}}
}

func newAdminClient(c *cluster) (*kgo.Client, error) {
	// Kafka 4.0's versions: the fixture's OffsetCommit and OffsetFetch name topics, not topic ids.
	return kgo.NewClient(kgo.SeedBrokers(c.broker.InternalAddr), kgo.DialTLSConfig(c.adminTLS()),
		kgo.RequestTimeoutOverhead(10*time.Second), kgo.MaxVersions(kversion.V4_0_0()))
}

// adminTransport is a kafka-go transport for the fixture admin.
func (c *cluster) adminTransport() *kafka.Transport {
	return &kafka.Transport{TLS: c.adminTLS(), MetadataTTL: time.Second, ClientID: "secured-fixture"}
}
