package realkafka_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// The Strimzi operator creates a KafkaConnector's connector through the REST API, with no
// offsets: PUT /connectors/NAME/config (then pause or stop for spec.state), and KIP-995's
// POST /connectors with initial_state does the same in one call. Offsets placed beforehand by
// an offsets-only request are what such a connector starts at.

var strimziAgent struct {
	once sync.Once
	a    *tier.Agent
	err  error
}

// mainStrimziAgent is an agent for the main worker's topics in the mode of a Strimzi-managed
// cluster (OFFSETAGENT_CONNECTORS_MANAGED_BY=strimzi), started once.
func mainStrimziAgent(t *testing.T) *tier.Agent {
	t.Helper()
	strimziAgent.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		names := env.ConnectNames("main")
		strimziAgent.a, strimziAgent.err = env.StartAgent(ctx, "agent-strimzi", map[string]string{
			"OFFSETAGENT_CONFIG_TOPIC":          names.Config,
			"OFFSETAGENT_OFFSETS_TOPIC":         names.Offsets,
			"OFFSETAGENT_CONNECT_URL":           env.Worker.URL,
			"OFFSETAGENT_CONNECTORS_MANAGED_BY": "strimzi",
		})
	})
	require.NoError(t, strimziAgent.err)
	return strimziAgent.a
}

// requireOffsetsOnly requires an offsets-only result, and no connector of the name on w.
func requireOffsetsOnly(t *testing.T, w *realkafka.Worker, res tier.Result, name string) {
	t.Helper()
	require.Equal(t, tier.TypeSucceeded, res.Type, "%s: %d %s", res.Data.FailedStep, res.Data.ErrorCode, res.Data.Message)
	require.Equal(t, events.CreateOffsetsOnly, res.Data.Created)
	require.Contains(t, res.Data.Next, "create connector "+name)
	require.Equal(t, events.OutcomeSkipped, res.Data.Stages[len(res.Data.Stages)-1].Outcome, "write_config")
	status, _ := tier.Rest(t, w, http.MethodGet, "/connectors/"+name, nil)
	require.Equal(t, http.StatusNotFound, status, "no connector until someone creates it")
}

// createLikeOperator creates the connector without offsets: POST /connectors with
// initial_state, or as the Strimzi operator does, PUT .../config and then the state.
func createLikeOperator(t *testing.T, w *realkafka.Worker, name string, config map[string]string, state string, put bool) {
	t.Helper()
	if !put {
		tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": config, "initial_state": state})
		return
	}
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+name+"/config", config)
	switch state {
	case "PAUSED":
		tier.RestOK(t, w, http.MethodPut, "/connectors/"+name+"/pause", nil)
	case "STOPPED":
		tier.RestOK(t, w, http.MethodPut, "/connectors/"+name+"/stop", nil)
	}
}

// TestOffsetsOnlyThenOperatorCreates: a source (offsets-only through the request field, on a
// normal agent) and a sink (on an agent of a Strimzi-managed cluster, with no field) get their
// offsets placed and no connector; created afterwards without offsets, in each state, by POST
// /connectors with initial_state and, RUNNING, by PUT .../config as the operator does, each
// starts exactly at the offsets placed.
func TestOffsetsOnlyThenOperatorCreates(t *testing.T) {
	env.RequirePeers(t)
	stz := mainStrimziAgent(t)
	type tc struct {
		state string
		put   bool
	}
	for _, c := range []tc{{"RUNNING", false}, {"PAUSED", false}, {"STOPPED", false}, {"RUNNING", true}} {
		how := "post"
		if c.put {
			how = "put"
		}
		t.Run(c.state+"/"+how+"/source", func(t *testing.T) {
			t.Parallel()
			s := env.NewFileSource(t, "oo-src-"+strings.ToLower(c.state)+"-"+how)
			req := s.Request(c.state)
			req["create"] = events.CreateOffsetsOnly
			requireOffsetsOnly(t, env.Worker, env.Agent.Publish(t, req), s.Name)
			// No connector yet, so no REST view of its offsets: they are in the topic.
			recs := env.OffsetRecords(t, env.ConnectNames("main").Offsets, s.Name)
			require.Len(t, recs, 1)
			require.JSONEq(t, fmt.Sprintf(`{"position":%d}`, s.Position), string(recs[0].Value))
			createLikeOperator(t, env.Worker, s.Name, req["config"].(map[string]string), c.state, c.put)
			s.RequireBorn(t, env.Worker, c.state)
		})
		t.Run(c.state+"/"+how+"/sink", func(t *testing.T) {
			t.Parallel()
			name := env.Unique("oo-sink-" + strings.ToLower(c.state) + "-" + how)
			topic := name + "-in"
			env.CreateTopic(t, topic, 1, false)
			env.Produce(t, topic, tier.Numbered(`"m-%02d"`, 10)...)
			out := env.WriteFile(t, name+".out", "")
			config := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
				"topics": topic, "file": out, "tasks.max": "1"}
			res := stz.Publish(t, map[string]any{"name": name, "config": config, "initial_state": c.state,
				"initial_offsets": []any{map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0},
					"offset": map[string]any{"kafka_offset": 6}}}})
			requireOffsetsOnly(t, env.Worker, res, name)
			require.Contains(t, res.Data.Next, "KafkaConnector resource named "+name)
			require.Equal(t, map[int]string{0: `6 metadata=""`}, env.GroupOffsets(t, "connect-"+name, topic))
			createLikeOperator(t, env.Worker, name, config, c.state, c.put)
			want := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%s,"kafka_partition":0},"offset":{"kafka_offset":6}}]}`, tier.JSONString(topic))
			if c.state != "RUNNING" {
				tier.WaitState(t, env.Worker, name, c.state)
				tier.RequireOffsets(t, env.Worker, name, want)
				require.Empty(t, tier.FileLines(t, out))
				tier.RestOK(t, env.Worker, http.MethodPut, "/connectors/"+name+"/resume", nil)
			}
			tier.WaitState(t, env.Worker, name, "RUNNING")
			var got []string
			require.Eventually(t, func() bool { got = tier.FileLines(t, out); return len(got) >= 4 }, 90*time.Second, 250*time.Millisecond)
			require.Equal(t, []string{"m-06", "m-07", "m-08", "m-09"}, got, "the sink starts at offset 6")
		})
	}
}

// kafkaConnector is the part of a KafkaConnector manifest the operator reads.
type kafkaConnector struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Class    string            `yaml:"class"`
		TasksMax int               `yaml:"tasksMax"`
		State    string            `yaml:"state"`
		Config   map[string]string `yaml:"config"`
	} `yaml:"spec"`
}

// applyLikeOperator creates the connector of a manifest as the Strimzi operator does: PUT
// /connectors/NAME/config with spec.config, class and tasksMax, then spec.state.
func applyLikeOperator(t *testing.T, w *realkafka.Worker, path string) kafkaConnector {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m kafkaConnector
	require.NoError(t, yaml.Unmarshal(data, &m))
	require.Equal(t, "KafkaConnector", m.Kind)
	cfg := map[string]string{"connector.class": m.Spec.Class, "tasks.max": fmt.Sprint(m.Spec.TasksMax)}
	for k, v := range m.Spec.Config {
		cfg[k] = v
	}
	createLikeOperator(t, w, m.Metadata.Name, cfg, strings.ToUpper(m.Spec.State), true)
	return m
}

// TestMigrateToStrimziCluster: `offsetagent migrate --stop-source --to-strimzi-cluster` moves a
// running source, a paused source (named as no KafkaConnector can be) and a running sink from
// the main Connect cluster (A) to another on the same broker (B), whose agent runs for a
// Strimzi-managed cluster. B gets the offsets and no connector; the manifests, applied as the
// operator would, create connectors that resume exactly where A stopped: every line and every
// record once. `migrate --verify` then passes.
func TestMigrateToStrimziCluster(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// B's worker and agent start while A's connectors are set up: the JVM's start-up is most
	// of this test's time.
	type clusterB struct {
		w   *realkafka.Worker
		a   *tier.Agent
		err error
	}
	startedB := make(chan clusterB, 1)
	go func() {
		namesB := env.ConnectNames("stz-b")
		w, err := env.StartTestWorker(ctx, t, "worker-stz-b", namesB)
		if err != nil {
			startedB <- clusterB{err: err}
			return
		}
		a, err := env.StartAgent(ctx, "agent-stz-b", map[string]string{
			"OFFSETAGENT_CONFIG_TOPIC":          namesB.Config,
			"OFFSETAGENT_OFFSETS_TOPIC":         namesB.Offsets,
			"OFFSETAGENT_CONNECT_URL":           w.URL,
			"OFFSETAGENT_CONNECTORS_MANAGED_BY": "strimzi",
		})
		startedB <- clusterB{w: w, a: a, err: err}
	}()
	wA := env.Worker

	src, paused, sink := env.Unique("stz-src"), env.Unique("Stz_Paused"), env.Unique("stz-sink")
	pausedB := strings.ToLower(strings.ReplaceAll(paused, "_", "-"))
	first, _ := tier.Lines("a", 0, 20)
	file := env.WriteFile(t, src+".txt", first)
	pausedFile := env.WriteFile(t, paused+".txt", "p-00\np-01\n")
	sinkTopic := sink + "-in"
	sinkOut := filepath.Join(t.TempDir(), "sink.txt")
	env.CreateTopic(t, sinkTopic, 1, false)
	records := tier.ValuesFrom("r", 0, 30)
	env.Produce(t, sinkTopic, records...)
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": src, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": src + "-out", "tasks.max": "1"}})
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": paused, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": pausedFile, "topic": paused + "-out", "tasks.max": "1"}})
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": sink, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": sinkOut, "topics": sinkTopic, "tasks.max": "1"}})
	tier.WaitState(t, wA, src, "RUNNING")
	tier.WaitState(t, wA, sink, "RUNNING")
	env.WaitValues(t, paused+"-out", 2)
	tier.RestOK(t, wA, http.MethodPut, "/connectors/"+paused+"/pause", nil)
	tier.WaitState(t, wA, paused, "PAUSED")
	env.WaitValues(t, src+"-out", 20)
	require.Eventually(t, func() bool { return len(tier.FileLines(t, sinkOut)) >= 30 }, 90*time.Second, 250*time.Millisecond)

	b := <-startedB
	require.NoError(t, b.err)
	wB, agentB := b.w, b.a
	dir := filepath.Join(t.TempDir(), "manifests")
	migrate := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, env.AgentBin, append([]string{"migrate"}, args...)...)
		cmd.Env = agentB.Env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		}
		require.NoError(t, err, out.String())
		return 0, out.String()
	}
	namesA := env.ConnectNames("main")
	code, out := migrate("--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", namesA.Config,
		"--from-offsets-topic", namesA.Offsets, "--from-connect-url", wA.URL, "--to-brokers", strings.Join(env.Brokers, ","),
		"--to-connect-url", wB.URL, "--include", src+"|"+paused+"|"+sink, "--stop-source", "--timeout", "3m",
		"--to-strimzi-cluster", "connect-b", "--manifests", dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "3 KafkaConnector manifests for the Connect cluster connect-b are in "+dir+": applying them")
	require.Contains(t, out, fmt.Sprintf("named %s on B", pausedB))
	tier.WaitState(t, wA, src, "STOPPED")
	tier.WaitState(t, wA, sink, "STOPPED")
	for _, n := range []string{src, pausedB, sink} {
		status, _ := tier.Rest(t, wB, http.MethodGet, "/connectors/"+n, nil)
		require.Equal(t, http.StatusNotFound, status, "%s: B has the offsets, not the connector", n)
	}
	code, out = migrate("--verify", "--manifests", dir, "--to-connect-url", wB.URL)
	require.Equal(t, 1, code, "nothing applied yet: %s", out)
	require.Contains(t, out, "not on B: apply its manifest")

	for _, n := range []string{src, pausedB, sink} {
		m := applyLikeOperator(t, wB, filepath.Join(dir, n+".yaml"))
		require.Equal(t, "connect-b", m.Metadata.Labels["strimzi.io/cluster"])
	}
	tier.WaitState(t, wB, src, "RUNNING")
	tier.WaitState(t, wB, pausedB, "PAUSED")
	tier.WaitState(t, wB, sink, "RUNNING")
	code, out = migrate("--verify", "--manifests", dir, "--to-connect-url", wB.URL)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "3 connectors: 3 run with the offsets placed, 0 do not")

	// B resumes exactly where A stopped: the source's later lines once, none again; the
	// sink's later records once; the paused source, resumed, only its new lines.
	more, _ := tier.Lines("a", 20, 5)
	tier.AppendFile(t, file, more)
	tier.AppendFile(t, pausedFile, "p-02\n")
	later := tier.ValuesFrom("r", 30, 5)
	env.Produce(t, sinkTopic, later...)
	tier.RestOK(t, wB, http.MethodPut, "/connectors/"+pausedB+"/resume", nil)
	want := strings.Split(strings.TrimSuffix(first+more, "\n"), "\n")
	for i := range want {
		want[i] = tier.JSONString(want[i])
	}
	require.Equal(t, want, env.WaitValues(t, src+"-out", 25), "every line once")
	require.Equal(t, []string{`"p-00"`, `"p-01"`, `"p-02"`}, env.WaitValues(t, paused+"-out", 3))
	var all []string
	for _, v := range append(records, later...) {
		all = append(all, strings.Trim(v, `"`))
	}
	var written []string
	require.Eventually(t, func() bool { written = tier.FileLines(t, sinkOut); return len(written) >= len(all) }, 90*time.Second, 250*time.Millisecond)
	require.Equal(t, all, written, "no record written twice, none skipped")
}
