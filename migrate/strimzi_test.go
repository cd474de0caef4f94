package migrate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

func sourceBody(state string) *Body {
	return &Body{Name: "pg-orders", InitialState: state, HasOffsets: true, Create: events.CreateOffsetsOnly,
		Config: events.Config{
			{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"},
			{Key: "tasks.max", Value: "1"},
			{Key: "database.hostname", Value: "db"},
			{Key: "database.password", Value: "${secrets:kafka/pg:password}"},
			{Key: "snapshot.mode", Value: "never"},
			{Key: "include.schema.changes", Value: "true"},
			{Key: "database.port", Value: "5432"},
			{Key: "name", Value: "pg-orders"},
		},
		InitialOffsets: []events.ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "server", Value: "orders"}},
			Offset:    jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("123")}},
		}},
	}
}

func sinkBody() *Body {
	return &Body{Name: "s3-sink", InitialState: fleet.StateStopped, HasOffsets: true, Create: events.CreateOffsetsOnly,
		Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"},
			{Key: "tasks.max", Value: "4"},
			{Key: "topics", Value: "orders"},
			{Key: "connector.plugin.version", Value: "4.1.0"},
			{Key: "aws.secret.access.key", Value: "hunter2"},
			{Key: "store.url", Value: "https://app:s3cret@s3.example:443/bucket"},
			{Key: "proxy.url", Value: "https://app:${file:/etc/p:pw}@proxy:443"},
			{Key: "behavior.on.null.values", Value: "null"},
			{Key: "empty", Value: ""},
		},
	}
}

// Every manifest the migration writes is a valid KafkaConnector of both API versions, its
// config values stay strings, and its name is a Kubernetes name.
func TestManifestsMatchStrimziCRD(t *testing.T) {
	judge := strimziJudge(t)
	bodies := map[string]*Body{"running source": sourceBody(fleet.StateRunning), "paused source": sourceBody(fleet.StatePaused),
		"no state": sourceBody(""), "stopped sink": sinkBody()}
	for _, version := range []string{StrimziV1beta2, StrimziV1} {
		for name, b := range bodies {
			t.Run(version+"/"+name, func(t *testing.T) {
				st := &StrimziTarget{Cluster: "connect-b", Namespace: "kafka", APIVersion: version, Dir: t.TempDir()}
				require.Empty(t, st.validate())
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
	st := &StrimziTarget{Cluster: "connect-b", APIVersion: StrimziV1beta2}
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
	require.Contains(t, warnings[0], `"aws.secret.access.key" holds a secret in clear text`)
	require.Contains(t, warnings[1], `"store.url" holds a secret in clear text`)
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

// Into an operator-managed B, names become KafkaConnector names while A is read (the body,
// its config's name and the sink's group follow), every body asks for the offsets only, and a
// connector without offsets gets no request. Two connectors becoming one name stop the run
// before anything is stopped on A.
func TestStrimziNamesAndBodies(t *testing.T) {
	src := func(name string) *fakeConnector {
		return &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, offsets: []string{`{"partition":{"filename":"f"},"offset":{"position":3}}`},
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "f", "topic": "t", "name": name}}
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"Orders_Src": src("Orders_Src"),
		"fresh": {typ: "source", state: fleet.StatePaused, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "g", "topic": "t", "name": "fresh"}},
	}}
	rep, err := export(context.Background(), Options{ConnectURL: fc.serve(t)}, true)
	require.NoError(t, err)
	prepareStrimzi(rep.Connectors)
	require.Len(t, rep.Connectors, 2)
	byName := map[string]*Entry{}
	for _, e := range rep.Connectors {
		byName[e.Name] = e
	}
	e := byName["Orders_Src"]
	require.Equal(t, "orders-src", e.TargetName)
	require.Equal(t, []string{`named orders-src on B: "Orders_Src" is not a Kubernetes resource name, and the operator names a connector after its KafkaConnector`}, e.Warnings)
	body, err := e.Body.MarshalJSON()
	require.NoError(t, err)
	req, err := events.ParseCreateRequest(body)
	require.NoError(t, err)
	require.Equal(t, "orders-src", req.Name)
	v, _ := req.Config.Get("name")
	require.Equal(t, "orders-src", v)
	require.Equal(t, events.CreateOffsetsOnly, req.Create)
	require.False(t, e.local)
	require.True(t, byName["fresh"].local, "no offsets: no request")
	require.Empty(t, byName["fresh"].Body.Create)

	fc.connectors["orders-src"] = src("orders-src")
	_, err = export(context.Background(), Options{ConnectURL: fc.serve(t), StopSource: true,
		States: &source.StateStore{Brokers: startKfake(t)}}, true)
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.Contains(t, err.Error(), `both become KafkaConnector "orders-src": rename one (--rename)`)
	require.Empty(t, fc.stops, "nothing stopped on A")
}

// Strimzi 1.0 serves kafka.strimzi.io/v1 alone: a target that names no version writes v1
// manifests; v1beta2 stays for older operators.
func TestStrimziAPIVersionDefault(t *testing.T) {
	for _, tc := range []struct{ name, version, want string }{
		{"default", "", StrimziV1},
		{"older operator", StrimziV1beta2, StrimziV1beta2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &StrimziTarget{Cluster: "connect-b", Dir: "d", APIVersion: tc.version}
			require.Empty(t, st.validate())
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
		target StrimziTarget
		errs   int
	}{
		{"good", StrimziTarget{Cluster: "connect-b", Dir: "d"}, 0},
		{"v1", StrimziTarget{Cluster: "connect-b", Dir: "d", APIVersion: "v1"}, 0},
		{"bad version", StrimziTarget{Cluster: "connect-b", Dir: "d", APIVersion: "v1beta1"}, 1},
		{"bad cluster", StrimziTarget{Cluster: "Connect_B", Dir: "d"}, 1},
		{"no dir", StrimziTarget{Cluster: "connect-b"}, 1},
		{"bad namespace", StrimziTarget{Cluster: "c", Dir: "d", Namespace: "a.b"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.target.validate(), tc.errs, fmt.Sprint(tc.target.validate()))
		})
	}
}
