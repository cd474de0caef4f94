package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// verbsFixture is A and B, two embedded brokers: A holds connectors written by an agent
// (src-1 with a secret, src-2, src-3, src-4, and src-a whose settings name A's brokers), and
// an agent runs on B.
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
	a, b := twoClusters(t)
	v := &verbsFixture{a: a, b: b, dir: t.TempDir()}
	stopA := startTestAgent(t, v.a)
	for _, body := range []string{fileSource("src-1", "my.password", "pw-s3cret-1"), fileSource("src-2"), fileSource("src-3"), fileSource("src-4"),
		fileSource("src-a", "producer.override.bootstrap.servers", v.a)} {
		publishUntilAccepted(t, body)
	}
	stopA()
	v.startB = func() { v.stopB = startTestAgent(t, v.b); v.agentRun = true }
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

// planArgs are the arguments of migrate plan of src-1..4 into PLAN.
func (v *verbsFixture) planArgs(path string, extra ...string) []string {
	return append([]string{"migrate", "plan", "-o", path, "--from-brokers", v.a, "--to-brokers", v.b, "--include", "src-[0-9]",
		"--rename", "src-(.*)=b-$1"}, extra...)
}

// writeConfig writes connector name's config record to the config topic of the cluster at
// addr, without a request mark, as Connect does on PUT /connectors/{name}/config.
func writeConfig(t *testing.T, addr, name string, cfg map[string]string) {
	t.Helper()
	cfg["name"] = name
	value, err := json.Marshal(map[string]any{"properties": cfg})
	require.NoError(t, err)
	w := &kafka.Writer{Addr: kafka.TCP(addr), BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-configs", Key: []byte("connector-" + name), Value: value}))
}

type reportJSON struct {
	MigrationID string `json:"migration_id"`
	Connectors  []struct {
		Name       string   `json:"name"`
		Outcome    string   `json:"outcome"`
		FailedStep string   `json:"failed_step"`
		Message    string   `json:"message"`
		RequestID  string   `json:"request_id"`
		Warnings   []string `json:"warnings"`
	} `json:"connectors"`
}

// reported is a connector of a report: its outcome, failed step, message, request id and
// warnings (one a line).
type reported struct{ outcome, step, message, request, warnings string }

func readReport(t *testing.T, path string) map[string]reported {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep reportJSON
	require.NoError(t, json.Unmarshal(data, &rep))
	out := map[string]reported{}
	for _, c := range rep.Connectors {
		out[c.Name] = reported{c.Outcome, c.FailedStep, c.Message, c.RequestID, strings.Join(c.Warnings, "\n")}
	}
	return out
}

// migrate plan writes the plan and exits 0 when nothing is refused, 1 when a connector is
// refused, 1 (writing nothing) when the selection matches nothing, 2 (writing nothing) when B
// cannot be reached or a flag is wrong.
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
	require.Len(t, p.Connectors, 4)
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

	// A selection that matches nothing: 1, as the help and the runbook say, and no plan.
	none := filepath.Join(v.dir, "none.yaml")
	code, _, stderr = v.cmd("migrate", "plan", "-o", none, "--from-brokers", v.a, "--to-brokers", v.b, "--include", "nothing-.*")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "no connector of A matches the selection")
	require.NoFileExists(t, none)

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

// commitOnB writes, for each of names, a commit of its FileStream source on B past the
// offset placed (position 30), as B's worker would once it runs the connector.
func (v *verbsFixture) commitOnB(t *testing.T, names ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(v.b), Balancer: kafka.Murmur2Balancer{Consistent: true}, BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range names {
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
			Key: []byte(`["b-` + n + `",{"filename":"src-` + n + `.txt"}]`), Value: []byte(`{"position":42}`)}))
	}
}

// A plan applied unchanged moves its connectors under the plan's migration id, with the
// secret --set value given at apply, writes the cutover report beside the plan; applied
// again it continues the same migration (nothing published twice); migrate verify REPORT
// and the old spelling verify it.
func TestApplyPlanUnchanged(t *testing.T) {
	v := newVerbsFixture(t)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd(v.planArgs(path, "--set", "my.password=pw-s3cret-new")...)
	require.Equal(t, 0, code, stderr)
	p, err := plan.Read(path)
	require.NoError(t, err)

	// The secret --set's value is given again at apply: without it, nothing starts.
	report := filepath.Join(v.dir, "report.json")
	code, _, stderr = v.cmd("migrate", "apply", path, "--report", report)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "give --set my.password=VALUE")
	require.NoFileExists(t, report)
	// Nor does an edit the plan does not hold.
	code, _, stderr = v.cmd("migrate", "apply", path, "--set", "my.password=pw-s3cret-new", "--set", "tasks.max=9")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--set tasks.max: the plan has no secret edit of that key")

	apply := []string{"migrate", "apply", path, "--set", "my.password=pw-s3cret-new", "--report", report, "--verify-timeout", "300ms"}
	code, out, stderr := v.cmd(apply...)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "4 partitions of 4 connectors: 0 verified, 4 waiting")
	got := readReport(t, report)
	for _, n := range []string{"1", "2", "3", "4"} {
		require.Equal(t, "succeeded", got["src-"+n].outcome, n)
		require.Equal(t, p.MigrationID+"/b-"+n+"/1", got["src-"+n].request, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	onB, err := offsetstore.ReadConnectorConfigs(ctx, kafkaio.Options{Brokers: []string{v.b}}, "connect-configs")
	require.NoError(t, err)
	require.Equal(t, "pw-s3cret-new", onB["b-1"]["my.password"])
	cutoverPath := path + ".cutover.json"
	st, err := os.Stat(cutoverPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	// What the way back needs of the migration is in it.
	var cut struct {
		FromClusterID string `json:"from_cluster_id"`
		StateTopic    string `json:"state_topic"`
		Connectors    []struct {
			Name      string `json:"name"`
			StateOnA  string `json:"state_on_a"`
			RequestID string `json:"request_id"`
		} `json:"connectors"`
	}
	data, err := os.ReadFile(cutoverPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cut))
	require.Equal(t, p.From.KafkaClusterID, cut.FromClusterID)
	require.Empty(t, cut.StateTopic, "without --stop-source no state was recorded")
	require.Len(t, cut.Connectors, 4)
	for _, cc := range cut.Connectors {
		require.Equal(t, "RUNNING", cc.StateOnA, cc.Name)
		require.Equal(t, got[cc.Name].request, cc.RequestID, cc.Name)
	}

	// Applied again: the same migration, each connector already created by its request.
	code, _, stderr = v.cmd(apply...)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "drift")
	got = readReport(t, report)
	for _, n := range []string{"1", "2", "3", "4"} {
		require.Equal(t, "succeeded", got["src-"+n].outcome, n)
		require.Equal(t, p.MigrationID+"/b-"+n+"/1", got["src-"+n].request, n)
	}

	// migrate verify REPORT: B's brokers are the report's.
	code, out, stderr = v.cmd("migrate", "verify", cutoverPath, "--verify-timeout", "300ms")
	require.Equal(t, exitWaiting, code, stderr)
	require.Contains(t, out, "4 waiting")
	v.commitOnB(t, "1", "2", "3", "4")
	code, out, stderr = v.cmd("migrate", "verify", "--verify-timeout", "300ms", cutoverPath)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "4 verified, 0 waiting")
	data, err = os.ReadFile(cutoverPath)
	require.NoError(t, err)
	require.Contains(t, string(data), `"verdict": "verified"`)
	// The old spelling: the same, and a note naming the new one.
	code, out, stderr = v.cmd("migrate", "--verify", "--cutover-report", cutoverPath, "--to-brokers", v.b, "--verify-timeout", "300ms")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "4 verified, 0 waiting")
	require.Contains(t, stderr, "offsetagent migrate verify "+cutoverPath)
	code, _, stderr = v.cmd("migrate", "verify", "--verify-timeout", "300ms")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "the cutover report is required")
}

// Apply refuses, before stopping or publishing anything of it, each connector that drifted
// since the plan, naming what changed: its config on A (a setting; a secret only by its
// record), its presence on B (created by another writer). The others go on; applied again,
// the same.
func TestApplyRefusesDriftOthersGoOn(t *testing.T) {
	v := newVerbsFixture(t)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd(v.planArgs(path)...)
	require.Equal(t, 0, code, stderr)

	fileCfg := func(n, topic string, extra ...string) map[string]string {
		cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "src-" + n + ".txt",
			"topic": topic, "tasks.max": "1"}
		for i := 0; i+1 < len(extra); i += 2 {
			cfg[extra[i]] = extra[i+1]
		}
		return cfg
	}
	writeConfig(t, v.a, "src-1", fileCfg("1", "src-1-topic", "my.password", "pw-s3cret-rotated"))
	writeConfig(t, v.a, "src-2", fileCfg("2", "other-topic"))
	writeConfig(t, v.b, "b-3", fileCfg("3", "src-3-topic"))

	report := filepath.Join(v.dir, "report.json")
	apply := []string{"migrate", "apply", path, "--report", report, "--verify-timeout", "300ms"}
	for range 2 { // applied again: the same findings, src-4 not published again
		code, out, stderr := v.cmd(apply...)
		require.Equal(t, 1, code, "%s\n%s", out, stderr)
		got := readReport(t, report)
		require.Equal(t, "succeeded", got["src-4"].outcome)
		require.True(t, strings.HasSuffix(got["src-4"].request, "/b-4/1"), got["src-4"].request)
		for _, n := range []string{"1", "2", "3"} {
			require.Equal(t, "skipped", got["src-"+n].outcome, n)
			require.Equal(t, "drift", got["src-"+n].step, n)
			require.Empty(t, got["src-"+n].request, n)
		}
		require.Contains(t, got["src-1"].message, "config_on_a: its config on A was written again since the plan")
		require.Contains(t, got["src-1"].message, "a secret changed or was rewritten, not shown")
		require.Contains(t, got["src-2"].message, `config_on_a: its config on A changed since the plan: topic "src-2-topic" -> "other-topic"`)
		require.Contains(t, got["src-3"].message, "exists_on_b: B has a connector b-3 now and the plan saw none: created by a writer without a request mark")
		require.Contains(t, stderr, "drift since the plan: src-2: config_on_a")
		data, err := os.ReadFile(report)
		require.NoError(t, err)
		require.NotContains(t, string(data)+out+stderr, "pw-s3cret")
	}
	// Neither drifted connector was created on B; B's own b-3 is as its writer left it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	onB, err := offsetstore.ReadConnectorConfigs(ctx, kafkaio.Options{Brokers: []string{v.b}}, "connect-configs")
	require.NoError(t, err)
	require.NotContains(t, onB, "b-1")
	require.NotContains(t, onB, "b-2")
	require.Contains(t, onB, "b-4")
	require.Equal(t, "src-3-topic", onB["b-3"]["topic"])
}

// A plan of another A: the whole plan is refused (exit 2) before anything is read of its
// connectors.
func TestApplyRefusesAnotherCluster(t *testing.T) {
	v := newVerbsFixture(t)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd(v.planArgs(path)...)
	require.Equal(t, 0, code, stderr)
	p, err := plan.Read(path)
	require.NoError(t, err)
	p.From.KafkaClusterID = "another-cluster"
	require.NoError(t, p.Write(path))
	code, _, stderr = v.cmd("migrate", "apply", path, "--verify-timeout", "300ms")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, `A is Kafka cluster`)
	require.Contains(t, stderr, `the plan's is "another-cluster"`)
	require.NoFileExists(t, path+".cutover.json")
}

// Each verb's --help lists its own flags, each in exactly one group; the shortcut's groups
// hold every flag it registers.
func TestVerbHelpGroups(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  --?([a-z0-9-]+)`)
	check := func(name string, groups []flagGroup, registered []string) {
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, groups)
			in := map[string]string{}
			for _, g := range groups {
				for _, f := range g.flags {
					require.NotContains(t, in, f, "--%s is in the groups %q and %q", f, in[f], g.title)
					in[f] = g.title
				}
			}
			require.ElementsMatch(t, slices.Sorted(maps.Keys(in)), registered, "the flags registered are those of the groups")
		})
	}
	help := func(args ...string) []string {
		var out bytes.Buffer
		require.Equal(t, 0, run(append(args, "--help"), strings.NewReader(""), &out, &bytes.Buffer{}))
		var names []string
		for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
			names = append(names, m[1])
		}
		return names
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var c migrateCmd
	c.register(fs)
	var all []string
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f.Name) })
	check("migrate", helps["migrate"].groups, all)
	require.ElementsMatch(t, all, help("migrate"), "migrate --help lists every flag once")
	for name, h := range verbHelps {
		verb := strings.TrimPrefix(name, "migrate ")
		if migrateVerbs[verb] == nil {
			continue
		}
		listed := help("migrate", verb)
		check(name, h.groups, listed)
	}
	for verb := range migrateVerbs {
		require.Contains(t, verbHelps, "migrate "+verb, "every verb's help is in verbHelps, rendered by writeUsage")
	}
	require.NotContains(t, help("migrate", "apply"), "include", "apply's selection is the plan's")
	require.NotContains(t, help("migrate", "plan"), "grace", "plan stops nothing")
	require.NotContains(t, help("migrate", "rollback"), "stop-source", "rollback's flags are its own")
	require.Contains(t, help("migrate", "rollback"), "execute")
	var out bytes.Buffer
	require.Equal(t, 0, run([]string{"migrate", "plan", "--help"}, strings.NewReader(""), &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "required: -o; --to-brokers; one of --from-brokers, --from-connect-url\n")
}

// startConnectSim serves a Connect worker's REST API over the Connect topics of the cluster at
// addr (connectsim: no task runs), and returns its URL.
func startConnectSim(t *testing.T, addr string) string {
	t.Helper()
	sim, err := connectsim.New(connectsim.Config{Topics: offsetstore.Options{Brokers: []string{addr}, ConfigTopic: "connect-configs",
		OffsetsTopic: "connect-offsets"}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	readyCtx, readyCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer readyCancel()
	require.NoError(t, sim.WaitReady(readyCtx))
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return srv.URL
}

// An apply with --stop-source interrupted (no agent on B answers before the deadline: every
// connector stopped on A, its request failed) is continued by applying the same plan again:
// A's connectors, STOPPED now, are no drift (their states before the stop are recorded under
// the plan's migration id), each is published under its next attempt and created on B in the
// state it had on A.
func TestApplyContinuesAfterInterruption(t *testing.T) {
	v := newVerbsFixture(t)
	urlA := startConnectSim(t, v.a)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd(v.planArgs(path, "--stop-source", "--from-connect-url", urlA, "--allow-no-agent")...)
	require.Equal(t, 0, code, stderr)
	p, err := plan.Read(path)
	require.NoError(t, err)
	require.True(t, p.Settings.StopSource)

	v.stopB()
	v.agentRun = false
	report := filepath.Join(v.dir, "report.json")
	code, out, stderr := v.cmd("migrate", "apply", path, "--report", report, "--timeout", "5s", "--grace", "500ms", "--verify-timeout", "300ms")
	require.Equal(t, 1, code, "%s\n%s", out, stderr)
	got := readReport(t, report)
	for _, n := range []string{"1", "2", "3", "4"} {
		require.Equal(t, "failed", got["src-"+n].outcome, n)
		require.Equal(t, p.MigrationID+"/b-"+n+"/1", got["src-"+n].request, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	onA, err := offsetstore.ReadConfigRecords(ctx, kafkaio.Options{Brokers: []string{v.a}}, "connect-configs", []string{"target-state-src-1"})
	require.NoError(t, err)
	require.Contains(t, string(onA["target-state-src-1"].Value), "STOPPED")

	v.startB()
	code, out, stderr = v.cmd("migrate", "apply", path, "--report", report, "--timeout", "60s", "--verify-timeout", "300ms")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	require.NotContains(t, stderr, "drift")
	got = readReport(t, report)
	keys := []string{}
	for _, n := range []string{"1", "2", "3", "4"} {
		require.Equal(t, "succeeded", got["src-"+n].outcome, n)
		require.Equal(t, p.MigrationID+"/b-"+n+"/2", got["src-"+n].request, n)
		keys = append(keys, "target-state-b-"+n)
	}
	onB, err := offsetstore.ReadConfigRecords(ctx, kafkaio.Options{Brokers: []string{v.b}}, "connect-configs", keys)
	require.NoError(t, err)
	for _, k := range keys {
		require.Contains(t, string(onB[k].Value), "STARTED", k)
	}
	// The cutover report names where the states before the stop are, for the way back.
	var cut struct {
		StateTopic string `json:"state_topic"`
		Connectors []struct {
			StateOnA string `json:"state_on_a"`
		} `json:"connectors"`
	}
	data, err := os.ReadFile(path + ".cutover.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cut))
	require.Equal(t, source.DefaultStateTopic, cut.StateTopic)
	require.Len(t, cut.Connectors, 4)
	for _, cc := range cut.Connectors {
		require.Equal(t, "RUNNING", cc.StateOnA, "the state recorded before the stop, not the STOPPED A shows")
	}
}

// The verbs' arguments: what each needs, and what it refuses, before reaching any cluster.
func TestVerbArguments(t *testing.T) {
	dir := t.TempDir()
	notAPlan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(notAPlan, []byte("version: 1\nsurprise: true\n"), 0o600))
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "apply without a plan", args: []string{"migrate", "apply"}, stderr: "the plan file is required"},
		{name: "apply of a missing plan", args: []string{"migrate", "apply", filepath.Join(dir, "none.yaml")}, stderr: "read plan"},
		{name: "apply of a plan with an unknown field", args: []string{"migrate", "apply", notAPlan}, stderr: "surprise"},
		{name: "apply of two plans", args: []string{"migrate", "apply", notAPlan, notAPlan}, stderr: "unexpected argument"},
		{name: "apply with a selection flag", args: []string{"migrate", "apply", notAPlan, "--include", "x"}, stderr: "flag provided but not defined: -include"},
		{name: "verify without a report", args: []string{"migrate", "verify"}, stderr: "the cutover report is required"},
		{name: "verify a missing report", args: []string{"migrate", "verify", filepath.Join(dir, "none.json")}, stderr: "none.json"},
		{name: "verify a missing report on given brokers", args: []string{"migrate", "verify", filepath.Join(dir, "none.json"), "--to-brokers", "127.0.0.1:1"},
			stderr: "offsetagent migrate verify: open "},
		{name: "verify a report and manifests", args: []string{"migrate", "verify", "r.json", "--manifests", dir}, stderr: "not both"},
		{name: "verify manifests without B's REST API", args: []string{"migrate", "verify", "--manifests", dir}, stderr: "--to-connect-url"},
		{name: "plan with a positional argument", args: []string{"migrate", "plan", "-o", notAPlan, "extra"}, stderr: "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run(tc.args, strings.NewReader(""), &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), tc.stderr)
		})
	}
}

// A plan that read A through its REST API only holds no config record offsets: apply says, once,
// that a change of a secret alone is not seen, and moves the connectors.
func TestApplyOfARESTOnlyPlanWarns(t *testing.T) {
	v := newVerbsFixture(t)
	urlA := startConnectSim(t, v.a)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd("migrate", "plan", "-o", path, "--from-connect-url", urlA, "--to-brokers", v.b, "--include", "src-[0-9]",
		"--rename", "src-(.*)=b-$1")
	require.Equal(t, 0, code, stderr)
	p, err := plan.Read(path)
	require.NoError(t, err)
	require.Len(t, p.Connectors, 4)
	for _, fc := range p.Connectors {
		require.Nil(t, fc.ConfigRecordOnA, fc.Name)
		require.False(t, fc.SecretChangeDetected, fc.Name)
	}
	code, out, stderr := v.cmd("migrate", "apply", path, "--verify-timeout", "300ms")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	require.Equal(t, 1, strings.Count(stderr, "a change of a secret value alone since the plan is not seen"), stderr)
	require.Contains(t, stderr, "src-1,src-2,src-3,src-4")
}

// A partition that had an offset on A at the plan and has none when apply reads the offsets
// again is a warning on its connector, which moves.
func TestApplyWarnsOfAPartitionGoneSinceThePlan(t *testing.T) {
	v := newVerbsFixture(t)
	path := filepath.Join(v.dir, "plan.yaml")
	code, _, stderr := v.cmd(v.planArgs(path)...)
	require.Equal(t, 0, code, stderr)
	// src-2's offset is deleted on A (a tombstone, as DELETE /connectors/{name}/offsets writes).
	w := &kafka.Writer{Addr: kafka.TCP(v.a), Balancer: kafka.Murmur2Balancer{Consistent: true}, BatchTimeout: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets", Key: []byte(`["src-2",{"filename":"src-2.txt"}]`)}))
	require.NoError(t, w.Close())
	report := filepath.Join(v.dir, "report.json")
	code, out, stderr := v.cmd("migrate", "apply", path, "--report", report, "--verify-timeout", "300ms")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	got := readReport(t, report)
	require.Equal(t, "succeeded", got["src-2"].outcome)
	require.Contains(t, got["src-2"].warnings, `partition {"filename":"src-2.txt"} had an offset on A at the plan ({"position":30}) and none when its offsets were read again`)
	require.NotContains(t, got["src-1"].warnings, "had an offset on A at the plan")
}

// A plan records both clusters' identities: each Kafka cluster's id, and, with their Connect
// REST APIs, each side's URL and the Connect version and commit its GET / answered.
func TestPlanRecordsBothConnectVersions(t *testing.T) {
	v := newVerbsFixture(t)
	urlA, urlB := startConnectSim(t, v.a), startConnectSim(t, v.b)
	path := filepath.Join(v.dir, "plan.yaml")
	code, out, stderr := v.cmd(v.planArgs(path, "--from-connect-url", urlA, "--to-connect-url", urlB)...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	p, err := plan.Read(path)
	require.NoError(t, err)
	for side, s := range map[string]plan.Side{"A": p.From, "B": p.To} {
		require.NotEmpty(t, s.KafkaClusterID, side)
		require.NotEmpty(t, s.ConnectURL, side)
		require.Equal(t, connectsim.DefaultVersion, s.ConnectVersion, "%s's Connect version", side)
	}
	require.NotEqual(t, p.From.KafkaClusterID, p.To.KafkaClusterID)
}
