package realkafka_test

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
)

// agentProc is an `offsetagent run` process.
type agentProc struct {
	name string
	env  []string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startAgent runs the agent binary with its own request, result and intent topics plus extra
// (which names the Connect topics), and returns once /readyz answers 200. It is stopped after
// the tests.
func startAgent(ctx context.Context, name string, extra map[string]string) (*agentProc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpAddr := l.Addr().String()
	l.Close()
	p := "rk-" + peers.run + "-" + name
	vars := map[string]string{
		"OFFSETAGENT_BROKERS":                  strings.Join(peers.brokers, ","),
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
	logPath := filepath.Join(peers.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(peers.agentBin, "run")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	a := &agentProc{name: name, env: env, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(a.done) }()
	atExit(a.stop)
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

func (a *agentProc) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
	}
}

// result is a result event as `offsetagent publish --wait` prints it.
type result struct {
	Type    string        `json:"type"`
	Subject string        `json:"subject"`
	Data    events.Result `json:"data"`
}

const (
	typeSucceeded = events.TypeCreateSucceeded
	typeFailed    = events.TypeCreateFailed
)

// publish sends a request through `offsetagent publish --wait` and returns its result.
func (a *agentProc) publish(t *testing.T, body any) result {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(body)
		require.NoError(t, err)
	}
	cmd := exec.Command(peers.agentBin, "publish", "--wait", "--timeout", "90s", "-")
	cmd.Env, cmd.Stdin = a.env, bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "publish: %v\nstdout: %s\nstderr: %s\nagent log: %s", err, stdout.Bytes(), stderr.Bytes(), a.log)
	return res
}

// create publishes a creation request and requires it to succeed.
func (a *agentProc) create(t *testing.T, body any) result {
	t.Helper()
	res := a.publish(t, body)
	require.Equal(t, typeSucceeded, res.Type, "the request failed at %s: %d %s", res.Data.FailedStep, res.Data.ErrorCode, res.Data.Message)
	return res
}
