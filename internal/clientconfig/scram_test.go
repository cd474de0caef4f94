package clientconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
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
// space) authenticates the agent and the CLI as it does a Java client, and no error carries
// any part of it. The connections authenticate to a kfake broker that holds the SCRAM
// credential.
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
			// Both ways the agent and the CLI reach the brokers: the transport (clients and
			// writers) and the dialer (readers and the consumer group).
			conns, err := NewConnections(sec)
			if err != nil {
				requireNoSecret(t, err.Error(), tt.password)
				t.Fatalf("build connections: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...), Transport: conns.Transport, Timeout: 10 * time.Second}
			_, err = client.Metadata(ctx, &kafka.MetadataRequest{})
			if err != nil {
				requireNoSecret(t, err.Error(), tt.password)
			}
			require.NoError(t, err, "the transport did not authenticate with the password")
			conn, err := conns.Dialer.DialContext(ctx, "tcp", c.ListenAddrs()[0])
			if err != nil {
				requireNoSecret(t, err.Error(), tt.password)
			}
			require.NoError(t, err, "the dialer did not authenticate with the password")
			require.NoError(t, conn.Close())
		})
	}
}
