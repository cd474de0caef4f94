package connectrest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connecttest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

type recorded = connecttest.Recorded

func TestNew(t *testing.T) {
	tests := []struct {
		name, url, wantBase, wantErr string
	}{
		{name: "plain", url: "http://connect:8083", wantBase: "http://connect:8083"},
		{name: "trailing slash and path prefix", url: "https://proxy/connect/", wantBase: "https://proxy/connect"},
		{name: "credentials kept for basic auth", url: "http://u:p@connect:8083", wantBase: "http://u:p@connect:8083"},
		{name: "no scheme", url: "connect:8083", wantErr: "want http(s)://host[:port][/path]"},
		{name: "no host", url: "http:///x", wantErr: "want http(s)://host[:port][/path]"},
		{name: "query", url: "http://connect:8083/?a=b", wantErr: "a query or fragment is not allowed"},
		{name: "password redacted", url: "ftp://u:secret@connect", wantErr: `"ftp://u:xxxxx@connect"`},
		{name: "unparsable", url: "http://[::1", wantErr: "parse Connect URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.url, nil)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantBase, c.base)
			require.Equal(t, 30*time.Second, c.hc.Timeout)
		})
	}
}

func TestRedact(t *testing.T) {
	require.Equal(t, "https://u:xxxxx@connect:8083/x", Redact("https://u:secret@connect:8083/x"))
	require.Equal(t, "http://connect:8083", Redact("http://connect:8083"))
	require.Equal(t, "[unparsable URL]", Redact("http://u:secret@[::1"))
}

func TestExists(t *testing.T) {
	tests := []struct {
		name, connector, wantURI string
		answer                   recorded
		want                     bool
		wantError                *Error
		wantTransient            bool
	}{
		{name: "existing connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: recorded{Status: 200, File: "connector-exists.json"}, want: true},
		{name: "unknown connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: recorded{Status: 404, File: "connector-not-found.json"}, want: false},
		{name: "name escaped", connector: "my sink/1?x#y", wantURI: "/connectors/my%20sink%2F1%3Fx%23y",
			answer: recorded{Status: 404, File: "connector-not-found.json"}, want: false},
		{name: "connect error body", connector: "c", wantURI: "/connectors/c",
			answer:    recorded{Status: 500, File: "plugin-not-found.json"},
			wantError: &Error{Method: "GET", Path: "/connectors/c", Status: 500, Code: 500}},
		{name: "rebalance 409 is transient", connector: "c", wantURI: "/connectors/c",
			answer:        recorded{Status: 409, Body: `{"error_code":409,"message":"Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."}`},
			wantTransient: true},
		{name: "rebalance expected is transient", connector: "c", wantURI: "/connectors/c",
			answer:        recorded{Status: 500, Body: `{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}`},
			wantTransient: true},
		{name: "gateway 503 is transient", connector: "c", wantURI: "/connectors/c",
			answer: recorded{Status: 503, Body: "<html>503 Service Unavailable</html>"}, wantTransient: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := connecttest.StartRecording(t, map[string]recorded{"GET " + tc.wantURI: tc.answer})
			c, err := New(srv.URL, srv.Client())
			require.NoError(t, err)
			got, err := c.Exists(t.Context(), tc.connector)
			require.Len(t, f.Requests(), 1)
			require.Equal(t, tc.wantURI, f.Requests()[0].URI)
			switch {
			case tc.wantError != nil:
				var ce *Error
				require.ErrorAs(t, err, &ce)
				require.ErrorContains(t, err, "connect REST API answered GET /connectors/c with 500: Failed to find any class that implements Connector")
				ce.Message = ""
				require.Equal(t, tc.wantError, ce)
				_, transient := kafkaio.Classify(err)
				require.False(t, transient)
			case tc.wantTransient:
				_, transient := kafkaio.Classify(err)
				require.True(t, transient, "%v", err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

// Each typed call is one request of Connect's API, with the name escaped, and decodes
// Connect's entity.
func TestCalls(t *testing.T) {
	offsets := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "filename", Value: "a.txt"}}, Offset: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}}}
	answers := map[string]recorded{
		"GET /":                 {Status: 200, Body: `{"version":"4.3.1","commit":"c0ffee","kafka_cluster_id":"k1"}`},
		"GET /connectors":       {Status: 200, Body: `["a b","c"]`},
		"GET /connectors/a%20b": {Status: 200, Body: `{"name":"a b","config":{"connector.class":"X","name":"a b"},"tasks":[],"type":"source"}`},
		"GET /connectors?expand=info&expand=status": {Status: 200, Body: `{"c":{"info":{"name":"c","config":{"name":"c"},"type":"sink"},` +
			`"status":{"name":"c","connector":{"state":"RUNNING","worker_id":"w:8083"},"tasks":[{"id":0,"state":"FAILED","worker_id":"w:8083","trace":"boom"}],"type":"sink"}}}`},
		"GET /connectors/a%20b/status":                          {Status: 200, Body: `{"name":"a b","connector":{"state":"PAUSED","worker_id":"w:8083"},"tasks":[],"type":"source"}`},
		"GET /connectors/new/status":                            {Status: 404, Body: `{"error_code":404,"message":"No status found for connector new"}`},
		"GET /connectors/a%20b/offsets":                         {Status: 200, Body: `{"offsets":[{"partition":{"filename":"a.txt"},"offset":{"position":30}}]}`},
		"GET /connectors/c/offsets":                             {Status: 200, Body: `{"offsets":[]}`},
		"PATCH /connectors/a%20b/offsets":                       {Status: 200, Body: `{"message":"The offsets for this connector have been altered successfully"}`},
		"PUT /connectors/a%20b/stop":                            {Status: 204},
		"PUT /connectors/a%20b/pause":                           {Status: 202},
		"PUT /connectors/a%20b/resume":                          {Status: 202},
		"DELETE /connectors/a%20b":                              {Status: 204},
		"GET /connectors/a%20b/topics":                          {Status: 200, Body: `{"a b":{"topics":["t1","t2"]}}`},
		"GET /connectors/c/topics":                              {Status: 403, Body: `{"error_code":403,"message":"Topic tracking is disabled."}`},
		"GET /connector-plugins?connectorsOnly=true":            {Status: 200, File: "connector-plugins.json"},
		"PUT /connector-plugins/FileStreamSink/config/validate": {Status: 200, File: "validate-errors.json"},
	}
	f, srv := connecttest.StartRecording(t, answers)
	c, err := New(srv.URL, srv.Client())
	require.NoError(t, err)
	ctx := t.Context()

	root, err := c.Root(ctx)
	require.NoError(t, err)
	require.Equal(t, RootInfo{Version: "4.3.1", Commit: "c0ffee", KafkaClusterID: "k1"}, root)
	names, err := c.Names(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a b", "c"}, names)
	info, err := c.Info(ctx, "a b")
	require.NoError(t, err)
	require.Equal(t, "source", info.Type)
	require.JSONEq(t, `{"connector.class":"X","name":"a b"}`, string(info.Config))
	exp, err := c.Expanded(ctx)
	require.NoError(t, err)
	require.Equal(t, "sink", exp["c"].Info.Type)
	require.Equal(t, []TaskState{{ID: 0, State: State{State: "FAILED", WorkerID: "w:8083", Trace: "boom"}}}, exp["c"].Status.Tasks)
	st, ok, err := c.Status(ctx, "a b")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "PAUSED", st.Connector.State)
	_, ok, err = c.Status(ctx, "new")
	require.NoError(t, err)
	require.False(t, ok, "404: no status")
	got, err := c.Offsets(ctx, "a b")
	require.NoError(t, err)
	require.Equal(t, offsets, got)
	got, err = c.Offsets(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, []events.ConnectorOffset{}, got)
	require.NoError(t, c.AlterOffsets(ctx, "a b", offsets))
	require.NoError(t, c.Stop(ctx, "a b"))
	require.NoError(t, c.Pause(ctx, "a b"))
	require.NoError(t, c.Resume(ctx, "a b"))
	require.NoError(t, c.Delete(ctx, "a b"))
	topics, ok, err := c.Topics(ctx, "a b")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"t1", "t2"}, topics)
	_, ok, err = c.Topics(ctx, "c")
	require.NoError(t, err)
	require.False(t, ok, "tracking disabled")
	plugins, err := c.Plugins(ctx)
	require.NoError(t, err)
	require.Contains(t, plugins, Plugin{Class: "org.apache.kafka.connect.file.FileStreamSinkConnector", Type: "sink", Version: "3.7.0"})
	infos, err := c.Validate(ctx, "FileStreamSink", map[string]string{"b": "2", "a": "1"})
	require.NoError(t, err)
	require.Equal(t, 2, infos.ErrorCount)

	byRequest := map[string]connecttest.Seen{}
	for _, s := range f.Requests() {
		byRequest[s.Method+" "+s.URI] = s
	}
	for key := range answers {
		require.Contains(t, byRequest, key, "every call made its request")
	}
	patch := byRequest["PATCH /connectors/a%20b/offsets"]
	require.Equal(t, "application/json", patch.ContentType)
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(patch.Body), &body))
	require.JSONEq(t, `[{"partition":{"filename":"a.txt"},"offset":{"position":30}}]`, string(body["offsets"]))
	require.Equal(t, `{"a":"1","b":"2"}`, byRequest["PUT /connector-plugins/FileStreamSink/config/validate"].Body)
}

func TestPathPrefix(t *testing.T) {
	f, srv := connecttest.StartRecording(t, map[string]recorded{"GET /connect/connectors/c": {Status: 200, File: "connector-exists.json"}})
	c, err := New(srv.URL+"/connect/", srv.Client())
	require.NoError(t, err)
	ok, err := c.Exists(t.Context(), "c")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "/connect/connectors/c", f.Requests()[0].URI)
}

func TestUnreachable(t *testing.T) {
	c, err := New(connecttest.ClosedURL(t), &http.Client{Timeout: time.Second})
	require.NoError(t, err)
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{name: "exists", call: func(ctx context.Context) error { _, err := c.Exists(ctx, "c"); return err }},
		{name: "validate", call: func(ctx context.Context) error { _, err := c.Validate(ctx, "c", nil); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t.Context())
			reason, transient := kafkaio.Classify(err)
			require.True(t, transient, "%v", err)
			require.Equal(t, kafkaio.ReasonNetwork, reason)

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			err = tc.call(ctx)
			require.True(t, errors.Is(err, context.Canceled), "%v", err)
			_, transient = kafkaio.Classify(err)
			require.False(t, transient, "a canceled call is not retried")
		})
	}
}

// A worker's REST API sees at most connectMaxCalls calls of one client at once, however many
// requests the agent works on.
func TestBoundsConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error_code":404,"message":"Connector c not found"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 * connectMaxCalls {
		wg.Go(func() {
			ok, err := c.Exists(context.Background(), "c")
			assert.NoError(t, err)
			assert.False(t, ok)
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most, connectMaxCalls)
	require.Greater(t, most, 1, "calls do run side by side")
}

// A client keeps a connection open for each call it makes at once: with net/http's default of
// 2 idle connections per host, 8 calls at once had 6 of their connections closed after each
// call and dialed again, a TCP connection per call (400 calls dialed hundreds).
func TestCallsReuseTheirConnections(t *testing.T) {
	var mu sync.Mutex
	dialed := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error_code":404,"message":"Connector c not found"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dialed++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, nil)
	require.NoError(t, err)
	const calls = 400
	var wg sync.WaitGroup
	for range 4 * connectMaxCalls {
		wg.Go(func() {
			for range calls / (4 * connectMaxCalls) {
				ok, err := c.Exists(context.Background(), "c")
				assert.NoError(t, err)
				assert.False(t, ok)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// A connection is given back to the pool as its answer is read, just after the call's
	// slot is: a call may dial while one is on its way back (kept idle then for the next).
	require.LessOrEqual(t, dialed, 2*connectMaxCalls, "connections dialed for %d calls, %d at once", calls, connectMaxCalls)
}
