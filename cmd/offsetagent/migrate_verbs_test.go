package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/plan"
)

// verbsFixture is A and B, two embedded brokers: A holds connectors written by an agent
// (src-1 with a secret, src-2, src-3, and src-a whose settings name A's brokers), and an
// agent runs on B.
type verbsFixture struct {
	a, b     string
	dir      string
	stopB    func()
	startB   func()
	agentRun bool
}

func (v *verbsFixture) cmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func fileSource(name string, extra ...string) string {
	cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": name + ".txt",
		"topic": name + "-topic", "tasks.max": "1"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	b, _ := json.Marshal(map[string]any{"name": name, "config": cfg,
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"filename": name + ".txt"}, "offset": map[string]any{"position": 30}}}})
	return string(b)
}

func newVerbsFixture(t *testing.T) *verbsFixture {
	a, err := startEmbedded("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(a.Close)
	b, err := startEmbedded("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	t.Setenv("OFFSETAGENT_CREATE_CONNECT_TOPICS", "true")
	t.Setenv("OFFSETAGENT_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("OFFSETAGENT_LOG_LEVEL", "error")
	v := &verbsFixture{a: a.Addr(), b: b.Addr(), dir: t.TempDir()}
	startAgent := func(brokers string) func() {
		t.Setenv("OFFSETAGENT_BROKERS", brokers)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- runAgentForTest(ctx) }()
		return func() { cancel(); <-done }
	}
	stopA := startAgent(v.a)
	for _, body := range []string{fileSource("src-1", "my.password", "pw-s3cret-1"), fileSource("src-2"), fileSource("src-3"),
		fileSource("src-a", "producer.override.bootstrap.servers", v.a)} {
		for attempt := 0; ; attempt++ { // the agent creates its topics as it starts
			var errOut bytes.Buffer
			code := run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(body), &bytes.Buffer{}, &errOut)
			if code == 0 || attempt >= 50 {
				require.Equal(t, 0, code, errOut.String())
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	stopA()
	v.startB = func() { v.stopB = startAgent(v.b); v.agentRun = true }
	v.startB()
	t.Cleanup(func() {
		if v.agentRun {
			v.stopB()
		}
	})
	// Wait until B's agent has created its topics: a plan of A's connectors then answers.
	for attempt := 0; ; attempt++ {
		code, _, stderr := v.cmd(v.planArgs(filepath.Join(v.dir, "probe.yaml"))...)
		if code != 2 || attempt >= 50 {
			require.NotEqual(t, 2, code, stderr)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return v
}

// planArgs are the arguments of migrate plan of src-1..3 into PLAN.
func (v *verbsFixture) planArgs(path string, extra ...string) []string {
	return append([]string{"migrate", "plan", "-o", path, "--from-brokers", v.a, "--to-brokers", v.b, "--include", "src-[0-9]",
		"--rename", "src-(.*)=b-$1"}, extra...)
}

// writeConfigOnA writes connector name's config record to A's config topic, as Connect does
// on PUT /connectors/{name}/config.
func (v *verbsFixture) writeConfigOnA(t *testing.T, name string, cfg map[string]string) {
	t.Helper()
	cfg["name"] = name
	value, err := json.Marshal(map[string]any{"properties": cfg})
	require.NoError(t, err)
	w := &kafka.Writer{Addr: kafka.TCP(v.a), BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-configs", Key: []byte("connector-" + name), Value: value}))
}

type reportJSON struct {
	MigrationID string `json:"migration_id"`
	Connectors  []struct {
		Name       string `json:"name"`
		Outcome    string `json:"outcome"`
		FailedStep string `json:"failed_step"`
		Message    string `json:"message"`
		RequestID  string `json:"request_id"`
	} `json:"connectors"`
}

func readReport(t *testing.T, path string) map[string]struct{ outcome, step, message, request string } {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep reportJSON
	require.NoError(t, json.Unmarshal(data, &rep))
	out := map[string]struct{ outcome, step, message, request string }{}
	for _, c := range rep.Connectors {
		out[c.Name] = struct{ outcome, step, message, request string }{c.Outcome, c.FailedStep, c.Message, c.RequestID}
	}
	return out
}

// migrate plan writes the plan and exits 0 when nothing is refused, 1 when a connector is
// refused, 2 (writing nothing) when B cannot be reached or a flag is wrong.
func TestPlanExitStatus(t *testing.T) {
	v := newVerbsFixture(t)
	path := filepath.Join(v.dir, "plan.yaml")
	code, out, stderr := v.cmd(v.planArgs(path, "--set", "my.password=pw-s3cret-new")...)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "to move, 0 refused")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	p, err := plan.Read(path)
	require.NoError(t, err)
	require.Len(t, p.Connectors, 3)
	require.Equal(t, []plan.SetEdit{{Key: "my.password", ValueAtApply: true}}, p.Selection.Set)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(data), "pw-s3cret")
	for _, fc := range p.Connectors {
		require.Empty(t, fc.Refused, fc.Name)
		require.NotNil(t, fc.AgentPlan, fc.Name)
		require.Equal(t, "planned", fc.AgentPlan.Outcome, fc.Name)
		require.False(t, *fc.ExistsOnB, fc.Name)
	}

	refused := filepath.Join(v.dir, "refused.yaml")
	code, out, stderr = v.cmd("migrate", "plan", "-o", refused, "--from-brokers", v.a, "--to-brokers", v.b)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, out, "1 refused")
	p, err = plan.Read(refused)
	require.NoError(t, err)
	for _, fc := range p.Connectors {
		if fc.Name == "src-a" {
			require.Contains(t, fc.Refused, "producer.override.bootstrap.servers")
		}
	}

	gone := filepath.Join(v.dir, "unreachable.yaml")
	code, _, stderr = v.cmd("migrate", "plan", "-o", gone, "--from-brokers", v.a, "--to-brokers", kafkatest.ClosedAddr(t), "--connect-timeout", "2s")
	require.Equal(t, 2, code, stderr)
	require.NoFileExists(t, gone)
	code, _, stderr = v.cmd("migrate", "plan", "--from-brokers", v.a, "--to-brokers", v.b)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "-o PLAN is required")
	code, _, stderr = v.cmd("migrate", "plan", "-o", gone, "--from-brokers", v.a, "--to-brokers", v.b, "--grace", "1s")
	require.Equal(t, 2, code, "plan has no --grace (apply's)")
	require.Contains(t, stderr, "flag provided but not defined: -grace")
	require.NoFileExists(t, gone)
}
