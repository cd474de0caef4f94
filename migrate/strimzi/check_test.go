package strimzi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Every rule of checkManifest refuses a manifest that breaks it, and names the field. Each
// case is judged by the Kubernetes API server's own code with Strimzi's published CRD
// (kubeJudge): where the API server refuses the manifest, it decides the case, and
// checkManifest must refuse it naming each field the API server names; where the API server
// creates it, the rule is not Kubernetes' and the case says whose it is (beyond) and what
// checkManifest says (want). A case marked beyond that the API server refuses, or one the API
// server creates with no beyond, fails: the check and Kubernetes disagree, and one of them is
// wrong.
//
// The rules Kubernetes does not have, and why:
//   - the operator's: the strimzi.io/cluster label, naming a KafkaConnect (the operator
//     reconciles only the KafkaConnectors labelled with their KafkaConnect's name),
//     spec.class (the operator creates the connector with it; the CRD leaves it optional),
//     and the spec.config keys it sets itself (name, connector.class, tasks.max,
//     connector.plugin.version: the CRD only describes them, in prose);
//   - offsetagent's: the manifest is of the API version asked for (--strimzi-api-version: an
//     operator before 0.49 serves no v1, 1.x no v1beta2, and the API server takes either from
//     the CRD that serves both), and spec.config's values are strings (the CRD preserves any
//     value, and the operator passes a number or a YAML 1.1 boolean on in another spelling
//     than the one on A);
//   - the scale subresource's: spec.tasksMax is a replica count, at most 2^31-1 (kubeJudge
//     leaves that check out: see there), as Connect's tasks.max, a Java int.
func TestCheckManifestRefuses(t *testing.T) {
	judge := strimziJudge(t)
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	meta := func(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
	const (
		operator = "the operator's"
		ours     = "offsetagent's"
		scale    = "the scale subresource's"
	)
	tests := []struct {
		name    string
		version string                 // default v1
		edit    func(m map[string]any) // on the manifest as Kubernetes reads it
		raw     func(s string) string  // on the manifest's text
		// beyond says whose rule the case is when the API server creates the manifest, and
		// want what checkManifest says of it.
		beyond, want string
	}{
		{name: "other API version", edit: func(m map[string]any) { m["apiVersion"] = "kafka.strimzi.io/v1beta2" },
			beyond: ours, want: `apiVersion "kafka.strimzi.io/v1beta2": want kafka.strimzi.io/v1`},
		{name: "other kind", edit: func(m map[string]any) { m["kind"] = "KafkaConnect" }},
		{name: "unknown top field", edit: func(m map[string]any) { m["specs"] = map[string]any{} }},
		{name: "no metadata", edit: func(m map[string]any) { delete(m, "metadata") }},
		{name: "no name", edit: func(m map[string]any) { delete(meta(m), "name") }},
		{name: "name not a DNS name", edit: func(m map[string]any) { meta(m)["name"] = "Orders_Sink" }},
		{name: "name too long", edit: func(m map[string]any) { meta(m)["name"] = strings.Repeat("a", 254) }},
		{name: "namespace with a dot", edit: func(m map[string]any) { meta(m)["namespace"] = "a.b" }},
		{name: "unknown metadata field", edit: func(m map[string]any) { meta(m)["label"] = map[string]any{} }},
		{name: "no cluster label", edit: func(m map[string]any) { meta(m)["labels"] = map[string]any{"app": "x"} },
			beyond: operator, want: "no strimzi.io/cluster label"},
		{name: "cluster not a KafkaConnect name", edit: func(m map[string]any) { meta(m)["labels"] = map[string]any{"strimzi.io/cluster": "Connect_B"} },
			beyond: operator, want: `metadata.labels.strimzi.io/cluster "Connect_B": not the name of a KafkaConnect resource`},
		{name: "label value too long", edit: func(m map[string]any) { meta(m)["labels"].(map[string]any)["team"] = strings.Repeat("x", 64) }},
		{name: "label key not a qualified name", edit: func(m map[string]any) { meta(m)["labels"].(map[string]any)["a b"] = "x" }},
		{name: "annotation not a string", edit: func(m map[string]any) { meta(m)["annotations"].(map[string]any)["port"] = 8080 }},
		{name: "no spec", edit: func(m map[string]any) { delete(m, "spec") }},
		{name: "pause in v1", edit: func(m map[string]any) { spec(m)["pause"] = true }},
		{name: "pause not a boolean", version: StrimziV1beta2, edit: func(m map[string]any) { spec(m)["pause"] = "yes" }},
		{name: "no class", edit: func(m map[string]any) { delete(spec(m), "class") },
			beyond: operator, want: "spec.class: required"},
		{name: "class not a string", edit: func(m map[string]any) { spec(m)["class"] = 1 }},
		{name: "tasksMax zero", edit: func(m map[string]any) { spec(m)["tasksMax"] = 0 }},
		{name: "tasksMax text", edit: func(m map[string]any) { spec(m)["tasksMax"] = "1" }},
		{name: "tasksMax fraction", edit: func(m map[string]any) { spec(m)["tasksMax"] = 1.5 }},
		{name: "tasksMax above a replica count", edit: func(m map[string]any) { spec(m)["tasksMax"] = int64(1) << 31 },
			beyond: scale, want: "spec.tasksMax 2147483648: not an integer from 1 to 2147483647"},
		{name: "version not a string", edit: func(m map[string]any) { spec(m)["version"] = 4.1 }},
		{name: "state in REST spelling", edit: func(m map[string]any) { spec(m)["state"] = "RUNNING" }},
		{name: "misspelt spec field", edit: func(m map[string]any) { spec(m)["taskMax"] = 1 }},
		{name: "autoRestart enabled not a boolean", edit: func(m map[string]any) { spec(m)["autoRestart"] = map[string]any{"enabled": "true"} }},
		{name: "listOffsets without its ConfigMap", edit: func(m map[string]any) { spec(m)["listOffsets"] = map[string]any{} }},
		{name: "alterOffsets ConfigMap name not a string", edit: func(m map[string]any) {
			spec(m)["alterOffsets"] = map[string]any{"fromConfigMap": map[string]any{"name": 1}}
		}},
		{name: "config not a mapping", edit: func(m map[string]any) { spec(m)["config"] = "a=b" }},
		{name: "config key the operator sets", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["tasks.max"] = "2" },
			beyond: operator, want: "spec.config.tasks.max: not allowed"},
		{name: "config plugin version", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["connector.plugin.version"] = "1" },
			beyond: operator, want: "spec.config.connector.plugin.version: not allowed"},
		{name: "config value a number", edit: func(m map[string]any) { spec(m)["config"].(map[string]any)["database.port"] = 5432 },
			beyond: ours, want: "spec.config.database.port: a number, not a string"},
		// YAML 1.1, as Kubernetes reads manifests: a plain yes is a boolean.
		{name: "config value a YAML 1.1 boolean", raw: func(s string) string {
			return strings.Replace(s, `"include.schema.changes": "true"`, `"include.schema.changes": yes`, 1)
		}, beyond: ours, want: "spec.config.include.schema.changes: a boolean, not a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			version := tc.version
			if version == "" {
				version = StrimziV1
			}
			st := &Target{Cluster: "connect-b", Namespace: "kafka", APIVersion: version, Dir: t.TempDir()}
			data, _, err := st.Manifest(strimziOf(sourceBody(fleet.StateRunning), "pg"), "m-1", connectors.Builtin())
			require.NoError(t, err)
			require.NoError(t, checkManifest(data, version), "the manifest as written passes")
			judge.requireCreated(t, data)
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
			require.Error(t, err, "checkManifest takes it")
			require.NotContains(t, err.Error(), "5432", "config values are never shown")
			problems := manifestProblems(data, version)
			refused := judge.refusals(t, data)
			if len(refused) == 0 {
				require.NotEmpty(t, tc.beyond, "the API server creates it: whose rule is it (beyond)? checkManifest: %s", err)
				require.Contains(t, err.Error(), tc.want)
				return
			}
			require.Empty(t, tc.beyond, "the API server refuses it (%v): the case is Kubernetes', not %s", refused, tc.beyond)
			for _, r := range refused {
				named := false
				for _, p := range problems {
					// Some errors of the schema's validator name their field in their text
					// only ("Checked value must be of type integer (default format) in
					// spec.tasksMax").
					named = named || sameField(fieldOf(p), r.field) || r.field == "" && strings.Contains(r.detail, " in "+fieldOf(p))
				}
				require.True(t, named, "the API server refuses %s; checkManifest names no such field: %s", r, err)
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
