package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// Strimzi 1.0 serves kafka.strimzi.io/v1 alone: the manifests are v1 unless the flag asks for
// v1beta2 (older operators).
func TestStrimziAPIVersionFlagDefault(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "default", want: strimzi.StrimziV1},
		{name: "older operator", args: []string{"--strimzi-api-version", "v1beta2"}, want: strimzi.StrimziV1beta2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f strimziFlags
			fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
			f.register(fs)
			require.NoError(t, fs.Parse(append([]string{"--to-strimzi-cluster", "connect-b", "--manifests", "d"}, tc.args...)))
			require.Equal(t, tc.want, f.target().APIVersion)
		})
	}
}

func TestMigrateStrimziFlagErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "manifests alone", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--manifests", "d"},
			stderr: "--manifests goes with --to-strimzi-cluster or --verify"},
		{name: "verify without a REST API", args: []string{"migrate", "--verify", "--manifests", "d"}, stderr: "needs --manifests DIR and --to-connect-url"},
		{name: "verify with a migration", args: []string{"migrate", "--verify", "--to-strimzi-cluster", "b", "--manifests", "d"}, stderr: "not with --to-strimzi-cluster"},
		{name: "verify without placed offsets", args: []string{"migrate", "--verify", "--manifests", "no-such-dir", "--to-connect-url", "http://127.0.0.1:1"},
			stderr: "read the offsets placed"},
		{name: "cluster without manifests", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-strimzi-cluster", "connect-b"},
			stderr: "--to-strimzi-cluster needs --manifests DIR"},
		{name: "cluster not a resource name", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-strimzi-cluster", "Connect_B", "--manifests", "d"},
			stderr: `--to-strimzi-cluster "Connect_B": the name of a KafkaConnect resource`},
		{name: "api version", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-strimzi-cluster", "b", "--manifests", "d", "--strimzi-api-version", "v1alpha1"},
			stderr: `--strimzi-api-version "v1alpha1": v1beta2 or v1`},
		{name: "secret without a cluster", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--strimzi-secret", "kafka/s"},
			stderr: "--strimzi-secret and --strimzi-secret-file go with --to-strimzi-cluster"},
		{name: "secret without its file", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-strimzi-cluster", "b", "--manifests", "d", "--strimzi-secret", "kafka/s"},
			stderr: "--strimzi-secret needs --strimzi-secret-file FILE"},
		{name: "secret file inside the manifests", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-strimzi-cluster", "b", "--manifests", "d",
			"--strimzi-secret", "kafka/s", "--strimzi-secret-file", "d/s.yaml"}, stderr: "--strimzi-secret-file d/s.yaml is inside --manifests d"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run(tc.args, strings.NewReader(""), &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), tc.stderr)
		})
	}
}
