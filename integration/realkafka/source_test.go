package realkafka_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// fileSource is a FileStream source born at the end of the first lines of its file.
type fileSource struct {
	name, file, topic string
	position          int
}

// newFileSource writes a file of 5 lines and returns a source whose initial offset is their end.
func newFileSource(t *testing.T, prefix string) fileSource {
	t.Helper()
	name := unique(prefix)
	content, n := lines("before", 0, 5)
	return fileSource{name: name, file: writeFile(t, name+".txt", content), topic: name + "-out", position: n}
}

func (s fileSource) request(state string) map[string]any {
	return map[string]any{
		"name": s.name,
		"config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"file":            s.file, "topic": s.topic, "tasks.max": "1",
		},
		"initial_state":   state,
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"filename": s.file}, "offset": map[string]any{"position": s.position}}},
	}
}

func (s fileSource) offsets() string {
	return fmt.Sprintf(`{"offsets":[{"partition":{"filename":%s},"offset":{"position":%d}}]}`, jsonString(s.file), s.position)
}

// requireBorn checks a FileStream source born in state: the worker shows the state and exactly
// the initial offsets; once RUNNING (at once, or resumed) it produces the lines appended after the
// initial position and none before it.
func (s fileSource) requireBorn(t *testing.T, w *realkafka.Worker, state string) {
	t.Helper()
	connectState := map[string]string{"RUNNING": "RUNNING", "PAUSED": "PAUSED", "STOPPED": "STOPPED"}[state]
	waitState(t, w, s.name, connectState)
	requireOffsets(t, w, s.name, s.offsets())
	if state != "RUNNING" {
		restOK(t, w, http.MethodPut, "/connectors/"+s.name+"/resume", nil)
		waitState(t, w, s.name, "RUNNING")
	}
	after, _ := lines("after", 0, 3)
	appendFile(t, s.file, after)
	got := waitValues(t, s.topic, 3)
	require.Equal(t, []string{`"after-00"`, `"after-01"`, `"after-02"`}, got,
		"the task must start at position %d: the lines before it are not produced", s.position)
}

// TestFileStreamSourceInitialStates: with the worker running while the agent writes, a
// FileStream source created by the agent in each initial_state is in that state at its initial
// offsets, and a RUNNING one produces from the given file position.
func TestFileStreamSourceInitialStates(t *testing.T) {
	requirePeers(t)
	for _, state := range []string{"RUNNING", "PAUSED", "STOPPED"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			s := newFileSource(t, "fs-"+state)
			res := peers.agent.create(t, s.request(state))
			require.Equal(t, "The offsets for this connector have been altered successfully", res.Data.InitialOffsetsResponse)
			s.requireBorn(t, peers.worker, state)
		})
	}
}

// TestFileStreamSourceWorkerStartedAfterwards: the agent writes to a Connect cluster's topics
// (creating them as Connect would) before any worker of that cluster runs; the worker started
// afterwards finds every connector in its state at its initial offsets.
func TestFileStreamSourceWorkerStartedAfterwards(t *testing.T) {
	requirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	names := connectNames("late")
	a, err := startAgent(ctx, "agent-late", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":          names.config,
		"OFFSETAGENT_OFFSETS_TOPIC":         names.offsets,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
	})
	require.NoError(t, err)
	states := []string{"RUNNING", "PAUSED", "STOPPED"}
	sources := map[string]fileSource{}
	for _, state := range states {
		s := newFileSource(t, "late-"+state)
		a.create(t, s.request(state))
		sources[state] = s
	}
	a.stop()
	w, err := startWorker(ctx, "worker-late", names)
	require.NoError(t, err)
	defer w.Stop()
	list := restOK(t, w, http.MethodGet, "/connectors", nil)
	for _, state := range states {
		require.Contains(t, list, sources[state].name)
	}
	for _, state := range states {
		t.Run(state, func(t *testing.T) { sources[state].requireBorn(t, w, state) })
	}
}
