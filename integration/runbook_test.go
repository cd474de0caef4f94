package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// kubectlLogs is the start of a runbook command that reads the agent's log; the test feeds
// the same pipeline a real agent's log instead.
var kubectlLogs = regexp.MustCompile(`^kubectl logs [^|]*`)

// runbookLogCommands returns every `kubectl logs` command in the shell blocks of
// docs/operations.md.
func runbookLogCommands(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	var cmds []string
	inShell := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			inShell = !inShell && (line == "```sh" || line == "```bash")
		case inShell && strings.HasPrefix(line, "kubectl logs "):
			cmds = append(cmds, line)
		}
	}
	require.NotEmpty(t, cmds, "docs/operations.md has no log queries")
	return cmds
}

// TestRunbookLogQueries runs every log query of docs/operations.md on the JSON log of a real
// agent that served a success, a failure, a duplicate and an undecodable record, and of one
// started against brokers that are not there: each must find the lines it is documented to
// find (it prints at least one log line), so a misspelt field or level fails here.
func TestRunbookLogQueries(t *testing.T) {
	cmds := runbookLogCommands(t)
	logs := &lockedBuffer{}
	// The handler cmd/offsetagent builds for OFFSETAGENT_LOG_FORMAT=json.
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	c := startCluster(t)
	cfg := testConfig(c)
	a := startAgent(t, cfg, agent.Options{Logger: logger})
	cl := newClient(t, cfg)
	ok := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	failing := cl.publish(`{"name": "file-src-2", "config": {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"file": "other.txt", "topic": "t", "tasks.max": "1"},
		"initial_offsets": [{"partition": {"filename": "other.txt"}, "offset": {"position": -5}}]}`, events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(ok, resultWait).Type)
	require.Equal(t, events.TypeCreateFailed, cl.waitResult(failing, resultWait).Type)
	cl.publishRaw(kafka.Message{Topic: cfg.RequestTopic, Key: []byte("garbage"), Value: []byte("not a cloudevent")})
	cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{ID: ok})
	require.Eventually(t, func() bool {
		return a.metric(t, "offsetagent_requests_total", "result", "duplicate") == 1 &&
			a.failures(t, "decode_request") == 1
	}, resultWait, 50*time.Millisecond)
	a.stop(t)

	// An agent whose brokers do not answer: start-up waits for them.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadCfg := cfg
	deadCfg.Brokers = []string{dead.Addr().String()}
	require.NoError(t, dead.Close())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	b, err := agent.New(deadCfg, agent.Options{Logger: logger, Registry: reg, Gatherer: reg, Listener: ln})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "brokers not ready") }, 30*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop")
	}

	logFile := filepath.Join(t.TempDir(), "offsetagent.log")
	require.NoError(t, os.WriteFile(logFile, []byte(logs.String()), 0o600))
	placeholders := strings.NewReplacer("<request-id>", failing, "<connector>", "file-src-2", "<brokers>", "unused")
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			script := placeholders.Replace(kubectlLogs.ReplaceAllLiteralString(cmd, `cat "$LOG" `))
			sh := exec.Command("sh", "-c", script)
			sh.Env = append(os.Environ(), "LOG="+logFile)
			out, err := sh.CombinedOutput()
			require.NoError(t, err, "%s\n%s", script, out)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.NotEmpty(t, strings.TrimSpace(string(out)), "%s finds nothing in a real agent's log:\n%s", cmd, logs.String())
			for _, l := range lines {
				require.True(t, json.Valid([]byte(l)), "%s prints %q, not a log line", cmd, l)
			}
		})
	}
}
