package realkafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// libWithout returns a jar folder of the run holding links to every jar of lib except those
// whose name starts with one of drop: a worker started from it lacks their plugins.
func libWithout(t *testing.T, name, lib string, drop ...string) string {
	t.Helper()
	dir, err := env.Subdir(name)
	require.NoError(t, err)
	entries, err := os.ReadDir(lib)
	require.NoError(t, err)
	linked := 0
	for _, e := range entries {
		skip := false
		for _, d := range drop {
			skip = skip || strings.HasPrefix(e.Name(), d)
		}
		if skip || !strings.HasSuffix(e.Name(), ".jar") {
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(lib, e.Name()), filepath.Join(dir, e.Name())))
		linked++
	}
	require.Less(t, linked, len(entries), "no jar of %v in %s", drop, lib)
	return dir
}

// TestMigrateRefusesPluginsBeforeStop: B's Connect worker lacks the test connector's plugin (its
// jar is not on B's classpath) and B's FileStream source plugin does not take a config without
// "topic". `migrate --stop-source` refuses both connectors before anything stops: they still run
// on A, B has no connector and no request was published; the report names the missing plugin and
// Connect's own validation message.
func TestMigrateRefusesPluginsBeforeStop(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// B: a Connect cluster of its own on the shared broker, without the test connector's jar,
	// and its agent. The worker's jar set is new, so no class-data-sharing archive is written
	// for it (it would be of no use to any other run).
	t.Setenv("OFFSETAGENT_JVM_CDS", "off")
	libB := libWithout(t, "lib-plugins-b", env.Lib, "offsetagent-realkafka-")
	namesB := env.ConnectNames("plugins-b")
	wB, err := env.StartWorkerOn(ctx, "worker-plugins-b", libB, env.Brokers, namesB)
	require.NoError(t, err)
	env.StopAfter(t, wB.Stop)
	agentB, err := env.StartAgent(ctx, "agent-plugins-b", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC": namesB.Config, "OFFSETAGENT_OFFSETS_TOPIC": namesB.Offsets,
	})
	require.NoError(t, err)

	// A: the shared worker runs both connectors.
	alt, file := env.Unique("plug-alt"), env.Unique("plug-file")
	tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": alt, "config": map[string]string{
		"connector.class": tier.TestConnector, "tasks.max": "1"}})
	tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": file, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
		"file": env.WriteFile(t, file+".txt", "a\n"), "topic": file + "-out"}})
	t.Cleanup(func() {
		for _, n := range []string{alt, file} {
			tier.Rest(t, env.Worker, http.MethodDelete, "/connectors/"+n, nil)
		}
	})
	tier.WaitState(t, env.Worker, alt, "RUNNING")
	tier.WaitState(t, env.Worker, file, "RUNNING")

	namesA := env.ConnectNames("main")
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(ctx, env.AgentBin, "migrate",
		"--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--from-connect-url", env.Worker.URL, "--to-brokers", strings.Join(env.Brokers, ","), "--to-connect-url", wB.URL,
		"--include", alt+"|"+file, "--unset", "topic", "--stop-source", "--timeout", "2m", "--report", report)
	cmd.Env = agentB.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, 1, exit.ExitCode(), "connectors skipped, not a refused run; stderr:\n%s", stderr.String())

	var rep struct {
		Connectors []struct {
			Name, Outcome, Message string
		}
	}
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	got := map[string]string{}
	for _, e := range rep.Connectors {
		require.Equal(t, "skipped", e.Outcome, e.Name)
		got[e.Name] = e.Message
	}
	require.Len(t, got, 2)
	require.Contains(t, got[alt], "refused before anything was stopped (plugin): connector.class: B's Connect has no connector plugin "+tier.TestConnector)
	// Connect's own words, from B's validate of the config as it would be on B.
	require.Contains(t, got[file], `refused before anything was stopped (plugin): topic: Missing required configuration "topic" which has no default value.`)

	// Nothing stopped on A, nothing on B.
	for _, n := range []string{alt, file} {
		require.Equal(t, "RUNNING", tier.WaitState(t, env.Worker, n, "RUNNING").Connector.State, n)
	}
	require.JSONEq(t, `[]`, tier.RestOK(t, wB, http.MethodGet, "/connectors", nil))
	var requests string
	for _, kv := range agentB.Env {
		if v, ok := strings.CutPrefix(kv, "OFFSETAGENT_REQUEST_TOPIC="); ok {
			requests = v
		}
	}
	require.NotEmpty(t, requests)
	require.Empty(t, tier.TopicValues(t, env.Brokers, requests), "no request published to B")
}
