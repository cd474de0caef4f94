package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// connectStub is a Connect REST API for the migrate tests: root answers GET /, and handle
// every other call (nil: 404). It records each call as "METHOD path".
type connectStub struct {
	root   string
	handle func(w http.ResponseWriter, r *http.Request) bool

	mu    sync.Mutex
	calls []string
}

func (c *connectStub) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.calls = append(c.calls, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/" {
			fmt.Fprint(w, c.root)
			return
		}
		if c.handle == nil || !c.handle(w, r) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error_code":404,"message":"HTTP 404 Not Found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (c *connectStub) called(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.calls {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// A migration with --stop-source refuses, before anything is stopped, a connector whose plugin
// B's Connect does not have and one whose config B's Connect does not validate: neither is
// stopped on A, nothing is published to B, and the report names why with Connect's words.
func TestMigrateRefusesPluginsBeforeStop(t *testing.T) {
	f := newFleet(t)
	agentA := startAgent(t, f.cfgA, agent.Options{})
	pub := newClient(t, f.cfgA)
	ids := []string{
		pub.publish(`{"name":"dbz","config":{"connector.class":"io.debezium.connector.mysql.MySqlConnector","topic.prefix":"dbserver1","database.password":"pw-s3cret"},"initial_offsets":[{"partition":{"server":"dbserver1"},"offset":{"file":"mysql-bin.000003","pos":154}}]}`, events.RequestOptions{}),
		pub.publish(`{"name":"file-src","config":{"connector.class":"`+fileSource+`","file":"in.txt","topic":"t","db.password":"pw-s3cret"},"initial_offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":30}}]}`, events.RequestOptions{}),
	}
	for _, id := range ids {
		r := pub.waitResult(id, 60*time.Second)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)
	startAgent(t, f.cfgB, agent.Options{})

	// A runs both; a stop of either would be recorded.
	connectA := &connectStub{root: `{"version":"4.3.1","commit":"a","kafka_cluster_id":"cluster-A"}`,
		handle: func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.URL.Path == "/connectors":
				fmt.Fprint(w, `["dbz","file-src"]`)
			case strings.HasSuffix(r.URL.Path, "/status"):
				fmt.Fprint(w, `{"connector":{"state":"RUNNING","worker_id":"a:8083"},"tasks":[{"id":0,"state":"RUNNING","worker_id":"a:8083"}],"type":"source"}`)
			case strings.HasSuffix(r.URL.Path, "/stop"):
				w.WriteHeader(http.StatusNoContent)
			default:
				return false
			}
			return true
		}}
	// B has FileStream but not Debezium, and its FileStream plugin refuses the file.
	connectB := &connectStub{root: `{"version":"4.3.1","commit":"b","kafka_cluster_id":"cluster-B"}`,
		handle: func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.URL.Path == "/connector-plugins":
				fmt.Fprintf(w, `[{"class":%q,"type":"source","version":"4.3.1"},{"class":%q,"type":"sink","version":"4.3.1"}]`, fileSource, fileSink)
			case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config/validate"):
				var cfg map[string]string
				if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
					return false
				}
				fmt.Fprintf(w, `{"name":%q,"error_count":1,"groups":["Common"],"configs":[
					{"definition":{"name":"file"},"value":{"name":"file","value":%q,"recommended_values":[],"errors":["Invalid value %s for configuration file: not readable on this worker"],"visible":true}},
					{"definition":{"name":"db.password"},"value":{"name":"db.password","value":%q,"recommended_values":[],"errors":[],"visible":true}}]}`,
					fileSource, cfg["file"], cfg["file"], cfg["db.password"])
			default:
				return false
			}
			return true
		}}

	opts := f.options(t, source.SelectionFlags{Include: []string{"dbz", "file-src"}})
	opts.ConnectURL, opts.StopSource = connectA.serve(t), true
	opts.To.ConnectURL = connectB.serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, _, err := migrate.Migrate(ctx, opts)
	require.NoError(t, err)

	require.Empty(t, connectA.called("PUT"), "nothing stopped on A")
	require.Empty(t, f.clB.readAll(f.cfgB.RequestTopic), "nothing published to B")
	require.Equal(t, []string{"GET /connector-plugins"}, connectB.called("GET /connector-plugins"), "B's plugins listed once")
	require.Equal(t, []string{"PUT /connector-plugins/" + fileSource + "/config/validate"}, connectB.called("PUT"), "only the installed plugin is validated")
	byName := map[string]*apply.Entry{}
	for _, e := range rep.Connectors {
		byName[e.Name] = e
	}
	require.Len(t, byName, 2)
	dbz, file := byName["dbz"], byName["file-src"]
	require.Equal(t, apply.OutcomeSkipped, dbz.Outcome, dbz.Message)
	require.Contains(t, dbz.Message.String(), "refused before anything was stopped (plugin): connector.class: B's Connect has no connector plugin io.debezium.connector.mysql.MySqlConnector")
	require.Equal(t, apply.OutcomeSkipped, file.Outcome, file.Message)
	require.Contains(t, file.Message.String(), "file: Invalid value in.txt for configuration file: not readable on this worker")
	for _, e := range rep.Connectors {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		require.NotContains(t, string(b), "pw-s3cret")
	}
}
