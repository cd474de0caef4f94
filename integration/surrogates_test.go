package integration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// A lone UTF-16 surrogate escape is valid JSON but not a string Connect can store: Go would
// write U+FFFD instead. The request fails at validate_config (name, config) or
// validate_offsets (offsets), naming the field, and writes nothing.
func TestLoneSurrogatesRefused(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	seedSource(t, cl, cfg)
	offsetsBefore := cl.live(cfg.OffsetsTopic)

	const class = `"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","topic":"t","tasks.max":"1"`
	tests := []struct {
		name, body, step, field string
	}{
		{name: "high surrogate in the name", body: `{"name":"file-src-1\ud800","config":{` + class + `,"file":"test.txt"}}`,
			step: "validate_config", field: "name"},
		{name: "low surrogate in a config value", body: `{"name":"file-src-1","config":{` + class + `,"file":"te\udc00st.txt"}}`,
			step: "validate_config", field: `config value of "file"`},
		{name: "reversed pair in a config key", body: `{"name":"file-src-1","config":{` + class + `,"file":"test.txt","x\udc00\ud800":"1"}}`,
			step: "validate_config", field: "config key"},
		{name: "high surrogate at the end of an offset's partition value", body: `{"name":"file-src-1","config":{` + class + `,"file":"test.txt"},
			"initial_offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":1}},{"partition":{"filename":"a\ud83d"},"offset":{"position":2}}]}`,
			step: "validate_offsets", field: `initial_offsets[1].partition.filename`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cl.waitResult(cl.publish(tt.body, events.RequestOptions{Key: "file-src-1"}), resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, tt.step, res.Data.FailedStep, res.Data.Message)
			require.Equal(t, 400, res.Data.ErrorCode)
			require.Contains(t, res.Data.Message, "lone UTF-16 surrogate")
			require.Contains(t, res.Data.Message, tt.field)
		})
	}
	require.Empty(t, cl.readAll(cfg.ConfigTopic), "config topic untouched")
	require.Equal(t, offsetsBefore, cl.live(cfg.OffsetsTopic), "offsets untouched")

	// A proper pair (an emoji) is fine.
	res := cl.waitResult(cl.publish(`{"name":"file-src-1","config":{`+class+`,"file":"\ud83d\ude00.txt"},
		"initial_offsets":[{"partition":{"filename":"\ud83d\ude00.txt"},"offset":{"position":2}}]}`, events.RequestOptions{}), resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	var rec struct{ Properties map[string]string }
	require.NoError(t, json.Unmarshal([]byte(cl.live(cfg.ConfigTopic)["connector-file-src-1"].Value), &rec))
	require.Equal(t, "\U0001F600.txt", rec.Properties["file"])
}
