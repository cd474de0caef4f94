package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// Every rule of checkManifest refuses a manifest that breaks it, and names the field. Where
// Strimzi's published CRD schema has the rule too, it refuses the manifest as well (crd):
// the check agrees with the schema, and adds what the schema leaves to Kubernetes' metadata
// rules and to the operator.
func TestCheckManifestRefuses(t *testing.T) {
	schemas := crdSchemas(t)
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	meta := func(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
	tests := []struct {
		name    string
		version string                 // default v1
		edit    func(m map[string]any) // on the manifest as Kubernetes reads it
		raw     func(s string) string  // on the manifest's text
		want    string
		crd     bool // the CRD's schema refuses it too
	}{
		{name: "other API version", edit: func(m map[string]any) { m["apiVersion"] = "kafka.strimzi.io/v1beta2" },
			want: `apiVersion "kafka.strimzi.io/v1beta2": want kafka.strimzi.io/v1`},
		{name: "other kind", edit: func(m map[string]any) { m["kind"] = "KafkaConnect" }, want: `kind "KafkaConnect": want KafkaConnector`},
		{name: "unknown top field", edit: func(m map[string]any) { m["specs"] = map[string]any{} }, want: "specs: unknown field", crd: true},
		{name: "no metadata", edit: func(m map[string]any) { delete(m, "metadata") }, want: "metadata: required"},
		{name: "no name", edit: func(m map[string]any) { delete(meta(m), "name") }, want: "metadata.name: required"},
		{name: "name not a DNS name", edit: func(m map[string]any) { meta(m)["name"] = "Orders_Sink" }, want: `metadata.name "Orders_Sink": not a DNS subdomain name`},
		{name: "name too long", edit: func(m map[string]any) { meta(m)["name"] = strings.Repeat("a", 254) }, want: "metadata.name \"aaa"},
		{name: "namespace with a dot", edit: func(m map[string]any) { meta(m)["namespace"] = "a.b" }, want: `metadata.namespace "a.b": not a namespace name`},
		{name: "unknown metadata field", edit: func(m map[string]any) { meta(m)["label"] = map[string]any{} }, want: "metadata.label: unknown field"},
		{name: "no cluster label", edit: func(m map[string]any) { meta(m)["labels"] = map[string]any{"app": "x"} }, want: "no strimzi.io/cluster label"},
		{name: "cluster not a KafkaConnect name", edit: func(m map[string]any) { meta(m)["labels"] = map[string]any{"strimzi.io/cluster": "Connect_B"} },
			want: `metadata.labels.strimzi.io/cluster "Connect_B": not the name of a KafkaConnect resource`},
		{name: "label value too long", edit: func(m map[string]any) { meta(m)["labels"].(map[string]any)["team"] = strings.Repeat("x", 64) },
			want: "metadata.labels.team \"xxx"},
		{name: "label key not a qualified name", edit: func(m map[string]any) { meta(m)["labels"].(map[string]any)["a b"] = "x" },
			want: `metadata.labels "a b": not a qualified name`},
		{name: "annotation not a string", edit: func(m map[string]any) { meta(m)["annotations"].(map[string]any)["port"] = 8080 },
			want: "metadata.annotations.port: 8080 is not a string"},
		{name: "no spec", edit: func(m map[string]any) { delete(m, "spec") }, want: "spec: required", crd: true},
		{name: "pause in v1", edit: func(m map[string]any) { spec(m)["pause"] = true }, want: "spec.pause: removed in kafka.strimzi.io/v1: use spec.state", crd: true},
		{name: "pause not a boolean", version: StrimziV1beta2, edit: func(m map[string]any) { spec(m)["pause"] = "yes" }, want: `spec.pause "yes": not a boolean`, crd: true},
		{name: "no class", edit: func(m map[string]any) { delete(spec(m), "class") }, want: "spec.class: required"},
		{name: "class not a string", edit: func(m map[string]any) { spec(m)["class"] = 1 }, want: "spec.class 1: not a class name", crd: true},
		{name: "tasksMax zero", edit: func(m map[string]any) { spec(m)["tasksMax"] = 0 }, want: "spec.tasksMax 0: not an integer of at least 1", crd: true},
		{name: "tasksMax text", edit: func(m map[string]any) { spec(m)["tasksMax"] = "1" }, want: `spec.tasksMax "1": not an integer`, crd: true},
		{name: "tasksMax fraction", edit: func(m map[string]any) { spec(m)["tasksMax"] = 1.5 }, want: "spec.tasksMax 1.5: not an integer", crd: true},
		{name: "version not a string", edit: func(m map[string]any) { spec(m)["version"] = 4.1 }, want: "spec.version 4.1: not a string", crd: true},
		{name: "state in REST spelling", edit: func(m map[string]any) { spec(m)["state"] = "RUNNING" }, want: `spec.state "RUNNING": one of running, paused, stopped`, crd: true},
		{name: "misspelt spec field", edit: func(m map[string]any) { spec(m)["taskMax"] = 1 }, want: "spec.taskMax: unknown field", crd: true},
		{name: "autoRestart enabled not a boolean", edit: func(m map[string]any) { spec(m)["autoRestart"] = map[string]any{"enabled": "true"} },
			want: `spec.autoRestart.enabled "true": not a boolean`, crd: true},
		{name: "listOffsets without its ConfigMap", edit: func(m map[string]any) { spec(m)["listOffsets"] = map[string]any{} },
			want: "spec.listOffsets.toConfigMap: required", crd: true},
		{name: "alterOffsets ConfigMap name not a string", edit: func(m map[string]any) {
			spec(m)["alterOffsets"] = map[string]any{"fromConfigMap": map[string]any{"name": 1}}
		}, want: "spec.alterOffsets.fromConfigMap.name 1: not a string", crd: true},
		{name: "config not a mapping", edit: func(m map[string]any) { spec(m)["config"] = "a=b" }, want: `spec.config: "a=b" is not a mapping`, crd: true},
		{name: "config key the operator sets", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["tasks.max"] = "2" },
			want: "spec.config.tasks.max: not allowed"},
		{name: "config plugin version", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["connector.plugin.version"] = "1" },
			want: "spec.config.connector.plugin.version: not allowed"},
		{name: "config value a number", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["database.port"] = 5432 },
			want: "spec.config.database.port: a number, not a string"},
		// YAML 1.1, as Kubernetes reads manifests: a plain yes is a boolean.
		{name: "config value a YAML 1.1 boolean", raw: func(s string) string {
			return strings.Replace(s, `"include.schema.changes": "true"`, `"include.schema.changes": yes`, 1)
		}, want: "spec.config.include.schema.changes: a boolean, not a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			version := tc.version
			if version == "" {
				version = StrimziV1
			}
			st := &StrimziTarget{Cluster: "connect-b", Namespace: "kafka", APIVersion: version, Dir: t.TempDir()}
			data, _, err := st.Manifest(sourceBody(StateRunning), "pg", "m-1", connectors.Builtin())
			require.NoError(t, err)
			require.NoError(t, checkManifest(data, version), "the manifest as written passes")
			if tc.raw != nil {
				broken := tc.raw(string(data))
				require.NotEqual(t, string(data), broken)
				data = []byte(broken)
			} else {
				var m map[string]any
				require.NoError(t, k8syaml.Unmarshal(data, &m))
				tc.edit(m)
				data, err = k8syaml.Marshal(m)
				require.NoError(t, err)
			}
			err = checkManifest(data, version)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "5432", "config values are never shown")
			if tc.crd {
				var doc map[string]any
				require.NoError(t, k8syaml.Unmarshal(data, &doc))
				require.Error(t, schemas[version].Validate(jsonDoc(t, doc)), "the CRD's schema refuses it too")
			}
		})
	}
}

// v1beta2 keeps spec.pause, which operators before 1.0 read.
func TestCheckManifestV1beta2Pause(t *testing.T) {
	data := []byte("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnector\nmetadata:\n  name: c\n  labels:\n    strimzi.io/cluster: b\n" +
		"spec:\n  class: X\n  pause: true\n  config:\n    a: \"1\"\n    b: null\n")
	require.NoError(t, checkManifest(data, StrimziV1beta2))
	err := checkManifest([]byte(strings.Replace(string(data), "v1beta2", "v1", 1)), StrimziV1)
	require.ErrorContains(t, err, "spec.pause: removed in kafka.strimzi.io/v1")
}

// A manifest that breaks the rules is not written: its connector fails at write_manifest
// (its offsets are on B), and the others are written.
func TestWriteManifestRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	entries := placedEntries()
	entries[0].Body.Name = "S3_Sink" // a name no KafkaConnector can have
	st := &StrimziTarget{Cluster: "connect-b", Dir: dir, APIVersion: StrimziV1}
	n, err := st.writeManifests(entries, "m-1", connectors.Builtin())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	bad := entries[0]
	require.Equal(t, OutcomeFailed, bad.Outcome)
	require.Equal(t, StepWriteManifest, bad.FailedStep)
	require.Contains(t, bad.Message, `metadata.name "S3_Sink": not a DNS subdomain name`)
	require.Empty(t, bad.Manifest)
	_, err = os.Stat(filepath.Join(dir, "s3-sink.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written for it")
	require.Equal(t, OutcomeSucceeded, entries[1].Outcome)
	require.FileExists(t, filepath.Join(dir, "pg-orders.yaml"))
	placed, err := readPlaced(dir)
	require.NoError(t, err)
	require.Len(t, placed, 1)
	require.Equal(t, "pg-orders", placed[0].Name)
}
