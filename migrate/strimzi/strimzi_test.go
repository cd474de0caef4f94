package strimzi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Every manifest the migration writes is a valid KafkaConnector of both API versions, its
// config values stay strings, and its name is a Kubernetes name.
func TestManifestsMatchStrimziCRD(t *testing.T) {
	judge := strimziJudge(t)
	bodies := map[string]*body{"running source": sourceBody(fleet.StateRunning), "paused source": sourceBody(fleet.StatePaused),
		"no state": sourceBody(""), "stopped sink": sinkBody()}
	for _, version := range []string{StrimziV1beta2, StrimziV1} {
		for name, b := range bodies {
			t.Run(version+"/"+name, func(t *testing.T) {
				st := &Target{Cluster: "connect-b", Namespace: "kafka", APIVersion: version, Dir: t.TempDir()}
				require.Empty(t, st.Validate())
				data, _, err := st.Manifest(strimziOf(b, "orders-on-a"), "m-1", connectors.Builtin())
				require.NoError(t, err)
				judge.requireCreated(t, data)
				var doc map[string]any
				require.NoError(t, yaml.Unmarshal(data, &doc))
				require.Equal(t, "kafka.strimzi.io/"+version, doc["apiVersion"])
				meta := doc["metadata"].(map[string]any)
				require.True(t, handlers.IsKubernetesName(meta["name"].(string)))
				for k, v := range doc["spec"].(map[string]any)["config"].(map[string]any) {
					require.IsType(t, "", v, "config %q must stay a string", k)
				}
			})
		}
	}
}

// The API server's judgement can fail: manifests that Kubernetes refuses are refused by
// kubeJudge, each naming the field, and the ones it takes are taken.
func TestStrimziCRDRefusesBadManifests(t *testing.T) {
	judge := strimziJudge(t)
	good := func() map[string]any {
		return map[string]any{"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaConnector",
			"metadata": map[string]any{"name": "c", "labels": map[string]any{"strimzi.io/cluster": "b"}},
			"spec":     map[string]any{"class": "X", "tasksMax": 1, "state": "running", "config": map[string]any{"a": "b"}}}
	}
	manifest := func(m map[string]any) []byte {
		data, err := k8syaml.Marshal(m)
		require.NoError(t, err)
		return data
	}
	judge.requireCreated(t, manifest(good()))
	tests := []struct {
		name string
		edit func(m map[string]any)
		// field is the one the API server names; "" when it creates the manifest.
		field string
	}{
		{"state in REST spelling", func(m map[string]any) { m["spec"].(map[string]any)["state"] = "RUNNING" }, "spec.state"},
		{"tasksMax zero", func(m map[string]any) { m["spec"].(map[string]any)["tasksMax"] = 0 }, "spec.tasksMax"},
		{"tasksMax text", func(m map[string]any) { m["spec"].(map[string]any)["tasksMax"] = "1" }, "spec.tasksMax"},
		{"misspelt field", func(m map[string]any) { m["spec"].(map[string]any)["taskMax"] = 1 }, "spec.taskMax"},
		{"no spec", func(m map[string]any) { delete(m, "spec") }, "spec"},
		{"name with capitals", func(m map[string]any) { m["metadata"].(map[string]any)["name"] = "C" }, "metadata.name"},
		{"unknown metadata field", func(m map[string]any) { m["metadata"].(map[string]any)["label"] = "x" }, "metadata.label"},
		{"v1beta2 with pause", func(m map[string]any) {
			m["apiVersion"] = "kafka.strimzi.io/v1beta2"
			m["spec"].(map[string]any)["pause"] = true
		}, ""},
		{"pause in v1", func(m map[string]any) { m["spec"].(map[string]any)["pause"] = true }, "spec.pause"},
		{"a version no CRD serves", func(m map[string]any) { m["apiVersion"] = "kafka.strimzi.io/v1beta1" }, "apiVersion"},
		{"config values of any type", func(m map[string]any) { m["spec"].(map[string]any)["config"] = map[string]any{"a": 1, "b": true} }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.edit(m)
			refused := judge.refusals(t, manifest(m))
			if tc.field == "" {
				require.Empty(t, refused)
				return
			}
			require.NotEmpty(t, refused)
			require.Equal(t, tc.field, refused[0].field, "%v", refused)
		})
	}
}

// What goes where: class, tasksMax, version and state in the spec, the rest of the config in
// spec.config with its placeholders, and a warning for each secret in clear text.
func TestManifestContent(t *testing.T) {
	st := &Target{Cluster: "connect-b", APIVersion: StrimziV1beta2}
	data, warnings, err := st.Manifest(strimziOf(sinkBody(), "s3-sink-a"), "m-1", connectors.Builtin())
	require.NoError(t, err)
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Metadata   struct {
			Name        string            `yaml:"name"`
			Namespace   string            `yaml:"namespace"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec struct {
			Class    string            `yaml:"class"`
			TasksMax int               `yaml:"tasksMax"`
			Version  string            `yaml:"version"`
			State    string            `yaml:"state"`
			Config   map[string]string `yaml:"config"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &m))
	require.Equal(t, "s3-sink", m.Metadata.Name)
	require.Empty(t, m.Metadata.Namespace)
	require.Equal(t, map[string]string{"strimzi.io/cluster": "connect-b"}, m.Metadata.Labels)
	require.Equal(t, "s3-sink-a", m.Metadata.Annotations["offsetagent.dev/source-connector"])
	require.Equal(t, "org.apache.kafka.connect.file.FileStreamSinkConnector", m.Spec.Class)
	require.Equal(t, 4, m.Spec.TasksMax)
	require.Equal(t, "4.1.0", m.Spec.Version)
	require.Equal(t, "stopped", m.Spec.State)
	require.Equal(t, map[string]string{
		"topics": "orders", "aws.secret.access.key": "hunter2", "store.url": "https://app:s3cret@s3.example:443/bucket",
		"proxy.url": "https://app:${file:/etc/p:pw}@proxy:443", "behavior.on.null.values": "null", "empty": "",
	}, m.Spec.Config)
	require.Len(t, warnings, 2)
	require.Contains(t, warnings[0].String(), `"aws.secret.access.key" holds a secret in clear text`)
	require.Contains(t, warnings[1].String(), `"store.url" holds a secret in clear text`)
	require.Contains(t, string(data), "# WARNING: config \"aws.secret.access.key\"")
	require.NotContains(t, string(data), "\nname:", "no name key anywhere but metadata")

	_, warnings, err = st.Manifest(strimziOf(sourceBody(fleet.StateRunning), "pg"), "m-1", connectors.Builtin())
	require.NoError(t, err)
	require.Empty(t, warnings, "a placeholder is no secret in clear text")
}

func TestKubernetesName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"orders-sink", "orders-sink"},
		{"Orders_Sink", "orders-sink"},
		{"my connector (v2)", "my-connector-v2"},
		{"a..b", "a.b"},
		{"-x-", "x"},
		{"__", "connector"},
		{"dbz.public.orders", "dbz.public.orders"},
		{strings.Repeat("a", 300), strings.Repeat("a", 253)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := KubernetesName(tc.in)
			require.Equal(t, tc.want, got)
			require.True(t, handlers.IsKubernetesName(got))
		})
	}
}

// Strimzi 1.0 serves kafka.strimzi.io/v1 alone: a target that names no version writes v1
// manifests; v1beta2 stays for older operators.
func TestStrimziAPIVersionDefault(t *testing.T) {
	for _, tc := range []struct{ name, version, want string }{
		{"default", "", StrimziV1},
		{"older operator", StrimziV1beta2, StrimziV1beta2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &Target{Cluster: "connect-b", Dir: "d", APIVersion: tc.version}
			require.Empty(t, st.Validate())
			require.Equal(t, tc.want, st.APIVersion)
			data, _, err := st.Manifest(strimziOf(sourceBody(fleet.StateRunning), "pg"), "m-1", connectors.Builtin())
			require.NoError(t, err)
			require.Contains(t, string(data), "apiVersion: kafka.strimzi.io/"+tc.want+"\n")
		})
	}
}

func TestStrimziTargetValidate(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		errs   int
	}{
		{"good", Target{Cluster: "connect-b", Dir: "d"}, 0},
		{"v1", Target{Cluster: "connect-b", Dir: "d", APIVersion: "v1"}, 0},
		{"bad version", Target{Cluster: "connect-b", Dir: "d", APIVersion: "v1beta1"}, 1},
		{"bad cluster", Target{Cluster: "Connect_B", Dir: "d"}, 1},
		{"no dir", Target{Cluster: "connect-b"}, 1},
		{"bad namespace", Target{Cluster: "c", Dir: "d", Namespace: "a.b"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.target.Validate(), tc.errs, fmt.Sprint(tc.target.Validate()))
		})
	}
}
