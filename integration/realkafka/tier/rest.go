package tier

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
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

// WaitState waits until the worker reports the connector and its tasks in state (see tasksIn).
func WaitState(t testing.TB, w *realkafka.Worker, name, state string) ConnectorStatus {
	t.Helper()
	var last ConnectorStatus
	var lastBody string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		status, body := Rest(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)
		lastBody = body
		if status == http.StatusOK {
			last = ConnectorStatus{}
			require.NoError(t, json.Unmarshal([]byte(body), &last))
			if last.Connector.State == "FAILED" {
				t.Fatalf("connector %s failed: %s", name, body)
			}
			if last.Connector.State == state && tasksIn(last, state) {
				return last
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("connector %s never reached %s; last status: %s", name, state, lastBody)
	return last
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
