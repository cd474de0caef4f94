package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// strimziOf is the connector of body b, named source on A, whose manifest is written.
func strimziOf(b *apply.Body, source string) strimzi.Connector {
	return strimzi.Connector{Name: source, Target: b.Name, State: b.InitialState, Config: b.Config, Offsets: b.InitialOffsets}
}

// placedEntries are two connectors whose offsets are on B.
func placedEntries() []*apply.Entry {
	return []*apply.Entry{
		{Name: "s3-sink-a", TargetName: "s3-sink", Type: "sink", Outcome: apply.OutcomeSucceeded, Body: sinkBody()},
		{Name: "pg", TargetName: "pg-orders", Type: "source", Outcome: apply.OutcomeSucceeded, Body: sourceBody(fleet.StateRunning)},
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
				require.NoError(t, os.WriteFile(filepath.Join(dir, strimzi.PlacedFile), []byte("old"), 0o644))
			}
			st := &strimzi.Target{Cluster: "connect-b", Dir: dir, APIVersion: strimzi.StrimziV1beta2}
			n, err := writeManifestsOf(st, placedEntries(), "m-1", connectors.Builtin())
			require.NoError(t, err)
			require.Equal(t, 2, n)
			for _, f := range []string{"s3-sink.yaml", "pg-orders.yaml", strimzi.PlacedFile} {
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
	st := &strimzi.Target{Cluster: "connect-b", Dir: dir, APIVersion: strimzi.StrimziV1beta2, Secret: "kafka/connect-b-secrets", SecretFile: secretFile}
	require.Empty(t, st.Validate())
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

	bad := []strimzi.Target{
		{Cluster: "connect-b", Dir: dir, Secret: "connect-b-secrets", SecretFile: secretFile},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/Bad_Name", SecretFile: secretFile},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/s"},
		{Cluster: "connect-b", Dir: dir, Secret: "kafka/s", SecretFile: filepath.Join(dir, "s.yaml")},
		{Cluster: "connect-b", Dir: dir, SecretFile: secretFile},
	}
	for _, b := range bad {
		require.Len(t, b.Validate(), 1, "%+v", b)
	}
}

// A manifest that breaks the rules is not written: its connector fails at write_manifest
// (its offsets are on B), and the others are written.
func TestWriteManifestRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	entries := placedEntries()
	entries[0].Body.Name = "S3_Sink" // a name no KafkaConnector can have
	st := &strimzi.Target{Cluster: "connect-b", Dir: dir, APIVersion: strimzi.StrimziV1}
	n, err := writeManifestsOf(st, entries, "m-1", connectors.Builtin())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	bad := entries[0]
	require.Equal(t, apply.OutcomeFailed, bad.Outcome)
	require.Equal(t, StepWriteManifest, bad.FailedStep)
	require.Contains(t, bad.Message.String(), `metadata.name "S3_Sink": not a DNS subdomain name`)
	require.Empty(t, bad.Manifest)
	_, err = os.Stat(filepath.Join(dir, "s3-sink.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written for it")
	require.Equal(t, apply.OutcomeSucceeded, entries[1].Outcome)
	require.FileExists(t, filepath.Join(dir, "pg-orders.yaml"))
	placed, err := strimzi.ReadPlaced(dir)
	require.NoError(t, err)
	require.Len(t, placed, 1)
	require.Equal(t, "pg-orders", placed[0].Name)
}
