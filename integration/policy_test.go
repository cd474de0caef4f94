package integration

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// With OFFSETAGENT_ALLOWED_SOURCES set, a request from another source gets a failed result
// with error_code 403 and touches nothing; an allowed source's identical request succeeds.
func TestAllowedSources(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.AllowedSources = []string{"/good"}
	a := startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	seedSource(t, cl, cfg)
	offsetsBefore := cl.live(cfg.OffsetsTopic)
	body := readFile(t, "testdata/file-src-1.json")

	bad := cl.publish(body, events.RequestOptions{Source: "/bad"})
	res := cl.waitResult(bad, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, 403, res.Data.ErrorCode)
	require.Equal(t, "/bad", res.Data.RequestSource)
	require.Equal(t, "file-src-1", res.Data.Name)
	require.Contains(t, res.Data.Message, `"/bad"`)
	require.NotNil(t, res.Data.Cleanup)
	require.Contains(t, res.Data.Cleanup.Summary, "nothing to undo")
	require.Nil(t, res.Data.PreviousOffsets, "a refused request does not even read the offsets")
	for _, s := range res.Data.Stages[1:] {
		require.Equal(t, events.OutcomeSkipped, s.Outcome, s.Stage)
	}
	require.Empty(t, cl.readAll(cfg.ConfigTopic), "config topic untouched")
	require.Equal(t, offsetsBefore, cl.live(cfg.OffsetsTopic), "offsets untouched")

	good := cl.publish(body, events.RequestOptions{Source: "/good"})
	res = cl.waitResult(good, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, 2, *res.Data.OffsetsWiped)
	require.Equal(t, 1.0, a.metric(t, "offsetagent_requests_total", "result", "failed"))
	require.Equal(t, 1.0, a.metric(t, "offsetagent_requests_total", "result", "succeeded"))
}

// lockedBuffer collects the agent's logs across goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Secret-looking config values are "[hidden]" in the result event (and never in its bytes
// or the agent's logs), and written verbatim to the config topic, where Connect reads them.
func TestSecretConfigValues(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	logs := &lockedBuffer{}
	startAgent(t, cfg, agent.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	cl := newClient(t, cfg)
	body := readFile(t, "testdata/secret-src.json")
	var req struct{ Config map[string]string }
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	secrets := []string{"connection.password", "sasl.jaas.config", "ssl.key.password", "my.token"}

	id := cl.publish(body, events.RequestOptions{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	shown := res.Data.Config.Map()
	for _, k := range secrets {
		require.Equal(t, events.HiddenValue, shown[k], k)
	}
	for _, k := range []string{"connector.class", "file", "topic", "connection.user", "tasks.max"} {
		require.Equal(t, req.Config[k], shown[k], k)
	}
	require.Equal(t, "secret-src", shown["name"])

	live := cl.live(cfg.ConfigTopic)
	require.Contains(t, live, "connector-secret-src")
	var rec struct{ Properties map[string]string }
	require.NoError(t, json.Unmarshal([]byte(live["connector-secret-src"].Value), &rec))
	for k, v := range req.Config {
		require.Equal(t, v, rec.Properties[k], "config topic holds the real %s", k)
	}

	// A failed request's message quotes the config (Connect's "contains no connector type"):
	// hidden there too.
	failed := cl.publish(`{"name":"no-class","config":{"db.password":"pw-Zq8!failed","tasks.max":"1"}}`, events.RequestOptions{})
	fres := cl.waitResult(failed, resultWait)
	require.Equal(t, "validate_config", fres.Data.FailedStep)
	require.Contains(t, fres.Data.Message, "db.password="+events.HiddenValue)
	require.NotContains(t, string(fres.Msg.Value), "pw-Zq8!failed")
	require.NotContains(t, logs.String(), "pw-Zq8!failed")

	require.Contains(t, logs.String(), "secret-src", "the agent logged the request (the checks below are not vacuous)")
	for _, k := range secrets {
		v := req.Config[k]
		require.NotContains(t, string(res.Msg.Value), v, "result record bytes leak %s", k)
		for _, h := range res.Msg.Headers {
			require.NotContains(t, string(h.Value), v, "result header %s leaks %s", h.Key, k)
		}
		require.NotContains(t, logs.String(), v, "logs leak %s", k)
		// The JSON-escaped spelling too (the jaas value has quotes).
		esc, err := json.Marshal(v)
		require.NoError(t, err)
		require.NotContains(t, logs.String(), strings.Trim(string(esc), `"`), "logs leak %s", k)
	}
}
