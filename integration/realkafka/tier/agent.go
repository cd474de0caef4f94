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
	Env []string
	Log string
	// HTTPAddr serves its /readyz.
	HTTPAddr string
	bin      string
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error // set before done is closed
}

// AgentVars are the variables of an agent named name on the Env's brokers with its own
// request, result and intent topics and group; the Connect topics are the caller's to add.
func (e *Env) AgentVars(name string) map[string]string {
	p := e.Cfg.NamePrefix + "-" + e.Run + "-" + name
	return map[string]string{
		"OFFSETAGENT_BROKERS":                  strings.Join(e.Brokers, ","),
		"OFFSETAGENT_REQUEST_TOPIC":            p + "-requests",
		"OFFSETAGENT_RESULT_TOPIC":             p + "-results",
		"OFFSETAGENT_INTENT_TOPIC":             p + "-intents",
		"OFFSETAGENT_GROUP_ID":                 p,
		"OFFSETAGENT_REQUEST_TOPIC_PARTITIONS": "3",
	}
}

// StartAgent runs the agent binary with AgentVars(name) plus extra (which names the Connect
// topics, and may name other brokers), and returns once /readyz answers 200. It is stopped
// after the tests.
func (e *Env) StartAgent(ctx context.Context, name string, extra map[string]string) (*Agent, error) {
	vars := e.AgentVars(name)
	for k, v := range extra {
		vars[k] = v
	}
	a, err := e.LaunchAgent(name, vars, false)
	if err != nil {
		return nil, err
	}
	if err := a.WaitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	return a, nil
}

// StartAgentOn starts an agent (StartAgent) on broker writing to the Connect cluster n's topics.
func (e *Env) StartAgentOn(ctx context.Context, name, broker string, n Connect) (*Agent, error) {
	return e.StartAgent(ctx, name, map[string]string{
		"OFFSETAGENT_BROKERS":       broker,
		"OFFSETAGENT_CONFIG_TOPIC":  n.Config,
		"OFFSETAGENT_OFFSETS_TOPIC": n.Offsets,
	})
}

// LaunchAgent runs the agent binary as `offsetagent run` with vars over the tests' settings (a
// free HTTP address, text logs at debug level, a 10 s shutdown timeout) and returns at once
// (see WaitReady). With clean, the test's own OFFSETAGENT_ variables are left out of its
// environment (CleanEnv). It waits for the agent build first. It is stopped after the tests; a test that starts it for itself may
// stop it sooner (Stop).
func (e *Env) LaunchAgent(name string, vars map[string]string, clean bool) (*Agent, error) {
	if err := e.awaitBuild(); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpAddr := l.Addr().String()
	l.Close()
	all := map[string]string{
		"OFFSETAGENT_HTTP_ADDR":        httpAddr,
		"OFFSETAGENT_LOG_FORMAT":       "text",
		"OFFSETAGENT_LOG_LEVEL":        "debug",
		"OFFSETAGENT_SHUTDOWN_TIMEOUT": "10s",
	}
	for k, v := range vars {
		all[k] = v
	}
	env := os.Environ()
	if clean {
		env = CleanEnv()
	}
	for k, v := range all {
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
	a := &Agent{Name: name, Env: env, Log: logPath, HTTPAddr: all["OFFSETAGENT_HTTP_ADDR"], bin: e.AgentBin, cmd: cmd, done: make(chan struct{})}
	go func() { a.exitErr = cmd.Wait(); f.Close(); close(a.done) }()
	e.AtExit(a.Stop)
	return a, nil
}

// CleanEnv is the test's environment without any OFFSETAGENT_ variable.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OFFSETAGENT_") {
			env = append(env, kv)
		}
	}
	return env
}

// WaitReady waits up to d for /readyz 200; it fails when the agent exits first or ctx ends.
func (a *Agent) WaitReady(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if status, _ := a.Readyz(); status == http.StatusOK {
			return nil
		}
		select {
		case <-a.done:
			return fmt.Errorf("%s exited before it was ready: %v\n%s", a.Name, a.exitErr, a.LogText())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (log: %s)", a.Name, ctx.Err(), a.Log)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within %s (log: %s):\n%s", a.Name, d, a.Log, a.LogText())
}

// Readyz returns /readyz's status and body, or 0 when the agent does not answer.
func (a *Agent) Readyz() (int, string) {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + a.HTTPAddr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// Done is closed when the process has exited; ExitErr then says how.
func (a *Agent) Done() <-chan struct{} { return a.done }

// ExitErr is the process's exit error, once Done is closed.
func (a *Agent) ExitErr() error {
	<-a.done
	return a.exitErr
}

// LogText is the agent's log, with the text handler's \" unescaped so that messages read as
// written.
func (a *Agent) LogText() string {
	b, _ := os.ReadFile(a.Log)
	return strings.ReplaceAll(string(b), `\"`, `"`)
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

// Publish sends a request through `offsetagent publish --wait` in the agent's environment and
// returns its result.
func (a *Agent) Publish(t testing.TB, body any) Result {
	t.Helper()
	return publish(t, a.bin, a.Env, 90*time.Second, body, "\nagent log: "+a.Log)
}

// PublishAs sends a request through `offsetagent publish --wait --timeout timeout` in env (an
// agent's, or another principal's) and returns its result.
func (e *Env) PublishAs(t testing.TB, env []string, timeout time.Duration, body any) Result {
	t.Helper()
	return publish(t, e.AgentBin, env, timeout, body, "")
}

func publish(t testing.TB, bin string, env []string, timeout time.Duration, body any, logNote string) Result {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(body)
		require.NoError(t, err)
	}
	cmd := exec.Command(bin, "publish", "--wait", "--timeout", timeout.String(), "-")
	cmd.Env, cmd.Stdin = env, bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "publish: %v\nstdout: %s\nstderr: %s%s", err, stdout.Bytes(), stderr.Bytes(), logNote)
	return res
}

// Offsetagent runs the agent binary with args in env, requires it to succeed and returns its
// stdout.
func (e *Env) Offsetagent(t testing.TB, ctx context.Context, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, e.AgentBin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%v\nstdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
	return stdout.String()
}

// Create publishes a creation request and requires it to succeed.
func (a *Agent) Create(t testing.TB, body any) Result {
	t.Helper()
	res := a.Publish(t, body)
	require.Equal(t, TypeSucceeded, res.Type, "the request failed at %s: %d %s", res.Data.FailedStep, res.Data.ErrorCode, res.Data.Message)
	return res
}
