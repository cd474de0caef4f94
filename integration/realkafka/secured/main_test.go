package secured_test

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// env is the package's run (package tier) without its default peers: its peers are two secured
// clusters, A and B, each a broker and a Connect worker, started at the first RequirePeers (a
// run of the package's JVM-free tests alone starts none), and the agent binary.
// OFFSETAGENT_SECURED_AGENT_BIN names an agent binary to test instead of building this tree's:
// an older build, to show what the tests catch in it.
var env = tier.New(tier.Config{
	Version:    os.Getenv("OFFSETAGENT_KAFKA_VERSION"),
	CacheDir:   os.Getenv("OFFSETAGENT_KAFKA_CACHE"),
	Name:       "secured",
	NamePrefix: "sec",
	Label:      "secured real Kafka tier",
	Tools:      map[string]string{"openssl": "it makes the Connect worker's PKCS#12 REST keystore"},
	AgentBin:   os.Getenv("OFFSETAGENT_SECURED_AGENT_BIN"),
	Lazy:       true,
})

// peers are the two secured clusters.
var peers struct{ a, b *cluster }

func TestMain(m *testing.M) {
	flag.Parse()
	env.Cfg.Peers = startClusters
	os.Exit(env.Main(m, func() {}))
}

// startClusters starts clusters A and B side by side.
func startClusters(ctx context.Context, _ *tier.Env) error {
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
	return errors.Join(errs...)
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
