package handlers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorded is a Connect answer: a status and a body file of integration/testdata/connect
// (responses written from Connect's REST entities) or a literal body.
type recorded struct {
	status int
	file   string
	body   string
	delay  time.Duration
}

// seenRequest is what the fake Connect server received.
type seenRequest struct {
	Method, URI, Body, ContentType string
}

// fakeConnect serves recorded answers by "METHOD request-URI" and records every request.
type fakeConnect struct {
	t       *testing.T
	answers map[string]recorded
	mu      sync.Mutex
	seen    []seenRequest
}

func startFakeConnect(t *testing.T, answers map[string]recorded) (*fakeConnect, *httptest.Server) {
	t.Helper()
	f := &fakeConnect{t: t, answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeConnect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.RequestURI
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{Method: r.Method, URI: r.RequestURI, Body: string(body), ContentType: r.Header.Get("Content-Type")})
	a, ok := f.answers[key]
	f.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "unexpected request "+key)
		return
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	out := []byte(a.body)
	if a.file != "" {
		b, err := os.ReadFile(filepath.Join("..", "integration", "testdata", "connect", a.file))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		out = b
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write(out)
}

func (f *fakeConnect) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// closedURL is the URL of a listener that no longer accepts connections.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

func TestNewConnectClient(t *testing.T) {
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
			c, err := NewConnectClient(tc.url, nil)
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

func TestConnectClientExists(t *testing.T) {
	tests := []struct {
		name, connector, wantURI string
		answer                   recorded
		want                     bool
		wantFailure              *Failure
		wantTransient            bool
	}{
		{name: "existing connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: recorded{status: 200, file: "connector-exists.json"}, want: true},
		{name: "unknown connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: recorded{status: 404, file: "connector-not-found.json"}, want: false},
		{name: "name escaped", connector: "my sink/1?x#y", wantURI: "/connectors/my%20sink%2F1%3Fx%23y",
			answer: recorded{status: 404, file: "connector-not-found.json"}, want: false},
		{name: "connect error body", connector: "c", wantURI: "/connectors/c",
			answer:      recorded{status: 500, file: "plugin-not-found.json"},
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent}},
		{name: "rebalance 409 is transient", connector: "c", wantURI: "/connectors/c",
			answer:        recorded{status: 409, body: `{"error_code":409,"message":"Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."}`},
			wantTransient: true},
		{name: "rebalance expected is transient", connector: "c", wantURI: "/connectors/c",
			answer:        recorded{status: 500, body: `{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}`},
			wantTransient: true},
		{name: "gateway 503 is transient", connector: "c", wantURI: "/connectors/c",
			answer: recorded{status: 503, body: "<html>503 Service Unavailable</html>"}, wantTransient: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := startFakeConnect(t, map[string]recorded{"GET " + tc.wantURI: tc.answer})
			c, err := NewConnectClient(srv.URL, srv.Client())
			require.NoError(t, err)
			got, err := c.Exists(t.Context(), tc.connector)
			require.Len(t, f.requests(), 1)
			require.Equal(t, tc.wantURI, f.requests()[0].URI)
			switch {
			case tc.wantFailure != nil:
				var fl *Failure
				require.ErrorAs(t, err, &fl)
				require.Equal(t, tc.wantFailure.Code, fl.Code)
				require.Equal(t, tc.wantFailure.Reason, fl.Reason)
				require.Contains(t, fl.Message, "Failed to find any class that implements Connector")
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

const msgTwoErrors = "Connector configuration is invalid and contains the following 2 error(s):\n" +
	"Invalid value soon for configuration errors.retry.timeout: Not a number of type LONG\n" +
	"Invalid value some for configuration errors.tolerance: String must be one of: none, all\n" +
	"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"

func TestConnectClientValidate(t *testing.T) {
	plugins := recorded{status: 200, file: "connector-plugins.json"}
	const pluginsURI = "/connector-plugins?connectorsOnly=true"
	tests := []struct {
		name, class, validateURI string
		answer                   recorded
		noPlugins                bool
		wantType                 string
		wantFailure              *Failure
		wantReason               kafkaio.Reason // for errors that are not Failures
	}{
		{name: "valid, type from the plugin list", class: "com.example.MySinkConnector",
			validateURI: "/connector-plugins/com.example.MySinkConnector/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json"}, wantType: "sink"},
		{name: "alias without Connector", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json"}, wantType: "source"},
		{name: "simple name", class: "MirrorSourceConnector",
			validateURI: "/connector-plugins/MirrorSourceConnector/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json"}, wantType: "source"},
		{name: "class not listed", class: "com.example.Other",
			validateURI: "/connector-plugins/com.example.Other/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json"}, wantType: "unknown"},
		{name: "two errors aggregated as POST /connectors would", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 200, file: "validate-errors.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: msgTwoErrors, Reason: kafkaio.ReasonPermanent}},
		{name: "plugin not found, unwrapped", class: "com.example.Missing",
			validateURI: "/connector-plugins/com.example.Missing/config/validate",
			answer:      recorded{status: 500, file: "plugin-not-found.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent}},
		// Apache Kafka 4.3.1: the validate endpoint answers the validation's exception as the
		// ExecutionException wrapping it (500, "<class>: <message>"), POST /connectors the
		// exception itself (here a BadRequestException: 400).
		{name: "plugin not found, as POST answers it", class: "com.example.Missing",
			validateURI: "/connector-plugins/com.example.Missing/config/validate",
			answer:      recorded{status: 500, file: "validate-unknown-class.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Reason: kafkaio.ReasonPermanent,
				Message: "org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector and which name matches com.example.Missing, available connectors are: PluginDesc{klass=class org.apache.kafka.connect.file.FileStreamSinkConnector, name='org.apache.kafka.connect.file.FileStreamSinkConnector', version='4.3.1', encodedVersion=4.3.1, type=sink, typeName='sink', location='classpath'}"}},
		{name: "bad request of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 500, body: `{"error_code":500,"message":"org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Unbounded range: [1.0"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: "Unbounded range: [1.0", Reason: kafkaio.ReasonPermanent}},
		{name: "other exception of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 500, file: "validate-npe.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent,
				Message: `Cannot invoke "java.util.List.stream()" because the return value of "org.apache.kafka.connect.runtime.isolation.VersionedPluginLoadingException.availableVersions()" is null`}},
		{name: "not found of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 500, body: `{"error_code":500,"message":"org.apache.kafka.connect.errors.NotFoundException: gone"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 404, Message: "gone", Reason: kafkaio.ReasonPermanent}},
		{name: "a 500 whose text only looks like a class", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 500, body: `{"error_code":500,"message":"Failed to start: disk full"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Message: "Failed to start: disk full", Reason: kafkaio.ReasonPermanent}},
		{name: "a 400 keeps its text", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      recorded{status: 400, body: `{"error_code":400,"message":"org.apache.kafka.Some Exception: x"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: "org.apache.kafka.Some Exception: x", Reason: kafkaio.ReasonPermanent}},
		{name: "class escaped", class: "a/b c",
			validateURI: "/connector-plugins/a%2Fb%20c/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json"}, wantType: "unknown"},
		{name: "connect request timeout is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 500, file: "request-timed-out.json"}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "bad gateway is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 502, body: "Bad Gateway"}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "unauthorized proxy is permanent", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 401, body: "Unauthorized"}, noPlugins: true, wantReason: kafkaio.ReasonPermanent},
		{name: "client timeout is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 200, file: "validate-ok.json", delay: 2 * time.Second}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "undecodable answer is permanent", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      recorded{status: 200, body: "{"}, noPlugins: true, wantReason: kafkaio.ReasonPermanent},
	}
	config := map[string]string{"connector.class": "x", "name": "n", "tasks.max": "1"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := startFakeConnect(t, map[string]recorded{"PUT " + tc.validateURI: tc.answer, "GET " + pluginsURI: plugins})
			hc := srv.Client()
			hc.Timeout = 500 * time.Millisecond
			c, err := NewConnectClient(srv.URL, hc)
			require.NoError(t, err)
			typ, err := c.Validate(t.Context(), tc.class, config)

			seen := f.requests()
			require.NotEmpty(t, seen)
			require.Equal(t, seenRequest{Method: "PUT", URI: tc.validateURI, Body: `{"connector.class":"x","name":"n","tasks.max":"1"}`, ContentType: "application/json"}, seen[0])
			if tc.noPlugins {
				require.Len(t, seen, 1, "no plugin lookup after a failed validation")
			}
			switch {
			case tc.wantFailure != nil:
				var fl *Failure
				require.ErrorAs(t, err, &fl)
				require.Equal(t, tc.wantFailure.Code, fl.Code)
				require.Equal(t, tc.wantFailure.Reason, fl.Reason)
				if tc.wantFailure.Message != "" {
					require.Equal(t, tc.wantFailure.Message, fl.Message)
				}
			case tc.wantReason != "":
				require.Error(t, err)
				require.NotErrorAs(t, err, new(*Failure))
				reason, _ := kafkaio.Classify(err)
				require.Equal(t, tc.wantReason, reason, "%v", err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.wantType, typ)
				require.Len(t, seen, 2)
				require.Equal(t, "GET "+pluginsURI, seen[1].Method+" "+seen[1].URI)
			}
		})
	}
}

func TestConnectClientAmbiguousAlias(t *testing.T) {
	_, srv := startFakeConnect(t, map[string]recorded{
		"PUT /connector-plugins/Dup/config/validate": {status: 200, file: "validate-ok.json"},
		"GET /connector-plugins?connectorsOnly=true": {status: 200, body: `[{"class":"a.DupConnector","type":"sink","version":"1"},{"class":"b.DupConnector","type":"source","version":"1"}]`},
	})
	c, err := NewConnectClient(srv.URL, srv.Client())
	require.NoError(t, err)
	typ, err := c.Validate(t.Context(), "Dup", map[string]string{})
	require.NoError(t, err)
	require.Equal(t, "unknown", typ, "an alias two plugins share resolves to neither")
}

func TestConnectClientPathPrefix(t *testing.T) {
	f, srv := startFakeConnect(t, map[string]recorded{"GET /connect/connectors/c": {status: 200, file: "connector-exists.json"}})
	c, err := NewConnectClient(srv.URL+"/connect/", srv.Client())
	require.NoError(t, err)
	ok, err := c.Exists(t.Context(), "c")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "/connect/connectors/c", f.requests()[0].URI)
}

func TestConnectClientUnreachable(t *testing.T) {
	c, err := NewConnectClient(closedURL(t), &http.Client{Timeout: time.Second})
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

// A worker's REST API sees at most connectMaxCalls calls of one agent at once, however many
// requests the agent works on.
func TestConnectClientBoundsConcurrentCalls(t *testing.T) {
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
	c, err := NewConnectClient(srv.URL, nil)
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
