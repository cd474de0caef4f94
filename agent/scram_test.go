package agent

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sethvargo/go-envconfig"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// escapeJAASValue writes s as a properties value of a JAAS quoted string: every character
// outside printable ASCII as a \uXXXX escape of the properties file.
func escapeJAASValue(s string) string {
	return escapeProperty(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s), false)
}

// Kafka's SCRAM clients and kafka-configs.sh derive the salted password from the password's
// UTF-8 bytes as they are (ScramFormatter.normalize), without SASLprep: a password that
// SASLprep would refuse (a control character, U+FFFD, a non-character) or change (a no-break
// space) authenticates the agent as it does a Java client, and no error or log line carries
// any part of it. The agent runs against a kfake broker that holds the SCRAM credential.
func TestSCRAMPasswordAsKafkaDerivesIt(t *testing.T) {
	tests := []struct {
		name, mechanism, password string
		fromFile                  bool
	}{
		{"control character, from the variables", "SCRAM-SHA-256", "Wq9z\azK7v-Lm2x", false},
		{"replacement character, from the variables", "SCRAM-SHA-512", "Hb4n\uFFFDtY8c-Pq3r", false},
		{"non-character, from a properties file", "SCRAM-SHA-256", "Jd6k\uFDD0sR1m-Xe5w", true},
		{"no-break space, from a properties file", "SCRAM-SHA-512", "Gf2p\u00A0vN7b-Kc8y", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(),
				kfake.Superuser(tt.mechanism, "agent", tt.password))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			// The variables, read as the agent's configuration reads them.
			var sec Security
			require.NoError(t, envconfig.ProcessWith(context.Background(), &envconfig.Config{Target: &sec, Lookuper: envconfig.MapLookuper(map[string]string{
				"OFFSETAGENT_SASL_MECHANISM": tt.mechanism, "OFFSETAGENT_SASL_USERNAME": "agent", "OFFSETAGENT_SASL_PASSWORD": tt.password,
			})}))
			require.Equal(t, tt.password, sec.SASLPassword)
			if tt.fromFile {
				file := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=" + tt.mechanism + "\nsasl.jaas.config=" + scramLoginModule +
					` required username="agent" password="` + escapeJAASValue(tt.password) + "\";\n"
				sec, _, err = ParseCommandConfig([]byte(file))
				require.NoError(t, err)
				require.Equal(t, tt.password, sec.SASLPassword)
			}
			cfg := Config{
				Brokers: c.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results", GroupID: "offsetagent",
				ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", IntentTopic: "intents",
				CreateConnectTopics: true, RequestTopicPartitions: 2, HTTPAddr: "127.0.0.1:0", LogLevel: "debug", LogFormat: "json",
				Concurrency: 2, MaxRequestBytes: 1 << 20, ShutdownTimeout: 5 * time.Second, SessionTimeout: 10 * time.Second,
				DedupeWindow: time.Hour, DedupeMaxEntries: 1000, AllowedSources: []string{"/src"}, Security: sec,
			}
			var logs syncBuffer
			reg := prometheus.NewRegistry()
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			a, err := New(cfg, Options{Registry: reg, Gatherer: reg, Logger: log, Stages: &fakeProcessor{}})
			if err != nil {
				// Where the start path logs it (cmd/offsetagent: "build agent").
				log.Error("build agent", "err", err)
				requireNoSecret(t, logs.String(), tt.password)
				t.Fatalf("build agent: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			ready := false
			for deadline := time.Now().Add(30 * time.Second); !ready && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				ready = a.Ready()
			}
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("agent did not stop within 30s")
			}
			requireNoSecret(t, logs.String(), tt.password)
			require.True(t, ready, "the agent never became ready (authenticated) with the password:\n%s", logs.String())
		})
	}
}
