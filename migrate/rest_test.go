package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// fakeConnect is a Connect REST stand-in: PUT /stop answers 204 at once while the status
// stays RUNNING (with its task) for stopLag more status reads, and the offsets change once
// after the status turned STOPPED, like a task's final commit landing late.
type fakeConnect struct {
	t       *testing.T
	stopLag int

	mu         sync.Mutex
	connectors map[string]*fakeConnector
	noStatus   map[string]bool // left out of the expanded listing (no status yet)
	stops      []string
	// onStop, when set, is called with the connector's name when PUT /stop arrives.
	onStop func(name string)
	// trackingOff answers GET /connectors/{name}/topics as a worker with
	// topic.tracking.enable=false does (403).
	trackingOff bool
}

type fakeConnector struct {
	config       map[string]string
	typ, state   string
	offsets      []string // JSON offset entries
	finalOffsets []string // what the offsets become after the stop
	stopAt       int      // status reads left before STOPPED; -1 when not stopping
	readsStopped int      // offset reads since the status turned STOPPED
	topics       []string // GET /connectors/{name}/topics (KIP-558)
}

func (f *fakeConnect) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fakeConnect) status(c *fakeConnector) map[string]any {
	tasks := []any{map[string]any{"id": 0, "state": c.state, "worker_id": "w:8083"}}
	if c.state == fleet.StateStopped {
		tasks = []any{}
	}
	return map[string]any{"connector": map[string]any{"state": c.state, "worker_id": "w:8083"}, "tasks": tasks, "type": c.typ}
}

func (f *fakeConnect) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			require.NoError(f.t, json.NewEncoder(w).Encode(v))
		}
	}
	notFound := func(name string) {
		reply(404, map[string]any{"error_code": 404, "message": "Connector " + name + " not found"})
	}
	path := strings.TrimPrefix(r.URL.Path, "/connectors")
	switch {
	case r.URL.Path == "/":
		reply(200, map[string]string{"version": "3.9.0", "commit": "abc", "kafka_cluster_id": "cluster-A"})
	case path == "" && r.URL.Query().Has("expand"):
		out := map[string]any{}
		for n, c := range f.connectors {
			if f.noStatus[n] {
				continue
			}
			out[n] = map[string]any{
				"info":   map[string]any{"name": n, "config": c.config, "tasks": []any{}, "type": c.typ},
				"status": f.status(c),
			}
		}
		reply(200, out)
	case path == "":
		names := []string{}
		for n := range f.connectors {
			names = append(names, n)
		}
		reply(200, names)
	default:
		parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
		c, ok := f.connectors[parts[0]]
		if !ok {
			notFound(parts[0])
			return
		}
		switch {
		case len(parts) == 1:
			reply(200, map[string]any{"name": parts[0], "config": c.config, "tasks": []any{}, "type": c.typ})
		case parts[1] == "status" && f.noStatus[parts[0]]:
			notFound(parts[0])
		case parts[1] == "status":
			if c.stopAt > 0 {
				c.stopAt--
			} else if c.stopAt == 0 {
				c.state, c.stopAt = fleet.StateStopped, -1
			}
			reply(200, f.status(c))
		case parts[1] == "stop" && r.Method == http.MethodPut:
			f.stops = append(f.stops, parts[0])
			if f.onStop != nil {
				f.onStop(parts[0])
			}
			delete(f.noStatus, parts[0]) // assigned by now
			if c.state != fleet.StateStopped {
				c.stopAt = f.stopLag
			}
			reply(204, nil)
		case parts[1] == "topics" && f.trackingOff:
			reply(403, map[string]any{"error_code": 403, "message": "Topic tracking is disabled."})
		case parts[1] == "topics":
			reply(200, map[string]any{parts[0]: map[string]any{"topics": append([]string{}, c.topics...)}})
		case parts[1] == "offsets":
			if c.state == fleet.StateStopped && c.finalOffsets != nil {
				if c.readsStopped++; c.readsStopped > 1 {
					c.offsets = c.finalOffsets
				}
			}
			reply(200, json.RawMessage(`{"offsets":[`+strings.Join(c.offsets, ",")+`]}`))
		default:
			reply(404, map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
		}
	}
}

func TestRESTReaderAndStopBarrier(t *testing.T) {
	fc := &fakeConnect{t: t, stopLag: 3, noStatus: map[string]bool{"fresh": true}, connectors: map[string]*fakeConnector{
		"file-src": {typ: "source", state: fleet.StateRunning, stopAt: -1,
			config:       map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "in.txt", "topic": "t", "name": "file-src"},
			offsets:      []string{`{"partition":{"filename":"in.txt"},"offset":{"position":100}}`},
			finalOffsets: []string{`{"partition":{"filename":"in.txt"},"offset":{"position":160}}`}},
		"file-sink": {typ: "sink", state: fleet.StatePaused, stopAt: -1,
			config:       map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": "out.txt", "topics": "t", "name": "file-sink"},
			offsets:      []string{`{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":7}}`},
			finalOffsets: []string{`{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":9}}`}},
		"stopped": {typ: "source", state: fleet.StateStopped, stopAt: -1,
			config:  map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "s.txt", "topic": "t", "name": "stopped"},
			offsets: []string{`{"partition":{"filename":"s.txt"},"offset":{"position":5}}`}},
		"fresh": {typ: "source", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "f.txt", "topic": "t", "name": "fresh"}},
		"other": {typ: "source", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "o.txt", "topic": "t", "name": "other"}},
	}}
	url := fc.serve(t)
	states := &source.StateStore{Brokers: startKfake(t)}
	// "fresh" has no status (its state is not known: TestRESTUnknownStateRefused); "file-sink"
	// cannot be stopped through REST only (TestStopSourceSinkNeedsBrokers); "stopped" is
	// STOPPED with no state record, refused with --stop-source (TestReRunKeepsStateBeforeStop).
	sel, err := source.NewSelection(source.SelectionFlags{Exclude: []string{"other", "fresh"}})
	require.NoError(t, err)
	stopSel, err := source.NewSelection(source.SelectionFlags{Exclude: []string{"other", "fresh", "file-sink", "stopped"}})
	require.NoError(t, err)

	tests := []struct {
		name string
		stop bool
		want map[string]string // name -> body
	}{
		{name: "read only", want: map[string]string{
			"file-src":  `{"name":"file-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","name":"file-src","topic":"t"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":100}}]}`,
			"file-sink": `{"name":"file-sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"out.txt","name":"file-sink","topics":"t"},"initial_state":"PAUSED","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":7}}]}`,
			"stopped":   `{"name":"stopped","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"s.txt","name":"stopped","topic":"t"},"initial_state":"STOPPED","initial_offsets":[{"partition":{"filename":"s.txt"},"offset":{"position":5}}]}`,
		}},
		{name: "stop source waits for STOPPED and for two equal reads", stop: true, want: map[string]string{
			// The state A had before the stop; the offsets of the final commit.
			"file-src": `{"name":"file-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","name":"file-src","topic":"t"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":160}}]}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := Options{ConnectURL: url, Selection: sel, StopSource: tt.stop, States: states,
				StablePause: 50 * time.Millisecond, StopPoll: 10 * time.Millisecond, StopTimeout: 5 * time.Second}
			if tt.stop {
				opts.Selection = stopSel
			}
			rep, err := Export(ctx, opts)
			require.NoError(t, err)
			got := map[string]string{}
			for _, e := range rep.Connectors {
				require.Equal(t, apply.OutcomePlanned, e.Outcome, e.Name+": "+e.Message.String())
				b, err := e.Body.MarshalJSON()
				require.NoError(t, err)
				got[e.Name] = string(b)
			}
			require.Equal(t, tt.want, got)
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if tt.stop {
				require.ElementsMatch(t, []string{"file-src"}, fc.stops, "every selected connector, and only those, is stopped")
				require.Equal(t, fleet.StateStopped, fc.connectors["file-src"].state)
			} else {
				require.Empty(t, fc.stops)
			}
		})
	}
}

func TestStopBarrierTimesOut(t *testing.T) {
	fc := &fakeConnect{t: t, stopLag: 1 << 30, connectors: map[string]*fakeConnector{
		"stuck": {typ: "source", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "in.txt", "topic": "t", "name": "stuck"}},
	}}
	url := fc.serve(t)
	rep, err := Export(context.Background(), Options{ConnectURL: url, StopSource: true, States: &source.StateStore{Brokers: startKfake(t)},
		StopPoll: 10 * time.Millisecond, StopTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	require.Equal(t, apply.OutcomeSkipped, e.Outcome)
	require.Nil(t, e.Body)
	require.Contains(t, e.Message.String(), "stop on A: wait until the status is STOPPED with no tasks")
	require.False(t, rep.OK())
}

func TestExportFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{name: "no source", opts: Options{}, want: "give at least one"},
		{name: "stop needs REST", opts: Options{Topics: &source.TopicsSource{Brokers: []string{"127.0.0.1:1"}}, StopSource: true}, want: "StopSource needs FromConnectURL"},
		{name: "bad state", opts: Options{ConnectURL: "http://127.0.0.1:1", InitialState: "GO"}, want: `InitialState "GO"`},
		{name: "bad sink mode", opts: Options{ConnectURL: "http://127.0.0.1:1", SinkOffsets: "shift"}, want: `SinkOffsets "shift"`},
		{name: "translate without translator", opts: Options{ConnectURL: "http://127.0.0.1:1", SinkOffsets: "translate"}, want: "SinkOffsets translate needs"},
		{name: "unreachable REST", opts: Options{ConnectURL: "http://127.0.0.1:1"}, want: "A's Connect REST API is unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Export(context.Background(), tt.opts)
			require.ErrorIs(t, err, fleet.ErrPrecheck)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// translator is a SinkTranslator stand-in: it places offsets under a renamed topic. The
// config on B is not its to change.
type translator struct{ fail string }

func (tr translator) TranslateSink(_ context.Context, c *fleet.Connector, target string) ([]events.ConnectorOffset, any, error) {
	if c.Name == tr.fail {
		return nil, map[string]int{"missing": 1}, errors.New("no checkpoint for t-0; the secret is pw-123456")
	}
	return []events.ConnectorOffset{handlers.SinkOffset(offsetstore.GroupOffset{Topic: "A.t", Partition: 0, Offset: 107})},
		map[string]string{"policy": "default", "target": target}, nil
}

func TestSinkTranslatorSeam(t *testing.T) {
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"sink-ok": {typ: "sink", state: fleet.StateRunning, stopAt: -1,
			config:  map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "t", "name": "sink-ok"},
			offsets: []string{`{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":7}}`}},
		"sink-bad": {typ: "sink", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "t", "name": "sink-bad",
				"db.password": "pw-123456"}},
		"src": {typ: "source", state: fleet.StateRunning, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "f", "topic": "t", "name": "src"}},
	}}
	rep, err := Export(context.Background(), Options{ConnectURL: fc.serve(t), SinkTranslator: translator{fail: "sink-bad"}})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	require.JSONEq(t, `{"migration_id":"","from":"`+connectrest.Redact(rep.From)+`","to":"","started":"`+rep.Started.Format(time.RFC3339Nano)+`","finished":"`+rep.Finished.Format(time.RFC3339Nano)+`","connectors":[
		{"name":"sink-bad","target_name":"sink-bad","type":"sink","offsets":0,"outcome":"failed","failed_step":"translate_sink_offsets","message":"no checkpoint for t-0; the secret is [hidden]","request_id":"","translation":{"missing":1}},
		{"name":"sink-ok","target_name":"sink-ok","type":"sink","offsets":1,"outcome":"planned","failed_step":"","message":"","request_id":"","translation":{"policy":"default","target":"sink-ok"}},
		{"name":"src","target_name":"src","type":"source","offsets":0,"outcome":"planned","failed_step":"","message":"","request_id":""}]}`, buf.String())
	var bodies bytes.Buffer
	require.NoError(t, apply.WriteBodies(&bodies, rep))
	require.Equal(t, `{"name":"sink-ok","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","name":"sink-ok","topics":"t"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"A.t"},"offset":{"kafka_offset":107}}]}
{"name":"src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"f","name":"src","topic":"t"},"initial_state":"RUNNING"}
`, bodies.String())
}
