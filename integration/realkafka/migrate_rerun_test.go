package realkafka_test

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestMigrateReRunKeepsStates: `migrate --stop-source` stops a RUNNING and a PAUSED source on a
// real Connect worker A, and its requests get no result before --timeout (they go to a request
// topic no agent reads): both are reported failed. The re-run, which finds both STOPPED on A,
// creates them on B's worker RUNNING and PAUSED, the states recorded before the first stop.
func TestMigrateReRunKeepsStates(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	namesA := env.ConnectNames("rerun-a")
	wA, err := env.StartTestWorker(ctx, t, "worker-rerun-a", namesA)
	require.NoError(t, err)
	b, wB, agentB := env.StartClusterB(ctx, t, "rerun-b", env.Lib)
	running, paused := env.Unique("rerun-running"), env.Unique("rerun-paused")
	for _, name := range []string{running, paused} {
		file := env.WriteFile(t, name+".txt", "x\n")
		tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": name, "config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": name + "-out", "tasks.max": "1"}})
	}
	tier.RestOK(t, wA, http.MethodPut, "/connectors/"+paused+"/pause", nil)
	tier.WaitState(t, wA, running, "RUNNING")
	tier.WaitState(t, wA, paused, "PAUSED")
	// Requests and results topics that no agent reads: the first run gets no results.
	nobody := env.Unique("nobody")
	tier.CreateTopicOn(t, []string{b.Addr}, nobody+"-requests", 1)
	tier.CreateTopicOn(t, []string{b.Addr}, nobody+"-results", 1)

	migrate := func(extra ...string) (int, string) {
		args := append([]string{"migrate", "--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", namesA.Config,
			"--from-offsets-topic", namesA.Offsets, "--from-connect-url", wA.URL, "--to-brokers", b.Addr,
			"--include", running + "|" + paused, "--stop-source", "--no-verify", "--report", filepath.Join(t.TempDir(), "report.json")}, extra...)
		cmd := exec.CommandContext(ctx, env.AgentBin, args...)
		cmd.Env = agentB.Env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "%v: %s", err, out.String())
			code = ee.ExitCode()
		}
		return code, out.String()
	}
	// --allow-no-agent: migrate refuses a request topic that no agent consumes, unless told.
	code, out := migrate("--request-topic", nobody+"-requests", "--result-topic", nobody+"-results", "--allow-no-agent", "--timeout", "20s", "--grace", "1s")
	require.Equal(t, 1, code, out)
	require.Regexp(t, running+`\s+`+running+`\s+source\s+\d+\s+failed\s+await_result\s+no result by the request's deadline`, out)
	tier.WaitState(t, wA, running, "STOPPED")
	tier.WaitState(t, wA, paused, "STOPPED")

	code, out = migrate()
	require.Equal(t, 0, code, out)
	tier.WaitState(t, wB, running, "RUNNING")
	tier.WaitState(t, wB, paused, "PAUSED")
}
