package tier

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// Rest calls the worker's REST API and returns the status and the body.
func Rest(t testing.TB, w *realkafka.Worker, method, path string, body any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, resp, err := w.Do(ctx, method, path, body)
	require.NoError(t, err, "%s %s", method, path)
	return status, string(resp)
}

// RestOK calls the worker's REST API and requires a 2xx answer.
func RestOK(t testing.TB, w *realkafka.Worker, method, path string, body any) string {
	t.Helper()
	status, resp := Rest(t, w, method, path, body)
	require.True(t, status/100 == 2, "%s %s: %d %s", method, path, status, resp)
	return resp
}

// ConnectorStatus is GET /connectors/NAME/status.
type ConnectorStatus struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
	Type string `json:"type"`
}

// WaitOption changes what WaitState waits for.
type WaitOption func(*waitOptions)

type waitOptions struct{ tasksOptional bool }

// TasksOptional lets a RUNNING connector have no task yet: MirrorMaker 2's source has none
// until the source cluster has a topic to mirror.
func TasksOptional() WaitOption { return func(o *waitOptions) { o.tasksOptional = true } }

// WaitState waits until the worker reports the connector and its tasks in state (see tasksIn).
// A FAILED connector or task fails the test at once; one not in state within 2 minutes fails it
// then. The one exception is a connector Connect started from a config snapshot without its
// config (startedWithoutConfig): it is restarted once, as docs/operations.md tells users, and
// the test's log says so.
func WaitState(t testing.TB, w *realkafka.Worker, name, state string, opts ...WaitOption) ConnectorStatus {
	t.Helper()
	var o waitOptions
	for _, opt := range opts {
		opt(&o)
	}
	var last ConnectorStatus
	var lastBody string
	restarted := false
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		status, body := Rest(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)
		lastBody = body
		if status == http.StatusOK {
			last = ConnectorStatus{}
			require.NoError(t, json.Unmarshal([]byte(body), &last))
			race := last.Connector.State == "FAILED" && startedWithoutConfig(last.Connector.Trace)
			if race && !restarted {
				t.Logf(`connector %s FAILED as Connect's race leaves it (docs/connect-internals.md, "A connector started from a snapshot without its config"): restarting it once; status: %s`,
					name, body)
				RestOK(t, w, http.MethodPost, "/connectors/"+name+"/restart", nil)
				restarted = true
			}
			// Once restarted, the race's FAILED is the status from before the restart until the
			// worker writes the new one: the deadline bounds the wait.
			if last.Connector.State == "FAILED" && !race {
				t.Fatalf("connector %s failed: %s", name, body)
			}
			for _, tk := range last.Tasks {
				require.NotEqual(t, "FAILED", tk.State, "connector %s: a task failed: %s", name, tk.Trace)
			}
			if last.Connector.State == state && (tasksIn(last, state) || o.tasksOptional && state == "RUNNING" && len(last.Tasks) == 0) {
				return last
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("connector %s never reached %s; last status: %s", name, state, lastBody)
	return last
}

// startedWithoutConfig reports whether trace is the one a connector's status carries when a
// worker started it from a config snapshot that did not hold its config (docs/connect-internals.md,
// "A connector started from a snapshot without its config"): the NullPointerException of
// Worker.startConnector dereferencing the missing config, its first frame, before the
// connector's class is even looked up. Any other trace is the connector's own failure.
func startedWithoutConfig(trace string) bool {
	first, rest, _ := strings.Cut(trace, "\n")
	return strings.TrimSpace(first) == `java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "connProps" is null` &&
		strings.HasPrefix(strings.TrimSpace(rest), "at org.apache.kafka.connect.runtime.Worker.startConnector(")
}

// tasksIn: a STOPPED connector has no tasks; a RUNNING one has at least one, all RUNNING; a
// connector created PAUSED has none yet (its tasks are configured when it is resumed, also when
// Connect's own POST /connectors creates it PAUSED), and any it has are PAUSED.
func tasksIn(s ConnectorStatus, state string) bool {
	switch state {
	case "STOPPED":
		return len(s.Tasks) == 0
	case "RUNNING":
		if len(s.Tasks) == 0 {
			return false
		}
	}
	for _, tk := range s.Tasks {
		if tk.State != state {
			return false
		}
	}
	return true
}

// SortedOffsetsOf is GET /connectors/NAME/offsets with its entries' JSON sorted.
func SortedOffsetsOf(t testing.TB, w *realkafka.Worker, name string) string {
	t.Helper()
	var v struct {
		Offsets []any `json:"offsets"`
	}
	body := OffsetsOf(t, w, name)
	require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	b, err := json.Marshal(v.Offsets)
	require.NoError(t, err)
	return string(b)
}

// OffsetsOf is GET /connectors/NAME/offsets, as returned.
func OffsetsOf(t testing.TB, w *realkafka.Worker, name string) string {
	t.Helper()
	return RestOK(t, w, http.MethodGet, "/connectors/"+name+"/offsets", nil)
}

// RequireOffsets requires GET /connectors/NAME/offsets to equal want (JSON, entries in any order).
func RequireOffsets(t testing.TB, w *realkafka.Worker, name, want string) {
	t.Helper()
	require.Equal(t, sortedOffsets(t, want), sortedOffsets(t, OffsetsOf(t, w, name)), "GET /connectors/%s/offsets", name)
}

func sortedOffsets(t testing.TB, s string) []string {
	t.Helper()
	var v struct {
		Offsets []json.RawMessage `json:"offsets"`
	}
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	out := make([]string, len(v.Offsets))
	for i, e := range v.Offsets {
		var x any
		require.NoError(t, json.Unmarshal(e, &x))
		b, _ := json.Marshal(x) // sorted keys
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// MM2Config is the config of MirrorMaker 2's connector class (MirrorSourceConnector,
// MirrorCheckpointConnector) run as a connector on the target cluster's worker: source alias
// "A" on sourceBrokers, target alias "B" on targetBrokers, mirroring the topics that match
// topics, bytes as they are (ByteArrayConverter), replication factor 1, topics and groups
// refreshed every second; extra adds or overrides settings (replication.policy.class, groups,
// ...).
func MM2Config(class string, sourceBrokers, targetBrokers []string, topics string, extra map[string]string) map[string]string {
	cfg := map[string]string{
		"connector.class":                       class,
		"tasks.max":                             "1",
		"source.cluster.alias":                  "A",
		"target.cluster.alias":                  "B",
		"source.cluster.bootstrap.servers":      strings.Join(sourceBrokers, ","),
		"target.cluster.bootstrap.servers":      strings.Join(targetBrokers, ","),
		"topics":                                topics,
		"key.converter":                         "org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter":                       "org.apache.kafka.connect.converters.ByteArrayConverter",
		"header.converter":                      "org.apache.kafka.connect.converters.ByteArrayConverter",
		"offset-syncs.topic.replication.factor": "1",
		"replication.factor":                    "1",
		"checkpoints.topic.replication.factor":  "1",
		"sync.topic.configs.enabled":            "false",
		"sync.topic.acls.enabled":               "false",
		"refresh.topics.interval.seconds":       "1",
		"offset.lag.max":                        "10",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// MM2 connector classes.
const (
	MirrorSource     = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
	MirrorCheckpoint = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
)
