package realkafka_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// TestConnectSimMatchesWorker runs the same calls against the package's Connect worker and
// against internal/connectsim serving the same Connect topics, and compares the answers
// where they should agree: everything but what running tasks change (a stopped connector has
// none on either). Then connectsim's writes (stop, pause, offsets, delete) are read back
// through the worker, which takes them as its own.
func TestConnectSimMatchesWorker(t *testing.T) {
	env.RequirePeers(t)
	names := env.ConnectNames("main")
	w := env.Worker
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Two stopped connectors and a paused one, created through the worker.
	src, sink, paused := env.Unique("sim-src"), env.Unique("sim-sink"), env.Unique("sim-paused")
	file := env.WriteFile(t, src+".txt", "a\nb\n")
	topic := env.Unique("sim-topic")
	env.CreateTopic(t, topic, 2, false)
	create := func(name, state string, cfg map[string]string) {
		tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg, "initial_state": state})
	}
	create(src, "STOPPED", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": topic, "tasks.max": "1"})
	create(sink, "STOPPED", map[string]string{"connector.class": "FileStreamSink", "file": file + ".out", "topics": topic})
	create(paused, "PAUSED", map[string]string{"connector.class": "FileStreamSink", "file": file + ".paused", "topics": topic})
	tier.WaitState(t, w, src, "STOPPED")
	tier.WaitState(t, w, sink, "STOPPED")
	tier.WaitState(t, w, paused, "PAUSED")
	tier.RestOK(t, w, http.MethodPatch, "/connectors/"+src+"/offsets", map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"filename": file}, "offset": map[string]any{"position": 2}}}})
	tier.RestOK(t, w, http.MethodPatch, "/connectors/"+sink+"/offsets", map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 1}, "offset": map[string]any{"kafka_offset": 0}}}})

	// connectsim over the worker's topics, with the worker's plugins, version and worker id.
	var root struct{ Version, Commit string }
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/", nil)), &root))
	var plugins []connectsim.Plugin
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/connector-plugins", nil)), &plugins))
	var st struct {
		Connector struct {
			WorkerID string `json:"worker_id"`
		} `json:"connector"`
	}
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/connectors/"+src+"/status", nil)), &st))
	sim, err := connectsim.New(connectsim.Config{
		Topics:      offsetstore.Options{Brokers: env.Brokers, ConfigTopic: names.Config, OffsetsTopic: names.Offsets},
		StatusTopic: names.Status, Plugins: plugins, Version: root.Version, Commit: root.Commit, WorkerID: st.Connector.WorkerID,
	})
	require.NoError(t, err)
	simCtx, stopSim := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sim.Run(simCtx) }()
	defer func() { stopSim(); require.NoError(t, <-done) }()
	require.NoError(t, sim.WaitReady(ctx))
	srv := httptest.NewServer(sim)
	defer srv.Close()
	onSim := func(method, path, body string) (int, string) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	onWorker := func(method, path, body string) (int, string) {
		var b any
		if body != "" {
			b = json.RawMessage(body)
		}
		return tier.Rest(t, w, method, path, b)
	}

	// prefix compares only the text before the first occurrence of cut (the list of plugins a
	// refusal names differs in its details).
	tests := []struct {
		name         string
		method, path string
		body         string
		prefix       string
	}{
		{name: "root", method: "GET", path: "/"},
		{name: "source info", method: "GET", path: "/connectors/" + src},
		{name: "sink info", method: "GET", path: "/connectors/" + sink},
		{name: "config", method: "GET", path: "/connectors/" + src + "/config"},
		{name: "stopped status", method: "GET", path: "/connectors/" + src + "/status"},
		{name: "stopped sink status", method: "GET", path: "/connectors/" + sink + "/status"},
		{name: "tasks of a stopped connector", method: "GET", path: "/connectors/" + src + "/tasks"},
		{name: "topics of a stopped connector", method: "GET", path: "/connectors/" + src + "/topics"},
		{name: "source offsets", method: "GET", path: "/connectors/" + src + "/offsets"},
		{name: "sink offsets", method: "GET", path: "/connectors/" + sink + "/offsets"},
		{name: "info of an unknown connector", method: "GET", path: "/connectors/sim-missing"},
		{name: "config of an unknown connector", method: "GET", path: "/connectors/sim-missing/config"},
		{name: "status of an unknown connector", method: "GET", path: "/connectors/sim-missing/status"},
		{name: "offsets of an unknown connector", method: "GET", path: "/connectors/sim-missing/offsets"},
		{name: "topics of an unknown connector", method: "GET", path: "/connectors/sim-missing/topics"},
		{name: "stop an unknown connector", method: "PUT", path: "/connectors/sim-missing/stop"},
		{name: "pause an unknown connector", method: "PUT", path: "/connectors/sim-missing/pause"},
		{name: "resume an unknown connector", method: "PUT", path: "/connectors/sim-missing/resume"},
		{name: "restart an unknown connector", method: "POST", path: "/connectors/sim-missing/restart"},
		{name: "delete an unknown connector", method: "DELETE", path: "/connectors/sim-missing"},
		{name: "alter an unknown connector", method: "PATCH", path: "/connectors/sim-missing/offsets", body: `{"offsets":[{"partition":{"filename":"x"},"offset":{"position":1}}]}`},
		{name: "alter without offsets", method: "PATCH", path: "/connectors/" + src + "/offsets", body: `{"offsets":[]}`},
		{name: "alter a paused connector", method: "PATCH", path: "/connectors/" + paused + "/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"` + topic + `","kafka_partition":0},"offset":{"kafka_offset":1}}]}`},
		{name: "alter a sink with a bad partition", method: "PATCH", path: "/connectors/" + sink + "/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"` + topic + `","kafka_partition":"x"},"offset":{"kafka_offset":1}}]}`},
		{name: "alter a source refused by its class", method: "PATCH", path: "/connectors/" + src + "/offsets",
			body: `{"offsets":[{"partition":{"filename":"` + file + `"},"offset":{"position":-1}}]}`},
		{name: "reset a paused connector", method: "DELETE", path: "/connectors/" + paused + "/offsets"},
		{name: "create one that exists", method: "POST", path: "/connectors",
			body: `{"name":"` + src + `","config":{"connector.class":"FileStreamSink","topics":"` + topic + `"}}`},
		{name: "config with another name", method: "PUT", path: "/connectors/" + src + "/config", body: `{"connector.class":"FileStreamSink","name":"other"}`},
		{name: "validate another class than the path's", method: "PUT", path: "/connector-plugins/FileStreamSink/config/validate",
			body: `{"connector.class":"FileStreamSource"}`},
		{name: "validate a class not installed", method: "PUT", path: "/connector-plugins/NopeConnector/config/validate",
			body: `{"connector.class":"com.example.NopeConnector"}`, prefix: "available connectors are: "},
		{name: "an unknown path", method: "GET", path: "/sim-nothing"},
		{name: "a method the path does not take", method: "DELETE", path: "/connectors/" + src + "/status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode, want := onWorker(tt.method, tt.path, tt.body)
			gotCode, got := onSim(tt.method, tt.path, tt.body)
			require.Equal(t, wantCode, gotCode, "worker: %s\nsim:    %s", want, got)
			if tt.prefix != "" {
				want, _, _ = strings.Cut(want, tt.prefix)
				got, _, _ = strings.Cut(got, tt.prefix)
				require.Equal(t, want, got)
				return
			}
			if want == "" || got == "" {
				require.Equal(t, want, got)
				return
			}
			require.JSONEq(t, want, got)
		})
	}

	// Both list the connectors and expand them alike.
	for _, q := range []string{"", "?expand=status&expand=info", "?expand=info"} {
		_, fromWorker := onWorker("GET", "/connectors"+q, "")
		_, fromSim := onSim("GET", "/connectors"+q, "")
		if q == "" {
			var a, b []string
			require.NoError(t, json.Unmarshal([]byte(fromWorker), &a))
			require.NoError(t, json.Unmarshal([]byte(fromSim), &b))
			require.Subset(t, a, []string{src, sink, paused})
			require.Subset(t, b, []string{src, sink, paused})
			continue
		}
		var a, b map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(fromWorker), &a))
		require.NoError(t, json.Unmarshal([]byte(fromSim), &b))
		for _, n := range []string{src, sink} {
			require.JSONEq(t, string(a[n]), string(b[n]), "%s %s", q, n)
		}
	}

	// connectsim's writes, as the worker takes them.
	steps := []struct {
		name         string
		method, path string
		body         string
		code         int
		check        func() bool
	}{
		{name: "stop the paused connector", method: "PUT", path: "/connectors/" + paused + "/stop", code: 204, check: func() bool {
			_, s := onWorker("GET", "/connectors/"+paused+"/status", "")
			_, fromSim := onSim("GET", "/connectors/"+paused+"/status", "")
			return tier.SameJSON(s, fromSim)
		}},
		{name: "alter the source's offsets", method: "PATCH", path: "/connectors/" + src + "/offsets",
			body: `{"offsets":[{"partition":{"filename":"` + file + `"},"offset":{"position":1}}]}`, code: 200, check: func() bool {
				_, s := onWorker("GET", "/connectors/"+src+"/offsets", "")
				return tier.SameJSON(s, `{"offsets":[{"partition":{"filename":"`+file+`"},"offset":{"position":1}}]}`)
			}},
		{name: "alter the sink's offsets", method: "PATCH", path: "/connectors/" + sink + "/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"` + topic + `","kafka_partition":0},"offset":{"kafka_offset":0}}]}`, code: 200, check: func() bool {
				_, s := onWorker("GET", "/connectors/"+sink+"/offsets", "")
				_, fromSim := onSim("GET", "/connectors/"+sink+"/offsets", "")
				return tier.SameJSON(s, fromSim) && strings.Count(s, "kafka_offset") == 2
			}},
		{name: "pause", method: "PUT", path: "/connectors/" + src + "/pause", code: 202, check: func() bool {
			code, s := onWorker("GET", "/connectors/"+src+"/status", "")
			return code == 200 && strings.Contains(s, `"state":"PAUSED"`)
		}},
		{name: "delete", method: "DELETE", path: "/connectors/" + src, code: 204, check: func() bool {
			code, _ := onWorker("GET", "/connectors/"+src, "")
			return code == http.StatusNotFound
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, body := onSim(s.method, s.path, s.body)
			require.Equal(t, s.code, code, body)
			require.Eventually(t, s.check, 30*time.Second, 100*time.Millisecond)
		})
	}
	tier.RestOK(t, w, http.MethodDelete, "/connectors/"+sink, nil)
	tier.RestOK(t, w, http.MethodDelete, "/connectors/"+paused, nil)
}
