package realkafka_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestFileStreamSourceInitialStates: with the worker running while the agent writes, a
// FileStream source created by the agent in each initial_state is in that state at its initial
// offsets, and a RUNNING one produces from the given file position (tier.SourceInitialStates).
func TestFileStreamSourceInitialStates(t *testing.T) { tier.SourceInitialStates(t, env) }

// TestFileStreamSourceWorkerStartedAfterwards: the agent writes to a Connect cluster's topics
// (creating them as Connect would) before any worker of that cluster runs; the worker started
// afterwards finds every connector in its state at its initial offsets.
func TestFileStreamSourceWorkerStartedAfterwards(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	names := env.ConnectNames("late")
	a, err := env.StartAgent(ctx, "agent-late", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":          names.Config,
		"OFFSETAGENT_OFFSETS_TOPIC":         names.Offsets,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
	})
	require.NoError(t, err)
	states := []string{"RUNNING", "PAUSED", "STOPPED"}
	sources := map[string]tier.FileSource{}
	for _, state := range states {
		s := env.NewFileSource(t, "late-"+state)
		a.Create(t, s.Request(state))
		sources[state] = s
	}
	a.Stop()
	w, err := env.StartTestWorker(ctx, t, "worker-late", names)
	require.NoError(t, err)
	defer w.Stop()
	list := tier.RestOK(t, w, http.MethodGet, "/connectors", nil)
	for _, state := range states {
		require.Contains(t, list, sources[state].Name)
	}
	for _, state := range states {
		t.Run(state, func(t *testing.T) { sources[state].RequireBorn(t, w, state) })
	}
}
