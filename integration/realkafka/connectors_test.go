package realkafka_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestWipeExistingOffsets: offsets that outlived a deleted connector are wiped by the request
// that creates a connector of the same name: the worker sees only the new ones.
func TestWipeExistingOffsets(t *testing.T) {
	env.RequirePeers(t)
	s := env.NewFileSource(t, "wipe")
	cfg := s.Request("STOPPED")["config"]
	tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": s.Name, "config": cfg, "initial_state": "STOPPED"})
	tier.RestOK(t, env.Worker, http.MethodPatch, "/connectors/"+s.Name+"/offsets", map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"filename": s.File}, "offset": map[string]any{"position": 3}},
		map[string]any{"partition": map[string]any{"filename": "/old/other.txt"}, "offset": map[string]any{"position": 99}},
	}})
	tier.RestOK(t, env.Worker, http.MethodDelete, "/connectors/"+s.Name, nil)
	require.Eventually(t, func() bool {
		status, _ := tier.Rest(t, env.Worker, http.MethodGet, "/connectors/"+s.Name, nil)
		return status == http.StatusNotFound
	}, 30*time.Second, 100*time.Millisecond)

	res := env.Agent.Create(t, s.Request("RUNNING"))
	require.Equal(t, 2, *res.Data.OffsetsWiped)
	require.Equal(t, 1, *res.Data.OffsetsWritten)
	s.RequireBorn(t, env.Worker, "RUNNING")
}

// TestFileStreamSinkInitialOffsets: a FileStream sink born at topic offsets writes the records
// from those offsets on into its file (tier.SinkInitialOffsets).
func TestFileStreamSinkInitialOffsets(t *testing.T) { tier.SinkInitialOffsets(t, env) }

// TestConnectorSpecificOffsetsTopic: a source connector with its own offsets.storage.topic gets
// its initial offsets in that topic, and the worker reads them there.
func TestConnectorSpecificOffsetsTopic(t *testing.T) {
	env.RequirePeers(t)
	s := env.NewFileSource(t, "own")
	own := env.Unique("own-offsets")
	env.CreateTopic(t, own, 5, true)
	req := s.Request("RUNNING")
	req["config"].(map[string]string)["offsets.storage.topic"] = own
	env.Agent.Create(t, req)
	// As Connect's ConnectorOffsetBackingStore.set: the connector's topic is the primary store,
	// the worker's topic gets a copy (docs/connect-internals.md, "Connector-specific offsets topics
	// (KIP-618)").
	require.Len(t, env.OffsetRecords(t, own, s.Name), 1, "the record in the connector's own offsets topic")
	require.Len(t, env.OffsetRecords(t, env.ConnectNames("main").Offsets, s.Name), 1, "the copy in the worker's offsets topic")
	s.RequireBorn(t, env.Worker, "RUNNING")
}

// TestMirrorSourceInitialOffsets: a MirrorMaker 2 MirrorSourceConnector born at an upstream
// offset mirrors the records after it (its offset is the last replicated record's).
func TestMirrorSourceInitialOffsets(t *testing.T) {
	env.RequirePeers(t)
	name := env.Unique("mm2")
	upstream := name + "-orders"
	env.CreateTopic(t, upstream, 1, false)
	env.Produce(t, upstream, tier.Numbered("r-%d", 10)...)
	brokers := strings.Join(env.Brokers, ",")
	res := env.Agent.Create(t, map[string]any{"name": name,
		"config": map[string]string{
			"connector.class":      "org.apache.kafka.connect.mirror.MirrorSourceConnector",
			"source.cluster.alias": "src", "target.cluster.alias": "tgt",
			"source.cluster.bootstrap.servers": brokers, "target.cluster.bootstrap.servers": brokers,
			"topics": upstream, "tasks.max": "1",
			"key.converter":      "org.apache.kafka.connect.converters.ByteArrayConverter",
			"value.converter":    "org.apache.kafka.connect.converters.ByteArrayConverter",
			"replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
			"sync.topic.acls.enabled": "false", "sync.topic.configs.enabled": "false",
			"refresh.topics.interval.seconds": "1",
		},
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"cluster": "src", "topic": upstream, "partition": 0},
			"offset": map[string]any{"offset": 5}}}})
	require.Equal(t, "The offsets for this connector have been altered successfully", res.Data.InitialOffsetsResponse)
	tier.WaitState(t, env.Worker, name, "RUNNING")
	got := env.WaitValues(t, "src."+upstream, 4)
	require.Equal(t, []string{"r-6", "r-7", "r-8", "r-9"}, got)
}

// TestConnectURLValidation: with OFFSETAGENT_CONNECT_URL the agent validates configs with the
// real worker and refuses what the worker's POST /connectors refuses, with POST's status and
// text; a valid config passes (every other test of the main agent). The agent asks the
// validate endpoint, which answers a config with errors 200 (with the errors) and an exception
// of the validation 500 with the exception wrapped ("<class>: <message>"), where POST answers
// the exception's own status and message: 400 for an unknown class.
//
// Each config is POSTed twice and the second answer is the one compared: the worker caches a
// class it failed to load (CachedConnectors) and from then on answers it wrapped once more,
// "org.apache.kafka.connect.errors.ConnectException: Failed to find any class ...", or, for a
// plugin version it has none of, with a NullPointerException (500) instead of the config
// errors (400) of the first attempt. The agent gives POST's answer as of its call.
func TestConnectURLValidation(t *testing.T) {
	env.RequirePeers(t)
	tests := []struct {
		name   string
		config map[string]string
	}{
		{name: "missing required config", config: map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": "/tmp/x"}},
		{name: "invalid value", config: map[string]string{
			"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/x", "tasks.max": "many"}},
		{name: "unknown class", config: map[string]string{"connector.class": "com.example.NoSuchConnector", "topic": "t"}},
		{name: "class that is not a connector", config: map[string]string{
			"connector.class": "org.apache.kafka.connect.json.JsonConverter", "topic": "t"}},
		{name: "unparsable plugin version", config: map[string]string{
			"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/x", "connector.plugin.version": "[1.0"}},
		{name: "no plugin of that version", config: map[string]string{
			"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/x", "connector.plugin.version": "[0.1,0.2]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := env.Unique("rest")
			first, body := tier.Rest(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": tc.config})
			require.NotEqual(t, 2, first/100, "the worker accepted it: %s", body)
			status, body := tier.Rest(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": tc.config})
			var connect struct {
				ErrorCode int    `json:"error_code"`
				Message   string `json:"message"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &connect), body)
			require.NotEqual(t, 2, status/100, "the worker accepted it: %s", body)
			vstatus, vbody := tier.Rest(t, env.Worker, http.MethodPut,
				"/connector-plugins/"+url.PathEscape(tc.config["connector.class"])+"/config/validate", tc.config)
			t.Logf("POST /connectors: %d %.300s\nthe validate endpoint: %d %.300s", status, body, vstatus, vbody)
			res := env.Agent.Publish(t, map[string]any{"name": name + "-agent", "config": tc.config})
			require.Equal(t, tier.TypeFailed, res.Type)
			require.Equal(t, "validate_config", res.Data.FailedStep)
			require.Equal(t, status, res.Data.ErrorCode, "POST /connectors answered %d %s", status, body)
			require.Equal(t, strings.ReplaceAll(connect.Message, name, name+"-agent"), res.Data.Message)
		})
	}
}
