package events

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jaas"
)

// kafkaReading is how Kafka read one value: the golden table testdata/secrets-oracle.json,
// written by tools/oracle (make goldens) with kafka-clients' ConfigTransformer
// and JaasConfig from the inputs in testdata/secrets-oracle-cases.json.
type kafkaReading struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Kafka struct {
		// Variables is the value with each placeholder of the providers secrets, file, vault
		// and env replaced by <<provider|path|key>>.
		Variables string `json:"variables"`
		JAAS      []struct {
			Module  string            `json:"module"`
			Flag    string            `json:"flag"`
			Options map[string]string `json:"options"`
		} `json:"jaas"`
		JAASError string `json:"jaas_error"`
	} `json:"kafka"`
}

// Placeholders are found where Connect finds them and read as it reads them (ConfigVariables),
// and a sasl.jaas.config is read as Kafka's JaasConfig reads it (package jaas's Parse): accepted or
// refused alike, every entry's login module, flag and options, each option's value with its
// escapes read.
func TestSecretsReadAsKafkaReadsThem(t *testing.T) {
	data, err := os.ReadFile("testdata/secrets-oracle.json")
	require.NoError(t, err)
	var table []kafkaReading
	require.NoError(t, json.Unmarshal(data, &table))
	require.NotEmpty(t, table)
	for _, tc := range table {
		t.Run(tc.Name, func(t *testing.T) {
			var b strings.Builder
			at := 0
			for _, v := range ConfigVariables(tc.Value) {
				b.WriteString(tc.Value[at:v.Start])
				switch v.Provider {
				case "secrets", "file", "vault", "env":
					b.WriteString("<<" + v.Provider + "|" + v.Path + "|" + v.Key + ">>")
				default:
					b.WriteString(tc.Value[v.Start:v.End])
				}
				at = v.End
			}
			b.WriteString(tc.Value[at:])
			require.Equal(t, tc.Kafka.Variables, b.String(), "placeholders")

			cfg, err := jaas.Parse(tc.Value)
			if tc.Kafka.JAASError != "" {
				require.Error(t, err, "Kafka refuses it: %s", tc.Kafka.JAASError)
				return
			}
			require.NoError(t, err, "Kafka reads it")
			require.Len(t, cfg.Entries, len(tc.Kafka.JAAS))
			for i, want := range tc.Kafka.JAAS {
				e := cfg.Entries[i]
				require.Equal(t, want.Module, e.Module)
				require.Equal(t, want.Flag, "LoginModuleControlFlag: "+e.Flag)
				got := map[string]string{}
				for _, o := range e.Options {
					got[o.Name] = o.Value
				}
				require.Equal(t, want.Options, got)
			}
		})
	}
}
