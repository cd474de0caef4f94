package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
)

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "no command", args: nil, code: 2, stderr: "usage: offsetagent"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, code: 0, stdout: "commands:"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "offsetagent dev (commit unknown, go1."},
		{name: "publish without file", args: []string{"publish"}, code: 2, stderr: "usage: offsetagent publish"},
		{name: "offsets without name", args: []string{"offsets"}, code: 2, stderr: "usage: offsetagent offsets [--connect-timeout D] NAME"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errOut)
			require.Equal(t, tc.code, code, errOut.String())
			requireOutput(t, "stdout", out.String(), tc.stdout)
			requireOutput(t, "stderr", errOut.String(), tc.stderr)
		})
	}
}

// requireOutput checks that got contains want, or is empty when want is.
func requireOutput(t *testing.T, stream, got, want string) {
	t.Helper()
	if want == "" {
		require.Empty(t, got, stream)
		return
	}
	require.Contains(t, got, want, stream)
}

func TestInvalidConfigurationIsAClearError(t *testing.T) {
	t.Setenv("OFFSETAGENT_CONCURRENCY", "0")
	var errOut bytes.Buffer
	code := run([]string{"run"}, strings.NewReader(""), &bytes.Buffer{}, &errOut)
	require.Equal(t, 2, code)
	require.Contains(t, errOut.String(), "OFFSETAGENT_CONCURRENCY: 0, must be at least 1")
}

// The demo is the README's `make demo`: the seed example succeeds and Connect's topics hold
// exactly the records a worker would have written.
func TestDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, demo(context.Background(), &out, &errOut), errOut.String())
	s := out.String()
	require.Contains(t, s, "== result event: offsetagent.connector.create.succeeded")
	require.Contains(t, s, "== result event: offsetagent.connector.create.failed")
	require.Contains(t, s, "The value for the 'position' key in the offset should be a non-negative value")
	require.Contains(t, s, "partition 0 offset 0\n  key:   target-state-file-src-1\n  value: {\"state\":\"STARTED\",\"state.v2\":\"STARTED\"}\n")
	require.Contains(t, s, "partition 0 offset 1\n  key:   connector-file-src-1\n  value: {\"properties\":{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",\"file\":\"test.txt\",\"topic\":\"test-topic\",\"tasks.max\":\"1\",\"name\":\"file-src-1\"}}\n")
	require.Contains(t, s, "partition 2 offset 0\n  key:   [\"file-src-1\",{\"filename\":\"test.txt\"}]\n  value: {\"position\":30}\n")
}

// publish --wait prints the result and exits non-zero for a failed one; offsets prints the
// connector's offsets in the GET /connectors/{name}/offsets shape. Both against the embedded
// broker and an agent running in-process.
func TestPublishAndOffsets(t *testing.T) {
	startEmbeddedAgent(t)

	publishBody := func(body string) (int, string, string) {
		var out, errOut bytes.Buffer
		// The agent creates the request topic when it starts; retry until it exists.
		for attempt := 0; ; attempt++ {
			out.Reset()
			errOut.Reset()
			code := run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(body), &out, &errOut)
			if code != 1 || out.Len() > 0 || attempt >= 50 {
				return code, out.String(), errOut.String()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	code, out, errOut := publishBody(demoRequest)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"type": "offsetagent.connector.create.succeeded"`)
	require.Contains(t, out, `"initial_offsets_response": "The offsets for this connector have been altered successfully"`)

	code, out, _ = publishBody(demoInvalidRequest)
	require.Equal(t, 1, code, "a failed result exits non-zero")
	require.Contains(t, out, `"failed_step": "validate_offsets"`)

	// A structured-mode request whose data is not JSON (it goes in data_base64) is answered with
	// its own id, so --wait finds the result instead of timing out; the result does not quote it.
	var sout, serr bytes.Buffer
	code = run([]string{"publish", "--wait", "--timeout", "20s", "--mode", "structured", "-"},
		strings.NewReader(`{"name":"x","config":{"p":"pw-Zq8" "q":1}}`), &sout, &serr)
	require.Equal(t, 1, code, serr.String())
	require.Contains(t, sout.String(), `"failed_step": "decode_request"`)
	require.NotContains(t, sout.String(), "Zq8")

	var offs, errBuf bytes.Buffer
	require.Equal(t, 0, run([]string{"offsets", "file-src-1"}, strings.NewReader(""), &offs, &errBuf), errBuf.String())
	require.JSONEq(t, `{"offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":30}}]}`, offs.String())

	// The runbooks' "error codes of recent failures": the latest failed results, oldest first.
	results := func(args ...string) []resultLine {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(append([]string{"results"}, args...), strings.NewReader(""), &out, &errOut), errOut.String())
		var lines []resultLine
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r resultLine
			require.NoError(t, json.Unmarshal([]byte(l), &r), l)
			lines = append(lines, r)
		}
		return lines
	}
	steps := func(lines []resultLine) (out []string) {
		for _, l := range lines {
			out = append(out, fmt.Sprintf("%s %d", l.FailedStep, l.ErrorCode))
		}
		return out
	}
	failed := results("--failed", "-n", "20")
	require.Equal(t, []string{"validate_offsets 500", "decode_request 400"}, steps(failed))
	require.Equal(t, "/offsetagent/cli", failed[0].Source)
	require.NotEmpty(t, failed[0].Message)
	require.NotEmpty(t, failed[0].RequestID)
	require.Equal(t, []string{"decode_request 400"}, steps(results("--failed", "-n", "1")))
	require.Len(t, results(), 3, "every result without --failed")
}

// startEmbeddedAgent starts the embedded broker and `offsetagent run` against it, in-process,
// with the environment pointing at them; it returns the broker's address.
func startEmbeddedAgent(t *testing.T) string {
	t.Helper()
	b, err := startEmbedded("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	t.Setenv("OFFSETAGENT_BROKERS", b.Addr())
	t.Setenv("OFFSETAGENT_CREATE_CONNECT_TOPICS", "true")
	t.Setenv("OFFSETAGENT_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("OFFSETAGENT_LOG_LEVEL", "error")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runAgentForTest(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b.Addr()
}

// runAgentForTest runs `offsetagent run` until ctx ends.
func runAgentForTest(ctx context.Context) int {
	cfg, err := loadConfig(ctx)
	if err != nil {
		return 2
	}
	reg := newRegistry()
	a, err := agent.New(cfg, agent.Options{Registry: reg, Gatherer: reg})
	if err != nil {
		return 2
	}
	if err := a.Run(ctx); err != nil {
		return 1
	}
	return 0
}
