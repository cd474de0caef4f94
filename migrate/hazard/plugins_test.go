package hazard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

// pluginsB is B's Connect REST API as the plugin check sees it: GET /, GET /connector-plugins
// and PUT /connector-plugins/{class}/config/validate, answering each config with validate.
type pluginsB struct {
	t       *testing.T
	version string // GET /'s version
	plugins string // GET /connector-plugins's answer (JSON); "" answers 500
	// validate answers one validate call: the status and the body.
	validate func(class string, cfg map[string]any) (int, string)

	mu        sync.Mutex
	lists     int
	validated []string // the classes of the validate paths, in call order
}

func (b *pluginsB) serve(t *testing.T) *connectrest.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/":
			fmt.Fprintf(w, `{"version":%q,"commit":"abc","kafka_cluster_id":"cluster-B"}`, b.version)
		case r.URL.Path == "/connector-plugins" && r.Method == http.MethodGet:
			b.lists++
			if b.plugins == "" {
				w.WriteHeader(500)
				fmt.Fprint(w, `{"error_code":500,"message":"boom"}`)
				return
			}
			fmt.Fprint(w, b.plugins)
		case strings.HasPrefix(r.URL.Path, "/connector-plugins/") && strings.HasSuffix(r.URL.Path, "/config/validate") && r.Method == http.MethodPut:
			class, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(r.URL.EscapedPath(), "/connector-plugins/"), "/config/validate"))
			require.NoError(b.t, err)
			b.validated = append(b.validated, class)
			body, err := io.ReadAll(r.Body)
			require.NoError(b.t, err)
			var cfg map[string]any
			require.NoError(b.t, json.Unmarshal(body, &cfg))
			status, out := 200, `{"name":"x","error_count":0,"groups":[],"configs":[]}`
			if b.validate != nil {
				status, out = b.validate(class, cfg)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, out)
		default:
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error_code":404,"message":"HTTP 404 Not Found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := connectrest.New(srv.URL, nil)
	require.NoError(t, err)
	return c
}

// validateAnswer is a validate response with the errors of each key; every key carries its
// value, as Connect's does.
func validateAnswer(cfg map[string]any, errs map[string][]string) string {
	type value struct {
		Name   string   `json:"name"`
		Value  any      `json:"value"`
		Errors []string `json:"errors"`
	}
	var configs []map[string]any
	n := 0
	for k, v := range cfg {
		configs = append(configs, map[string]any{"definition": map[string]any{"name": k}, "value": value{Name: k, Value: v, Errors: append([]string{}, errs[k]...)}})
		n += len(errs[k])
	}
	for k, e := range errs {
		if _, ok := cfg[k]; !ok {
			configs = append(configs, map[string]any{"definition": map[string]any{"name": k}, "value": value{Name: k, Errors: e}})
			n += len(e)
		}
	}
	b, _ := json.Marshal(map[string]any{"name": "x", "error_count": n, "groups": []string{"Common"}, "configs": configs})
	return string(b)
}

const filePlugins = `[{"class":"org.apache.kafka.connect.file.FileStreamSourceConnector","type":"source","version":"4.3.1"},
	{"class":"org.apache.kafka.connect.file.FileStreamSinkConnector","type":"sink","version":"4.3.1"},
	{"class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","type":"source","version":"4.3.1"},
	{"class":"com.example.VersionedConnector","type":"source","version":"1.0"},
	{"class":"com.example.VersionedConnector","type":"source","version":"1.1"}]`

func pluginEntry(name string, kv ...string) *Subject {
	var cfg events.Config
	for i := 0; i+1 < len(kv); i += 2 {
		cfg = append(cfg, events.ConfigEntry{Key: kv[i], Value: kv[i+1]})
	}
	return &Subject{Target: name + "-b", Connector: &fleet.Connector{Name: name, Type: connectors.Source, Config: cfg}}
}

// sinkEntry is pluginEntry's sink.
func sinkEntry(name string, kv ...string) *Subject {
	e := pluginEntry(name, kv...)
	e.Connector.Type = connectors.Sink
	return e
}

// The plugin check runs before anything is stopped: each selected connector's class must be
// installed on B (by full name, simple name or alias), in the requested connector.plugin.version
// where B's Connect knows plugin versions, and its config as it will be on B must validate there.
// A refusal names the key and Connect's messages, never a secret value.
func TestCheckPluginsOnB(t *testing.T) {
	const secret = "hunter2-very-secret"
	tests := []struct {
		name     string
		version  string // B's Connect
		plugins  string
		validate func(class string, cfg map[string]any) (int, string)
		set      []string // --set
		// policy: moved across MirrorMaker 2 with it (MM2); the topic names are checked
		// first, as CheckHazards does.
		policy  *mm2.Policy
		entries []*Subject
		// want: connector -> its hazards as "check key refuse: message part" ("" for none)
		want map[string][]string
		// problem: connectors that get a Problem (refused)
		problem []string
		// validated: the classes validated, in any order
		validated []string
	}{
		{
			name: "installed by full name, simple name and alias; validates", version: "4.3.1", plugins: filePlugins,
			entries: []*Subject{
				pluginEntry("full", "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector", "file", "a", "topic", "t"),
				pluginEntry("simple", "connector.class", "MirrorSourceConnector"),
				pluginEntry("alias", "connector.class", "FileStreamSink", "topics", "t"),
			},
			want:      map[string][]string{"full": nil, "simple": nil, "alias": nil},
			validated: []string{"org.apache.kafka.connect.file.FileStreamSourceConnector", "MirrorSourceConnector", "FileStreamSink"},
		},
		{
			name: "missing on B: refused, not validated", version: "4.3.1", plugins: filePlugins,
			entries: []*Subject{
				pluginEntry("dbz", "connector.class", "io.debezium.connector.mysql.MySqlConnector", "database.password", secret),
				pluginEntry("dbz-2", "connector.class", "io.debezium.connector.mysql.MySqlConnector"),
				pluginEntry("ok", "connector.class", "FileStreamSource"),
			},
			want: map[string][]string{
				"dbz":   {"plugin connector.class true: B's Connect has no connector plugin io.debezium.connector.mysql.MySqlConnector"},
				"dbz-2": {"plugin connector.class true: B's Connect has no connector plugin io.debezium.connector.mysql.MySqlConnector"},
				"ok":    nil,
			},
			problem:   []string{"dbz", "dbz-2"},
			validated: []string{"FileStreamSource"},
		},
		{
			name: "config B rejects: each failing key with Connect's messages, no values", version: "4.3.1", plugins: filePlugins,
			set: []string{"batch.size=-1"},
			validate: func(class string, cfg map[string]any) (int, string) {
				return 200, validateAnswer(cfg, map[string][]string{
					"topic":             {`Missing required configuration "topic" which has no default value.`},
					"batch.size":        {"Invalid value -1 for configuration batch.size: Value must be at least 1"},
					"database.password": {"Invalid value " + secret + " for configuration database.password: too short"},
				})
			},
			entries: []*Subject{pluginEntry("src", "connector.class", "FileStreamSource", "file", "a", "database.password", secret)},
			want: map[string][]string{"src": {
				`plugin batch.size true: Invalid value -1 for configuration batch.size: Value must be at least 1`,
				`plugin database.password true: Invalid value [hidden] for configuration database.password: too short`,
				`plugin topic true: Missing required configuration "topic" which has no default value.`,
			}},
			problem:   []string{"src"},
			validated: []string{"FileStreamSource"},
		},
		{
			name: "the config validated is the one on B: --set and the name on B", version: "4.3.1", plugins: filePlugins,
			set: []string{"topic=t-b"},
			validate: func(class string, cfg map[string]any) (int, string) {
				if cfg["topic"] != "t-b" || cfg["name"] != "src-b" {
					return 200, validateAnswer(cfg, map[string][]string{"topic": {fmt.Sprintf("not B's config: %v %v", cfg["topic"], cfg["name"])}})
				}
				return 200, validateAnswer(cfg, nil)
			},
			entries:   []*Subject{pluginEntry("src", "connector.class", "FileStreamSource", "file", "a", "topic", "t")},
			want:      map[string][]string{"src": nil},
			validated: []string{"FileStreamSource"},
		},
		{
			name: "across MirrorMaker 2, the config validated is the one on B: renamed topics, A's names given back first", version: "4.3.1",
			plugins: filePlugins, policy: &mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"},
			validate: func(class string, cfg map[string]any) (int, string) {
				if cfg["topics"] != "A.orders" || cfg["transforms"] != "restoreTopicNamesOfA,route,tag" || cfg["transforms.restoreTopicNamesOfA.regex"] != `A\.(.*)` {
					return 200, validateAnswer(cfg, map[string][]string{"topics": {fmt.Sprintf("not B's config: %v %v", cfg["topics"], cfg["transforms"])}})
				}
				return 200, validateAnswer(cfg, nil)
			},
			entries:   []*Subject{sinkEntry("sink", routedChain("connector.class", "FileStreamSink", "file", "out", "topics", "orders")...)},
			want:      map[string][]string{"sink": nil},
			validated: []string{"FileStreamSink"},
		},
		{
			name: "a topic that does not exist on B yet is a warning", version: "4.3.1", plugins: filePlugins,
			validate: func(class string, cfg map[string]any) (int, string) {
				return 200, validateAnswer(cfg, map[string][]string{"topics": {"Topic orders does not exist"}})
			},
			entries: []*Subject{pluginEntry("sink", "connector.class", "FileStreamSink", "topics", "orders")},
			want:    map[string][]string{"sink": {"plugin topics false: Topic orders does not exist"}},
		},
		{
			name: "validate fails: refused with Connect's answer", version: "4.3.1", plugins: filePlugins,
			validate: func(class string, cfg map[string]any) (int, string) {
				return 500, `{"error_code":500,"message":"org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Connector config {database.password=` + secret + `} contains no connector type"}`
			},
			entries: []*Subject{pluginEntry("src", "connector.class", "FileStreamSource", "database.password", secret)},
			want:    map[string][]string{"src": {"plugin  true: B's Connect could not validate the config (PUT /connector-plugins/FileStreamSource/config/validate): 500 org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Connector config {database.password=[hidden]}"}},
			problem: []string{"src"},
		},
		{
			name: "requested plugin version: installed, missing, a range left to validate", version: "4.1.0", plugins: filePlugins,
			entries: []*Subject{
				pluginEntry("v11", "connector.class", "com.example.VersionedConnector", "connector.plugin.version", "1.1"),
				pluginEntry("v2", "connector.class", "Versioned", "connector.plugin.version", "2.0"),
				pluginEntry("range", "connector.class", "Versioned", "connector.plugin.version", "[1.0,2.0)"),
				pluginEntry("latest", "connector.class", "Versioned", "connector.plugin.version", "latest"),
			},
			want: map[string][]string{
				"v11":    nil,
				"v2":     {"plugin connector.plugin.version true: B's Connect has com.example.VersionedConnector in version(s) 1.0, 1.1, not 2.0"},
				"range":  nil,
				"latest": nil,
			},
			problem:   []string{"v2"},
			validated: []string{"com.example.VersionedConnector", "Versioned", "Versioned"},
		},
		{
			name: "a plugin version on a B that does not know them is a warning", version: "3.9.1", plugins: filePlugins,
			entries: []*Subject{pluginEntry("v2", "connector.class", "com.example.VersionedConnector", "connector.plugin.version", "2.0")},
			want: map[string][]string{
				"v2": {"plugin connector.plugin.version false: B's Connect 3.9.1 does not know connector.plugin.version"},
			},
			validated: []string{"com.example.VersionedConnector"},
		},
		{
			name: "B's plugins cannot be listed: refused", version: "4.3.1", plugins: "",
			entries: []*Subject{pluginEntry("src", "connector.class", "FileStreamSource")},
			want:    map[string][]string{"src": {"plugin  true: cannot list B's connector plugins"}},
			problem: []string{"src"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := &pluginsB{t: t, version: tt.version, plugins: tt.plugins, validate: tt.validate}
			sel, err := source.NewSelection(source.SelectionFlags{Set: tt.set})
			require.NoError(t, err)
			opts := Options{Selection: sel}
			if tt.policy != nil {
				opts.MM2 = &fleet.MM2{Policy: *tt.policy}
			}
			s := checksOn(opts, &B{REST: b.serve(t)})
			if tt.policy != nil {
				s.checkTopicNames(ctx, tt.entries)
			}
			s.checkPlugins(ctx, tt.entries)
			for _, e := range tt.entries {
				var got []string
				for _, h := range e.Hazards {
					if h.Check == HazardPlugin {
						got = append(got, fmt.Sprintf("%s %s %v: %s", h.Check, h.Key, h.Refuse, h.Message.String()))
					}
				}
				want := tt.want[e.Connector.Name]
				require.Len(t, got, len(want), "%s: %q", e.Connector.Name, got)
				for i := range want {
					require.True(t, strings.HasPrefix(got[i], want[i]), "%s: %q\nwant prefix %q", e.Connector.Name, got[i], want[i])
				}
				for _, h := range e.Hazards {
					require.NotContains(t, h.String(), secret)
				}
				require.NotContains(t, e.Connector.Problem.String(), secret)
				require.Equal(t, contains(tt.problem, e.Connector.Name), !e.Connector.Problem.IsZero(), "%s: problem %q", e.Connector.Name, e.Connector.Problem.String())
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			require.LessOrEqual(t, b.lists, 1, "B's plugins listed once per run")
			if tt.validated != nil {
				require.ElementsMatch(t, tt.validated, b.validated)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Without B's REST API the plugins are not checked: a warning on each connector says so and
// what to give.
func TestCheckPluginsWithoutRESTB(t *testing.T) {
	opts := Options{}
	s := checksOn(opts, &B{})
	entries := []*Subject{pluginEntry("a", "connector.class", "FileStreamSource"), pluginEntry("b", "connector.class", "FileStreamSink")}
	s.checkPlugins(context.Background(), entries)
	for _, e := range entries {
		require.Len(t, e.Hazards, 1, e.Connector.Name)
		h := e.Hazards[0]
		require.Equal(t, HazardPlugin, h.Check)
		require.False(t, h.Refuse)
		require.Contains(t, h.String(), "ToConnectURL")
		require.Empty(t, e.Connector.Problem)
	}
}

// A fleet of hundreds is checked with one plugin listing and bounded validate calls in flight.
func TestCheckPluginsBoundsCalls(t *testing.T) {
	var (
		mu             sync.Mutex
		inFlight, peak int
	)
	b := &pluginsB{t: t, version: "4.3.1", plugins: filePlugins}
	b.validate = func(class string, cfg map[string]any) (int, string) {
		// b.mu is held: count under it, then let the others in.
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		b.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		b.mu.Lock()
		mu.Lock()
		inFlight--
		mu.Unlock()
		return 200, validateAnswer(cfg, nil)
	}
	opts := Options{}
	s := checksOn(opts, &B{REST: b.serve(t)})
	var entries []*Subject
	for i := range 300 {
		entries = append(entries, pluginEntry(fmt.Sprintf("c%d", i), "connector.class", "FileStreamSource"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.checkPlugins(ctx, entries)
	for _, e := range entries {
		require.Empty(t, e.Hazards, e.Connector.Name)
	}
	require.Equal(t, 1, b.lists)
	require.Len(t, b.validated, 300)
	require.LessOrEqual(t, peak, 8, "validate calls in flight")
}

func TestTopicMissingOnly(t *testing.T) {
	tests := []struct {
		name string
		errs []string
		want bool
	}{
		{name: "does not exist", errs: []string{"Topic orders does not exist"}, want: true},
		{name: "not found", errs: []string{"topic 'orders' not found on the cluster"}, want: true},
		{name: "unknown topic", errs: []string{"Unknown topic or partition: orders"}, want: true},
		{name: "another error too", errs: []string{"Topic orders does not exist", "Value must be at least 1"}},
		{name: "a topic setting's other error", errs: []string{"Invalid value x for configuration topic.creation.groups: group not found"}},
		{name: "missing setting", errs: []string{`Missing required configuration "topic" which has no default value.`}},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, topicMissingOnly(tt.errs))
		})
	}
}
