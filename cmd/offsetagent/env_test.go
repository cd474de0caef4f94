package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Configuration mistakes are named at once: every value that cannot be read, by its
// variable, together with the values Validate refuses; and every OFFSETAGENT_ variable that
// nothing reads (a misspelling, which would leave the setting at its default), with the name
// it most likely misspells.
func TestConfigurationMistakesAreNamed(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		// want are lines stderr must hold; unwanted must not be in it.
		want, unwanted []string
	}{
		{name: "every bad value, by variable",
			env: map[string]string{"OFFSETAGENT_CONCURRENCY": "x", "OFFSETAGENT_SHUTDOWN_TIMEOUT": "30", "OFFSETAGENT_TLS_ENABLED": "yes2",
				"OFFSETAGENT_MAX_REQUEST_BYTES": "10", "OFFSETAGENT_REQUEST_TOPIC_PARTITIONS": "99999999999999999999",
				"OFFSETAGENT_LOG_FORMAT": "yaml"},
			args: []string{"run"},
			want: []string{`OFFSETAGENT_CONCURRENCY: "x" is not a whole number`, `OFFSETAGENT_SHUTDOWN_TIMEOUT: "30" is not a duration`,
				`OFFSETAGENT_TLS_ENABLED: "yes2" is not true or false`, `OFFSETAGENT_REQUEST_TOPIC_PARTITIONS: "99999999999999999999" is out of range`,
				"OFFSETAGENT_MAX_REQUEST_BYTES: 10, must be at least 1024", `OFFSETAGENT_LOG_FORMAT: "yaml", must be json or text`},
			unwanted: []string{"Concurrency:", "ShutdownTimeout:", "OFFSETAGENT_CONCURRENCY: 0"}},
		{name: "a result reserve of zero, which would silently be the default",
			env:  map[string]string{"OFFSETAGENT_RESULT_RESERVE": "0", "OFFSETAGENT_MAX_REQUEST_BYTES": "10"},
			args: []string{"run"},
			want: []string{`OFFSETAGENT_RESULT_RESERVE: "0" is zero, which it cannot be: a request's result needs time to go out before its giveup; unset it for the default (5s)`}},
		{name: "misspelt variables of the agent",
			env:  map[string]string{"OFFSETAGENT_CONCURENCY": "4", "OFFSETAGENT_SASL_USER": "u", "OFFSETAGENT_FROBNICATE": "1", "OFFSETAGENT_MAX_REQUEST_BYTES": "10"},
			args: []string{"run"},
			want: []string{"OFFSETAGENT_CONCURENCY is not a variable offsetagent reads: ignored; did you mean OFFSETAGENT_CONCURRENCY?",
				"OFFSETAGENT_SASL_USER is not a variable offsetagent reads: ignored; did you mean OFFSETAGENT_SASL_USERNAME?",
				"OFFSETAGENT_FROBNICATE is not a variable offsetagent reads: ignored\n"}},
		{name: "misspelt variable of a client command",
			env:  map[string]string{"OFFSETAGENT_BROKER": "127.0.0.1:1", "OFFSETAGENT_BROKERS": "127.0.0.1:1", "OFFSETAGENT_FROM_CONNECT_USER_INFO": "a:b"},
			args: []string{"offsets", "--connect-timeout", "100ms", "x"},
			want: []string{"OFFSETAGENT_BROKER is not a variable offsetagent reads: ignored; did you mean OFFSETAGENT_BROKERS?"},
			// Read by export and migrate.
			unwanted: []string{"OFFSETAGENT_FROM_CONNECT_USER_INFO is not"}},
		{name: "the repository's own test variables",
			env:      map[string]string{"OFFSETAGENT_REQUIRE_REAL_KAFKA": "1", "OFFSETAGENT_TEST_BROKERS": "127.0.0.1:1", "OFFSETAGENT_KAFKA_CACHE": "/tmp/x", "OFFSETAGENT_BROKERZ": "1"},
			args:     []string{"offsets", "--connect-timeout", "100ms", "x"},
			want:     []string{"OFFSETAGENT_BROKERZ is not a variable offsetagent reads"},
			unwanted: []string{"OFFSETAGENT_REQUIRE_REAL_KAFKA is not", "OFFSETAGENT_TEST_BROKERS is not", "OFFSETAGENT_KAFKA_CACHE is not"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errOut)
			require.NotEqual(t, 0, code)
			for _, w := range tc.want {
				require.Contains(t, errOut.String(), w)
			}
			for _, w := range tc.unwanted {
				require.NotContains(t, errOut.String(), w)
			}
		})
	}
}

// The variables read are the ones the README's configuration table documents, and no
// documented one draws the unknown-variable warning.
func TestKnownVariablesAreTheDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `OFFSETAGENT_") {
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			for _, name := range regexp.MustCompile(`OFFSETAGENT_[A-Z0-9_]+`).FindAllString(cell, -1) {
				documented[name] = true
			}
		}
	}
	require.NotEmpty(t, documented)
	var environ []string
	for name := range documented {
		environ = append(environ, name+"=x")
	}
	require.Empty(t, unknownVariables(environ), "documented, yet warned about")
	for _, f := range configFields() {
		require.True(t, documented[f.variable], "%s is read but not in the README's configuration table", f.variable)
	}
	require.Contains(t, knownVariables(), "OFFSETAGENT_SASL_PASSWORD", "nested structs are walked")
}
