package realkafka_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// fileSource is a FileStream source born at the end of the first lines of its file.
type fileSource = tier.FileSource

// newFileSource writes a file of 5 lines and returns a source whose initial offset is their end.
func newFileSource(t *testing.T, prefix string) fileSource {
	t.Helper()
	return env.NewFileSource(t, prefix)
}

// TestFileStreamSourceInitialStates: with the worker running while the agent writes, a
// FileStream source created by the agent in each initial_state is in that state at its initial
// offsets, and a RUNNING one produces from the given file position (tier.SourceInitialStates).
func TestFileStreamSourceInitialStates(t *testing.T) { tier.SourceInitialStates(t, env) }

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
		a.create(t, s.Request(state))
		sources[state] = s
	}
	a.stop()
	w, err := startWorker(ctx, t, "worker-late", names)
	require.NoError(t, err)
	defer w.Stop()
	list := restOK(t, w, http.MethodGet, "/connectors", nil)
	for _, state := range states {
		require.Contains(t, list, sources[state].Name)
	}
	for _, state := range states {
		t.Run(state, func(t *testing.T) { sources[state].RequireBorn(t, w, state) })
	}
}
