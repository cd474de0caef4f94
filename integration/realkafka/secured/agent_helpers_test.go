package secured_test

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

// agentNames are one agent's topics and group.
type agentNames struct{ requests, results, intents, group string }

func newAgentNames(prefix string) agentNames {
	p := unique(prefix)
	return agentNames{requests: p + "-requests", results: p + "-results", intents: p + "-intents", group: p}
}

// createAgentTopics creates the agent's three topics as docs/operations.md's "Topics the agent
// owns" says, so that the agent needs no Create ACL.
func (c *cluster) createAgentTopics(t *testing.T, n agentNames) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.createTopic(ctx, n.requests, 3, map[string]string{"max.message.bytes": "17825792"}))
	require.NoError(t, c.createTopic(ctx, n.results, 3, nil))
	require.NoError(t, c.createTopic(ctx, n.intents, 3, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "67108864"}))
}

// agentProc is an `offsetagent run` process.
type agentProc struct {
	name     string
	env      []string
	httpAddr string
	cmd      *exec.Cmd
	log      string
	done     chan struct{}
	exitErr  error // set before done is closed
}

// agentEnv is the agent's environment for user on cluster c with names n, writing to c's
// Connect cluster.
func (c *cluster) agentEnv(n agentNames, user string) map[string]string {
	return map[string]string{
		"OFFSETAGENT_BROKERS":                  c.broker.Addr,
		"OFFSETAGENT_REQUEST_TOPIC":            n.requests,
		"OFFSETAGENT_RESULT_TOPIC":             n.results,
		"OFFSETAGENT_INTENT_TOPIC":             n.intents,
		"OFFSETAGENT_GROUP_ID":                 n.group,
		"OFFSETAGENT_CONFIG_TOPIC":             c.connect.config,
		"OFFSETAGENT_OFFSETS_TOPIC":            c.connect.offsets,
		"OFFSETAGENT_REQUEST_TOPIC_PARTITIONS": "3",
		"OFFSETAGENT_SASL_MECHANISM":           "SCRAM-SHA-512",
		"OFFSETAGENT_SASL_USERNAME":            user,
		"OFFSETAGENT_SASL_PASSWORD":            c.users[user],
		"OFFSETAGENT_TLS_ENABLED":              "true",
		"OFFSETAGENT_TLS_CA_FILE":              c.ca.File,
	}
}

// startAgentProc runs the agent binary with vars (and a few test settings) without waiting
// for it; it is stopped at the end of the test.
func startAgentProc(t *testing.T, name string, vars map[string]string) *agentProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	httpAddr := l.Addr().String()
	l.Close()
	all := map[string]string{
		"OFFSETAGENT_HTTP_ADDR":        httpAddr,
		"OFFSETAGENT_LOG_FORMAT":       "text",
		"OFFSETAGENT_LOG_LEVEL":        "info",
		"OFFSETAGENT_SHUTDOWN_TIMEOUT": "10s",
	}
	for k, v := range vars {
		all[k] = v
	}
	env := cleanEnv()
	for k, v := range all {
		env = append(env, k+"="+v)
	}
	logPath := filepath.Join(peers.dir, name+".log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(peers.agentBin, "run")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	a := &agentProc{name: name, env: env, httpAddr: httpAddr, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { a.exitErr = cmd.Wait(); f.Close(); close(a.done) }()
	t.Cleanup(a.stop)
	return a
}

// cleanEnv is the test's environment without any OFFSETAGENT_ variable.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OFFSETAGENT_") {
			env = append(env, kv)
		}
	}
	return env
}

// readyz returns /readyz's status and body, or 0 when the agent does not answer.
func (a *agentProc) readyz() (int, string) {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + a.httpAddr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// waitReady waits up to 90 s for /readyz 200.
func (a *agentProc) waitReady(t *testing.T) {
	t.Helper()
	a.waitReadyWithin(t, 90*time.Second)
}

// waitReadyWithin waits up to d for /readyz 200.
func (a *agentProc) waitReadyWithin(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if status, _ := a.readyz(); status == http.StatusOK {
			return
		}
		select {
		case <-a.done:
			t.Fatalf("%s exited before it was ready: %v\n%s", a.name, a.exitErr, a.logText())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s not ready within %s:\n%s", a.name, d, a.logText())
}

// logText is the agent's log, with the text handler's \" unescaped so that messages read as
// written.
func (a *agentProc) logText() string {
	b, _ := os.ReadFile(a.log)
	return strings.ReplaceAll(string(b), `\"`, `"`)
}

func (a *agentProc) stop() {
	realkafka.StopProcessGroup(a.cmd, a.done, 30*time.Second)
}

// result is a result event as `offsetagent publish --wait` prints it.
type result struct {
	Type    string        `json:"type"`
	Subject string        `json:"subject"`
	Data    events.Result `json:"data"`
}

// publish sends a request for the agent names n through `offsetagent publish --wait` as the
// fixture's admin (the agent's own principal may be missing an ACL), and returns its result.
func (c *cluster) publish(t *testing.T, n agentNames, body any) result {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	env := append(cleanEnv(),
		"OFFSETAGENT_BROKERS="+c.broker.InternalAddr,
		"OFFSETAGENT_REQUEST_TOPIC="+n.requests,
		"OFFSETAGENT_RESULT_TOPIC="+n.results,
		"OFFSETAGENT_TLS_ENABLED=true",
		"OFFSETAGENT_TLS_CA_FILE="+c.ca.File,
		"OFFSETAGENT_TLS_CERT_FILE="+c.adminCert.CertFile,
		"OFFSETAGENT_TLS_KEY_FILE="+c.adminCert.KeyFile,
	)
	cmd := exec.Command(peers.agentBin, "publish", "--wait", "--timeout", "60s", "-")
	cmd.Env, cmd.Stdin = env, bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var res result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "publish: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	return res
}

// rest calls the worker's REST API (HTTPS, basic auth) and returns the status and the body.
func rest(t *testing.T, w *realkafka.Worker, method, path string, body any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, resp, err := w.Do(ctx, method, path, body)
	require.NoError(t, err, "%s %s", method, path)
	return status, string(resp)
}

// restOK calls the worker's REST API and requires a 2xx answer.
func restOK(t *testing.T, w *realkafka.Worker, method, path string, body any) string {
	t.Helper()
	status, resp := rest(t, w, method, path, body)
	require.True(t, status/100 == 2, "%s %s: %d %s", method, path, status, resp)
	return resp
}

// waitState waits until the worker reports the connector (and its tasks, if RUNNING) in state.
func waitState(t *testing.T, w *realkafka.Worker, name, state string) {
	t.Helper()
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		status, body := rest(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)
		last = body
		if status == http.StatusOK {
			var s struct {
				Connector struct{ State string }   `json:"connector"`
				Tasks     []struct{ State string } `json:"tasks"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &s))
			require.NotEqual(t, "FAILED", s.Connector.State, body)
			ok := s.Connector.State == state
			if state == "RUNNING" {
				ok = ok && len(s.Tasks) > 0
			}
			for _, tk := range s.Tasks {
				require.NotEqual(t, "FAILED", tk.State, body)
				ok = ok && tk.State == state
			}
			if ok {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("connector %s never reached %s; last status: %s", name, state, last)
}

// offsetsOf is GET /connectors/NAME/offsets with its entries' JSON sorted.
func offsetsOf(t *testing.T, w *realkafka.Worker, name string) string {
	t.Helper()
	var v struct {
		Offsets []any `json:"offsets"`
	}
	body := restOK(t, w, http.MethodGet, "/connectors/"+name+"/offsets", nil)
	require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	b, err := json.Marshal(v.Offsets)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(peers.dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func lines(prefix string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s-%02d\n", prefix, i)
	}
	return b.String()
}
