package strimzi

import (
	"testing"

	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// Kubernetes reads a manifest with sigs.k8s.io/yaml, whose YAML 1.1 rules make on, off, yes,
// no, y, n booleans and 012 an octal number: every config value, name and annotation comes
// back as the same string.
func TestManifestValuesStayStrings(t *testing.T) {
	values := []string{"on", "off", "yes", "no", "y", "n", "Y", "NO", "true", "False", "1e3", "0x10", "012", "0o12", "1_000", ".inf",
		"~", "null", "", " lead", "trail ", "a: b", "a #b", "#x", "- x", "[x]", "{x}", "'q'", `"dq"`, "*ref", "&anchor", "!tag",
		"%d", "@x", "`x`", "|", ">", "multi\nline", "tab\tx", "2026-12-06", "12:30:00", "<<"}
	var cfg events.Config
	cfg = append(cfg, events.ConfigEntry{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"})
	want := map[string]string{}
	for i, v := range values {
		k := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		cfg = append(cfg, events.ConfigEntry{Key: k, Value: v})
		want[k] = v
	}
	// Keys are config values too: a key that reads as a boolean must stay a string.
	for _, k := range []string{"on", "y", "012"} {
		cfg = append(cfg, events.ConfigEntry{Key: k, Value: k})
		want[k] = k
	}
	st := &Target{Cluster: "connect-b", APIVersion: StrimziV1beta2, Namespace: "on"}
	data, _, err := st.Manifest(Connector{Name: "no", Target: "y", Config: cfg}, "m-1", connectors.Builtin())
	require.NoError(t, err)
	var m map[string]any // strict: a key read twice (two that read as true) is an error
	require.NoError(t, k8syaml.UnmarshalStrict(data, &m), "%s", data)
	meta := m["metadata"].(map[string]any)
	require.Equal(t, "y", meta["name"])
	require.Equal(t, "on", meta["namespace"])
	require.Equal(t, "no", meta["annotations"].(map[string]any)["offsetagent.dev/source-connector"])
	config := m["spec"].(map[string]any)["config"].(map[string]any)
	require.Len(t, config, len(want))
	for k, v := range want {
		require.Equal(t, v, config[k], "config %q in\n%s", k, data)
	}
}
