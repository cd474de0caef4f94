package clientconfig

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"
)

// kafkaReading is what a Kafka client made of one properties file: the golden table
// testdata/props-oracle.json, written by tools/oracle (make goldens) with
// java.util.Properties.load and kafka-clients' ConfigDef and JaasContext from the inputs in
// testdata/props-oracle-cases.json.
type kafkaReading struct {
	Name  string `json:"name"`
	Text  string `json:"text"`
	Kafka struct {
		LoadError    string            `json:"load_error"`
		Properties   map[string]string `json:"properties"`
		Config       map[string]any    `json:"config"`
		ConfigErrors map[string]string `json:"config_errors"`
		JAAS         []jaasEntry       `json:"jaas"`
		JAASError    string            `json:"jaas_error"`
	} `json:"kafka"`
}

// The client properties reader gives every key the value a Kafka client gives it, byte for
// byte: java.util.Properties.load's reading of the file (ISO 8859-1, escapes, continuations,
// comments), then ConfigDef's trimming (String.trim: characters up to U+0020 at both ends,
// not other Unicode spaces) of every key Kafka defines, password keys included; and the
// credentials of sasl.jaas.config as Kafka's JaasContext reads them.
func TestPropertiesReadAsKafkaReadsThem(t *testing.T) {
	data, err := os.ReadFile("testdata/props-oracle.json")
	require.NoError(t, err)
	var table []kafkaReading
	require.NoError(t, json.Unmarshal(data, &table))
	require.NotEmpty(t, table)
	accepted := 0
	for _, tc := range table {
		t.Run(tc.Name, func(t *testing.T) {
			file := make([]byte, 0, len(tc.Text))
			for _, r := range tc.Text {
				require.LessOrEqual(t, r, rune(0xFF), "an input character is one byte")
				file = append(file, byte(r))
			}
			want := tc.Kafka
			props, err := ParseProperties(file)
			if want.LoadError != "" {
				require.Error(t, err, "Kafka: %s", want.LoadError)
				_, _, err = ParseCommandConfig(file)
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want.Properties, lastValues(props), "java.util.Properties.load")

			settings := configValues(props)
			for k, v := range want.Config {
				if s, ok := v.(string); ok && readsKey(k) {
					require.Equal(t, s, settings[k], "ConfigDef's value of %s", k)
				}
			}

			// The values reach Security as they are: the file, made complete enough to be
			// accepted (a keystore for ssl.key.password, a protocol and mechanism for SASL).
			prefix := "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/k.pem\n"
			if _, ok := want.Config["sasl.jaas.config"]; ok {
				prefix = "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
			}
			s, _, err := ParseCommandConfig([]byte(prefix + string(file)))
			if want.ConfigErrors["security.protocol"] != "" {
				require.ErrorContains(t, err, "security.protocol", "Kafka: %s", want.ConfigErrors["security.protocol"])
				return
			}
			if want.JAASError != "" {
				require.ErrorContains(t, err, "sasl.jaas.config", "Kafka: %s", want.JAASError)
				return
			}
			if jaasSupported(want.JAAS) {
				// Kafka read one Plain or Scram entry with a username and password: so does
				// offsetagent.
				if err != nil {
					require.NotContains(t, err.Error(), "sasl.jaas.config")
				}
			}
			if err != nil {
				t.Logf("refused, as offsetagent refuses what it does not support: %v", err)
				return
			}
			accepted++
			str := func(k string) string { v, _ := want.Config[k].(string); return v }
			if _, ok := want.Config["ssl.key.password"]; ok {
				require.Equal(t, str("ssl.key.password"), s.TLSKeyPassword)
			}
			if _, ok := want.Config["ssl.truststore.location"]; ok {
				require.Equal(t, str("ssl.truststore.location"), s.TLSCAFile)
			}
			if _, ok := want.Config["ssl.truststore.certificates"]; ok {
				require.Equal(t, str("ssl.truststore.certificates"), string(s.TLSCAPEM))
			}
			if len(want.JAAS) > 0 {
				require.Len(t, want.JAAS, 1)
				require.Equal(t, want.JAAS[0].Options["username"], s.SASLUsername)
				require.Equal(t, want.JAAS[0].Options["password"], s.SASLPassword)
			}
		})
	}
	require.Greater(t, accepted, len(table)/2, "most inputs are files offsetagent accepts")
}

// jaasEntry is a login module entry as Kafka's JaasContext read it, with the SCRAM
// credentials of its password option as Kafka derives them.
type jaasEntry struct {
	Module  string            `json:"module"`
	Options map[string]string `json:"options"`
	SCRAM   map[string]struct {
		Salt       []byte `json:"salt"`
		Iterations string `json:"iterations"`
		StoredKey  []byte `json:"stored_key"`
		ServerKey  []byte `json:"server_key"`
	} `json:"scram"`
}

// jaasSupported reports whether entries, as Kafka read them, are one Plain or Scram login
// module with a username and password and no other option.
func jaasSupported(entries []jaasEntry) bool {
	if len(entries) != 1 || (entries[0].Module != plainLoginModule && entries[0].Module != scramLoginModule) {
		return false
	}
	_, user := entries[0].Options["username"]
	_, pass := entries[0].Options["password"]
	return user && pass && len(entries[0].Options) == 2
}

// readsKey reports whether the client properties reader takes k's value.
func readsKey(k string) bool {
	return k == "security.protocol" || k == "sasl.mechanism" || k == "sasl.jaas.config" || slices.Contains(tlsKeys, k)
}

// The agent's SCRAM client proves the password from sasl.jaas.config to a server that holds
// the credential Kafka derived from it (ScramFormatter, as kafka-configs.sh and the Admin API
// do), passwords that SASLprep would refuse or change included: a control character, U+FFFD,
// a non-character, a no-break space, a ligature NFKC folds.
func TestSCRAMCredentialsAsKafkaDerivesThem(t *testing.T) {
	data, err := os.ReadFile("testdata/props-oracle.json")
	require.NoError(t, err)
	var table []kafkaReading
	require.NoError(t, json.Unmarshal(data, &table))
	checked := 0
	for _, tc := range table {
		for _, e := range tc.Kafka.JAAS {
			for mech, cred := range e.SCRAM {
				t.Run(tc.Name+"/"+mech, func(t *testing.T) {
					iters, err := strconv.Atoi(cred.Iterations)
					require.NoError(t, err)
					gen := scram.SHA256
					if mech == "SCRAM-SHA-512" {
						gen = scram.SHA512
					}
					server, err := gen.NewServer(func(string) (scram.StoredCredentials, error) {
						return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: iters},
							StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, nil
					})
					require.NoError(t, err)
					m, err := saslMechanism(Security{SASLMechanism: mech, SASLUsername: e.Options["username"], SASLPassword: e.Options["password"]})
					require.NoError(t, err)
					sess, msg, err := m.Start(context.Background())
					require.NoError(t, err)
					conv := server.NewConversation()
					for i := 0; i < 3; i++ {
						challenge, err := conv.Step(string(msg))
						require.NoError(t, err, "the server refused the client's message %d", i)
						if conv.Done() {
							break
						}
						var done bool
						done, msg, err = sess.Next(context.Background(), []byte(challenge))
						require.NoError(t, err)
						if done {
							break
						}
					}
					require.True(t, conv.Valid(), "the server did not authenticate the client")
					// The user name on the wire, escaped as Kafka's ScramFormatter.saslName does.
					require.Equal(t, strings.NewReplacer("=", "=3D", ",", "=2C").Replace(e.Options["username"]), conv.Username())
					checked++
				})
			}
		}
	}
	require.Greater(t, checked, 4)
}
