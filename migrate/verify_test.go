package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// connectB answers GET .../status and .../offsets of the connectors it holds, as a Connect
// worker's REST API does; any other connector is a 404.
type connectB map[string]struct {
	state, task string
	offsets     string
}

func (c connectB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/connectors/"), "/")
	conn, ok := c[parts[0]]
	if !ok || len(parts) != 2 {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error_code":404,"message":"Connector ` + parts[0] + ` not found"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch parts[1] {
	case "status":
		_ = json.NewEncoder(w).Encode(map[string]any{"name": parts[0], "connector": map[string]string{"state": conn.state},
			"tasks": []map[string]any{{"id": 0, "state": conn.task}}})
	case "offsets":
		_, _ = w.Write([]byte(conn.offsets))
	}
}

func sinkPlaced(name, state string, offset int) strimzi.Placed {
	return strimzi.Placed{Name: name, Type: "sink", State: state, Offsets: []events.ConnectorOffset{{
		Partition: jsonvalue.Map{{Key: "kafka_topic", Value: "t"}, {Key: "kafka_partition", Value: jsonvalue.Number("0")}},
		Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(jsonNum(offset))}},
	}}}
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestVerifyStrimzi(t *testing.T) {
	sinkAt := func(n string) string {
		// B lists the partition's keys in the other order: they are compared as maps.
		return `{"offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":` + n + `}}]}`
	}
	srcAt := func(pos string) string {
		return `{"offsets":[{"partition":{"filename":"f"},"offset":{"position":` + pos + `}}]}`
	}
	src := func(name, state string) strimzi.Placed {
		return strimzi.Placed{Name: name, Type: "source", State: state, Offsets: []events.ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "filename", Value: "f"}}, Offset: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}}}}
	}
	b := connectB{
		"sink-moved-on":  {state: "RUNNING", task: "RUNNING", offsets: sinkAt("12")},
		"sink-behind":    {state: "RUNNING", task: "RUNNING", offsets: sinkAt("3")},
		"sink-stopped":   {state: "STOPPED", offsets: sinkAt("5")},
		"src-paused-off": {state: "PAUSED", task: "PAUSED", offsets: srcAt("31")},
		"src-running":    {state: "RUNNING", task: "RUNNING", offsets: srcAt("99")},
		"src-no-offsets": {state: "RUNNING", task: "RUNNING", offsets: `{"offsets":[]}`},
		"src-paused":     {state: "RUNNING", task: "RUNNING", offsets: srcAt("30")},
		"src-failed":     {state: "RUNNING", task: "FAILED", offsets: srcAt("30")},
	}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	placed := []strimzi.Placed{
		sinkPlaced("sink-moved-on", fleet.StateRunning, 5), sinkPlaced("sink-behind", fleet.StateRunning, 5), sinkPlaced("sink-stopped", fleet.StateStopped, 5),
		src("src-paused-off", fleet.StatePaused), src("src-running", fleet.StateRunning), src("src-no-offsets", fleet.StateRunning),
		src("src-paused", fleet.StatePaused), src("src-failed", fleet.StateRunning), src("not-applied", fleet.StateRunning),
	}
	dir := t.TempDir()
	var lines bytes.Buffer
	for _, p := range placed {
		l, err := json.Marshal(p)
		require.NoError(t, err)
		lines.Write(append(l, '\n'))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, strimzi.PlacedFile), lines.Bytes(), 0o644))

	got, err := strimzi.VerifyStrimzi(context.Background(), strimzi.VerifyOptions{Dir: dir, ConnectURL: srv.URL})
	require.NoError(t, err)
	want := map[string]string{
		"sink-moved-on":  "",
		"sink-behind":    "at offset 3, before the 5 placed",
		"sink-stopped":   "",
		"src-paused-off": `at {"position":31}, not the {"position":30} placed, while PAUSED`,
		"src-running":    "",
		"src-no-offsets": `no offset on B for partition {"filename":"f"}`,
		"src-paused":     "RUNNING, its manifest declares PAUSED",
		"src-failed":     "task 0 FAILED",
		"not-applied":    "not on B: apply its manifest",
	}
	require.Len(t, got, len(want))
	for _, v := range got {
		if want[v.Name] == "" {
			require.True(t, v.OK, "%s: %s", v.Name, v.Message)
			continue
		}
		require.False(t, v.OK, v.Name)
		require.Contains(t, v.Message, want[v.Name], v.Name)
	}
	ok := 0
	for _, v := range got {
		if v.OK {
			ok++
		}
	}
	require.Equal(t, 3, ok, "3 of the 9 run with the offsets placed")

	_, err = strimzi.VerifyStrimzi(context.Background(), strimzi.VerifyOptions{Dir: t.TempDir(), ConnectURL: srv.URL})
	require.ErrorContains(t, err, "read the offsets placed")
}
