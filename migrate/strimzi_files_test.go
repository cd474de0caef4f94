package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// strimziOf is the connector of body b, named source on A, whose manifest is written.
func strimziOf(b *Body, source string) strimziConnector {
	return strimziConnector{Name: source, Target: b.Name, State: b.InitialState, Config: b.Config, Offsets: b.InitialOffsets}
}

// placedEntries are two connectors whose offsets are on B.
func placedEntries() []*Entry {
	return []*Entry{
		{Name: "s3-sink-a", TargetName: "s3-sink", Type: "sink", Outcome: OutcomeSucceeded, Body: sinkBody()},
		{Name: "pg", TargetName: "pg-orders", Type: "source", Outcome: OutcomeSucceeded, Body: sourceBody(fleet.StateRunning)},
	}
}

// The manifests hold the configs, secrets too: they are written for their owner alone, in a
// directory made for their owner alone, also over files a wider mode left.
func TestManifestFilesArePrivate(t *testing.T) {
	tests := []struct {
		name     string
		existing bool // the directory and a manifest exist already, with wide modes
	}{
		{name: "new directory"},
		{name: "existing files", existing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gitops", "connectors")
			if tt.existing {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s3-sink.yaml"), []byte("old"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(dir, PlacedFile), []byte("old"), 0o644))
			}
			st := &StrimziTarget{Cluster: "connect-b", Dir: dir, APIVersion: StrimziV1beta2}
			n, err := writeManifestsOf(st, placedEntries(), "m-1", connectors.Builtin())
			require.NoError(t, err)
			require.Equal(t, 2, n)
			for _, f := range []string{"s3-sink.yaml", "pg-orders.yaml", PlacedFile} {
				fi, err := os.Stat(filepath.Join(dir, f))
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
			}
			fi, err := os.Stat(dir)
			require.NoError(t, err)
			if tt.existing {
				require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "a directory that was there keeps its mode")
			} else {
				require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
			}
		})
	}
}

// With a Kubernetes Secret named, every value that holds a secret in clear text is a
// reference to it (${secrets:NAMESPACE/NAME:KEY}, Strimzi's KubernetesSecretConfigProvider),
// the manifests warn of none, and the values go to a Secret manifest, 0600, outside the
// manifests directory.
func TestStrimziSecretReferences(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "connectors")
	secretFile := filepath.Join(root, "private", "connect-b-secrets.yaml")
	st := &StrimziTarget{Cluster: "connect-b", Dir: dir, APIVersion: StrimziV1beta2, Secret: "kafka/connect-b-secrets", SecretFile: secretFile}
	require.Empty(t, st.validate())
	entries := placedEntries()
	_, err := writeManifestsOf(st, entries, "m-1", connectors.Builtin())
	require.NoError(t, err)
	for _, e := range entries {
		require.Empty(t, e.Warnings, e.Name)
	}

	data, err := os.ReadFile(filepath.Join(dir, "s3-sink.yaml"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, k8syaml.UnmarshalStrict(data, &m))
	require.NotContains(t, string(data), "hunter2")
	require.NotContains(t, string(data), "s3cret")
	require.NotContains(t, string(data), "WARNING")
	config := m["spec"].(map[string]any)["config"].(map[string]any)
	require.Equal(t, "${secrets:kafka/connect-b-secrets:s3-sink.aws.secret.access.key}", config["aws.secret.access.key"])
	require.Equal(t, "${secrets:kafka/connect-b-secrets:s3-sink.store.url}", config["store.url"])
	require.Equal(t, "https://app:${file:/etc/p:pw}@proxy:443", config["proxy.url"], "a placeholder stays as it was")
	require.Equal(t, "orders", config["topics"])

	fi, err := os.Stat(secretFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err = os.ReadFile(secretFile)
	require.NoError(t, err)
	var secret struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name        string            `json:"name"`
			Namespace   string            `json:"namespace"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Type       string            `json:"type"`
		StringData map[string]string `json:"stringData"`
	}
	require.NoError(t, k8syaml.UnmarshalStrict(data, &secret), "%s", data)
	require.Equal(t, "v1", secret.APIVersion)
	require.Equal(t, "Secret", secret.Kind)
	require.Equal(t, "connect-b-secrets", secret.Metadata.Name)
	require.Equal(t, "kafka", secret.Metadata.Namespace)
	require.Equal(t, "Opaque", secret.Type)
	require.Equal(t, "m-1", secret.Metadata.Annotations["offsetagent.dev/migration-id"])
	require.Equal(t, map[string]string{
		"s3-sink.aws.secret.access.key": "hunter2",
		"s3-sink.store.url":             "https://app:s3cret@s3.example:443/bucket",
	}, secret.StringData)

	bad := []StrimziTarget{
		{Cluster: "connect-b", Dir: dir, Secret: "connect-b-secrets", SecretFile: secretFile},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/Bad_Name", SecretFile: secretFile},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/s"},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/s", SecretFile: filepath.Join(dir, "s.yaml")},
		{Cluster: "connect-b", Dir: dir, SecretFile: secretFile},
	}
	for _, b := range bad {
		require.Len(t, b.validate(), 1, "%+v", b)
	}
}
