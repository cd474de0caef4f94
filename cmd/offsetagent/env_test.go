package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
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
		{name: "an in-flight bound of zero, which would silently be the default",
			env:  map[string]string{"OFFSETAGENT_MAX_INFLIGHT_BYTES": "0", "OFFSETAGENT_MAX_REQUEST_BYTES": "10"},
			args: []string{"run"},
			want: []string{`OFFSETAGENT_MAX_INFLIGHT_BYTES: "0" is zero, which it cannot be: it bounds the memory of the requests held at once, at least 1024 bytes; unset it for the default (33554432)`}},
		{name: "a session timeout of zero, which would silently be the default",
			env:  map[string]string{"OFFSETAGENT_SESSION_TIMEOUT": "0s", "OFFSETAGENT_MAX_REQUEST_BYTES": "10"},
			args: []string{"run"},
			want: []string{`OFFSETAGENT_SESSION_TIMEOUT: "0s" is zero, which it cannot be: Kafka's group coordinator refuses a session timeout below group.min.session.timeout.ms (6s by default); unset it for the default (10s)`}},
		{name: "a permission check interval of zero, which would silently be the default",
			env:  map[string]string{"OFFSETAGENT_PERMISSION_CHECK_INTERVAL": "0", "OFFSETAGENT_MAX_REQUEST_BYTES": "10"},
			args: []string{"run"},
			want: []string{`OFFSETAGENT_PERMISSION_CHECK_INTERVAL: "0" is zero, which it cannot be: only a later check sees a permission granted again, and without one /readyz would stay 503 for good; unset it for the default (15s)`}},
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

// zeroHonoured are the variables with a default other than zero whose 0 the agent honours, and
// what it then does; the README's configuration table says the same in each one's row. Every
// other such variable refuses 0 by name (a nonzero tag or Validate): a zero that silently
// became the default would be a setting the agent does not do.
var zeroHonoured = map[string]string{
	"OFFSETAGENT_SHUTDOWN_TIMEOUT":   "requests still running are cut off at once on SIGTERM",
	"OFFSETAGENT_STUCK_AFTER":        "no stuck-lane check",
	"OFFSETAGENT_DEDUPE_WINDOW":      "no time bound on the results remembered",
	"OFFSETAGENT_DEDUPE_MAX_ENTRIES": "no count bound on the results remembered",
}

// Every number or duration with a default other than zero either refuses 0, naming its
// variable, or honours it as zeroHonoured says, documented in its README row.
func TestZeroIsRefusedOrHonoured(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	checked := 0
	for _, f := range configFields() {
		kind := f.field.Type.Kind()
		if kind < reflect.Int || kind > reflect.Uint64 {
			continue // numbers and durations only: an empty string or list is not read as a zero
		}
		def := ""
		for _, opt := range strings.Split(f.field.Tag.Get("env"), ",")[1:] {
			if d, ok := strings.CutPrefix(strings.TrimSpace(opt), "default="); ok {
				def = d
			}
		}
		if def == "" || def == "0" || def == "0s" {
			continue
		}
		checked++
		t.Run(f.variable, func(t *testing.T) {
			cfg, err := readConfig(context.Background(), envconfig.MapLookuper(map[string]string{f.variable: "0"}))
			err = errors.Join(err, cfg.Validate())
			if means, ok := zeroHonoured[f.variable]; ok {
				require.NoError(t, err, "0 is honoured: %s", means)
				row := ""
				for _, line := range strings.Split(string(readme), "\n") {
					if strings.HasPrefix(line, "| `"+f.variable+"`") || strings.HasPrefix(line, "| `OFFSETAGENT_") && strings.Contains(line, "`"+f.variable+"`") {
						row = line
					}
				}
				require.Regexp(t, "`?0`?: ", row, "the README's row of %s says what 0 means", f.variable)
				return
			}
			require.Error(t, err, "0 would silently be the default (%s)", def)
			require.Contains(t, err.Error(), f.variable+": ")
		})
	}
	require.Greater(t, checked, 8, "the numbers and durations with a default")
}
