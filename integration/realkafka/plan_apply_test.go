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

// TestPlanApplyOnRealConnect: `migrate plan -o PLAN` of two busy FileStream sources on a real
// Connect worker A; after the plan, one of them is changed on A (PUT .../config). `migrate
// apply PLAN --stop-source` (the plan's setting) refuses that one, naming the key, and leaves
// it running on A and absent on B; the other is stopped on A and runs on B (the Env's shared
// worker and agent, a Connect cluster of its own on the same Kafka cluster) from where A's
// task stopped: every line of its file is produced once. `migrate verify REPORT` then
// verifies it.
func TestPlanApplyOnRealConnect(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	namesA := env.ConnectNames("plan-a")
	wA, err := env.StartTestWorker(ctx, t, "worker-plan-a", namesA)
	require.NoError(t, err)
	wB := env.Worker
	moved, changed := env.Unique("plan-moved"), env.Unique("plan-changed")
	files := map[string]string{}
	var lines string
	for _, name := range []string{moved, changed} {
		first, _ := tier.Lines("p", 0, 20)
		lines = first
		files[name] = env.WriteFile(t, name+".txt", first)
		tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": name, "config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": files[name], "topic": name + "-out", "tasks.max": "1"}})
		tier.WaitState(t, wA, name, "RUNNING")
	}
	t.Cleanup(func() { tier.Rest(t, wB, http.MethodDelete, "/connectors/"+moved, nil) })
	require.Len(t, tier.WaitTopic(t, env.Brokers, moved+"-out", 20), 20)

	dir := t.TempDir()
	migrate := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, env.AgentBin, append([]string{"migrate"}, args...)...)
		cmd.Env = env.Agent.Env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "%v: %s", err, out.String())
			return ee.ExitCode(), out.String()
		}
		return 0, out.String()
	}
	planPath := filepath.Join(dir, "plan.yaml")
	code, out := migrate("plan", "-o", planPath, "--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", namesA.Config,
		"--from-offsets-topic", namesA.Offsets, "--from-connect-url", wA.URL, "--to-brokers", strings.Join(env.Brokers, ","), "--to-connect-url", wB.URL,
		"--include", moved+"|"+changed, "--stop-source")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 to move, 0 refused")
	// Planning stopped nothing.
	tier.WaitState(t, wA, moved, "RUNNING")

	// After the review, someone changes one of them on A.
	tier.RestOK(t, wA, http.MethodPut, "/connectors/"+changed+"/config", map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": files[changed], "topic": changed + "-elsewhere", "tasks.max": "1"})
	more, _ := tier.Lines("p", 20, 100)
	tier.AppendFile(t, files[moved], more)
	lines += more

	code, out = migrate("apply", planPath, "--verify-timeout", "1s")
	require.Equal(t, 1, code, out)
	require.Regexp(t, moved+`\s+`+moved+`\s+source\s+1\s+succeeded`, out)
	require.Regexp(t, changed+`\s+`+changed+`\s+source\s+-?\d*\s*skipped\s+drift`, out)
	require.Contains(t, out, `topic "`+changed+`-out" -> "`+changed+`-elsewhere"`)
	tier.WaitState(t, wA, moved, "STOPPED")
	tier.WaitState(t, wB, moved, "RUNNING")
	tier.WaitState(t, wA, changed, "RUNNING")
	status, _ := tier.Rest(t, wB, http.MethodGet, "/connectors/"+changed, nil)
	require.Equal(t, http.StatusNotFound, status, "the drifted connector is not on B")

	// B's task continues where A's stopped: every line once, on A or on B (one topic).
	last, _ := tier.Lines("p", 120, 5)
	tier.AppendFile(t, files[moved], last)
	lines += last
	all := strings.Split(strings.TrimSuffix(lines, "\n"), "\n")
	produced := tier.WaitTopic(t, env.Brokers, moved+"-out", len(all))
	want := make([]string, len(all))
	for i, l := range all {
		want[i] = tier.JSONString(l)
	}
	require.Equal(t, want, produced, "no line produced twice, none skipped")

	code, out = migrate("verify", planPath+".cutover.json", "--verify-timeout", "60s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "1 verified, 0 waiting")
}
