package tier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// Agent is an `offsetagent run` process.
type Agent struct {
	Name string
	// Env is the process's environment: `offsetagent publish` and `migrate` run with it.
	Env  []string
	Log  string
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartAgent runs the agent binary with its own request, result and intent topics plus extra
// (which names the Connect topics), and returns once /readyz answers 200. It is stopped after
// the tests.
func (e *Env) StartAgent(ctx context.Context, name string, extra map[string]string) (*Agent, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpAddr := l.Addr().String()
	l.Close()
	p := "rk-" + e.Run + "-" + name
	vars := map[string]string{
		"OFFSETAGENT_BROKERS":                  strings.Join(e.Brokers, ","),
		"OFFSETAGENT_REQUEST_TOPIC":            p + "-requests",
		"OFFSETAGENT_RESULT_TOPIC":             p + "-results",
		"OFFSETAGENT_INTENT_TOPIC":             p + "-intents",
		"OFFSETAGENT_GROUP_ID":                 p,
		"OFFSETAGENT_REQUEST_TOPIC_PARTITIONS": "3",
		"OFFSETAGENT_HTTP_ADDR":                httpAddr,
		"OFFSETAGENT_LOG_FORMAT":               "text",
		"OFFSETAGENT_LOG_LEVEL":                "debug",
		"OFFSETAGENT_SHUTDOWN_TIMEOUT":         "10s",
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := os.Environ()
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	logPath := filepath.Join(e.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.AgentBin, "run")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	a := &Agent{Name: name, Env: env, Log: logPath, bin: e.AgentBin, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(a.done) }()
	e.AtExit(a.Stop)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case <-a.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s exited before it was ready:\n%s", name, b)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s not ready: %w (log: %s)", name, ctx.Err(), logPath)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not ready within 2 minutes (log: %s)", name, logPath)
		}
	}
}

// Stop stops the agent (SIGTERM, then SIGKILL of its process group after 30 s). It is
// idempotent.
func (a *Agent) Stop() {
	realkafka.StopProcessGroup(a.cmd, a.done, 30*time.Second)
}

// Result is a result event as `offsetagent publish --wait` prints it.
type Result struct {
	Type    string        `json:"type"`
	Subject string        `json:"subject"`
	Data    events.Result `json:"data"`
}

const (
	TypeSucceeded = events.TypeCreateSucceeded
	TypeFailed    = events.TypeCreateFailed
)

// Publish sends a request through `offsetagent publish --wait` and returns its result.
func (a *Agent) Publish(t testing.TB, body any) Result {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(body)
		require.NoError(t, err)
	}
	cmd := exec.Command(a.bin, "publish", "--wait", "--timeout", "90s", "-")
	cmd.Env, cmd.Stdin = a.Env, bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "publish: %v\nstdout: %s\nstderr: %s\nagent log: %s", err, stdout.Bytes(), stderr.Bytes(), a.Log)
	return res
}

// Create publishes a creation request and requires it to succeed.
func (a *Agent) Create(t testing.TB, body any) Result {
	t.Helper()
	res := a.Publish(t, body)
	require.Equal(t, TypeSucceeded, res.Type, "the request failed at %s: %d %s", res.Data.FailedStep, res.Data.ErrorCode, res.Data.Message)
	return res
}
