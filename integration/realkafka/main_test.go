package realkafka_test

import (
	"flag"
	"os"
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// env is the package's peers (package tier): one broker (or an external cluster), one Connect
// worker, the agent binary and the main agent, which writes to that worker's topics and
// validates configs with its REST API (OFFSETAGENT_CONNECT_URL). The Kafka version is
// OFFSETAGENT_KAFKA_VERSION, realkafka.DefaultVersion by default.
var env = tier.New(tier.Config{Version: os.Getenv("OFFSETAGENT_KAFKA_VERSION"),
	CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE"), ExternalBrokers: true})

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(env.Main(m, func() {}))
}
