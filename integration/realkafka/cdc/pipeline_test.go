package cdc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/migrate/apply"
)

// clusterB is the second cluster: a broker, a Connect worker with Debezium's plugins running
// MirrorMaker 2 (A -> B), and an agent writing to the worker's topics, which migrate publishes
// its requests to.
type clusterB struct {
	broker *realkafka.Broker
	worker *realkafka.Worker
	agent  *tier.Agent
}

// startClusterB starts cluster B and MirrorMaker 2 as connectors on B's worker, replicating
// A's topics cdc-<run>-p* and checkpointing every group but console consumers'. MM2 runs with
// the identity replication policy, as migrations do: A's topic keeps its name on B, so the
// Debezium connector moved to B appends to the topic that holds A's changes, and the sink moved
// to B reads one topic with the whole history. A second MirrorSourceConnector replicates A's
// topics cdc-<run>-d* with MM2's default policy (A's "T" is "A.T" on B), for the pipeline moved
// with --sink-follows-source.
func startClusterB(t *testing.T, ctx context.Context) clusterB {
	t.Helper()
	names := env.ConnectNames("b")
	b, w, err := env.StartCluster(ctx, "b", names)
	require.NoError(t, err)
	ag, err := env.StartAgentOn(ctx, "agent-b", b.Addr, names)
	require.NoError(t, err)
	mm2 := func(class string, extra map[string]string) map[string]string {
		cfg := map[string]string{"replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"}
		for k, v := range extra {
			cfg[k] = v
		}
		return tier.MM2Config(class, env.Brokers, []string{b.Addr}, "cdc-"+env.Run+"-p.*", cfg)
	}
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": "mm2-source",
		"config": mm2(tier.MirrorSource, nil)})
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": "mm2-checkpoint",
		"config": mm2(tier.MirrorCheckpoint, map[string]string{
			"groups":                            ".*",
			"groups.exclude":                    "console-consumer-.*, __.*",
			"emit.checkpoints.interval.seconds": "1",
			"refresh.groups.interval.seconds":   "1",
			"sync.group.offsets.enabled":        "false",
		})})
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": "mm2-default-source",
		"config": mm2(tier.MirrorSource, map[string]string{
			"replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
			"topics":                   "cdc-" + env.Run + "-d.*",
		})})
	tier.WaitState(t, w, "mm2-source", "RUNNING", tier.TasksOptional())
	tier.WaitState(t, w, "mm2-checkpoint", "RUNNING", tier.TasksOptional())
	tier.WaitState(t, w, "mm2-default-source", "RUNNING", tier.TasksOptional())
	return clusterB{broker: b, worker: w, agent: ag}
}

// pipelineCase is one run of the pipeline: a clean migration (--stop-source), or one after A's
// worker was killed.
type pipelineCase struct {
	name      string
	kill      bool
	rowsPerTx int
	// follow: MM2's default policy (A's topic T is A.T on B); migrate first refuses the pair,
	// then moves it with --sink-follows-source.
	follow bool
}

// TestPipelineMigratedAcrossMirrorMaker2 migrates a CDC pipeline: PostgreSQL -> Debezium -> Kafka A ->
// Debezium's JDBC sink into a second database, MirrorMaker 2 replicating A to B, and a writer
// inserting, updating and deleting rows while `offsetagent migrate --mm2-source-alias A` moves
// the source and the sink to B's worker. Counted on B's topic, which holds A's changes (MM2)
// and B's (the moved source): every change the writer committed, none missing, the ones sent
// twice, no snapshot record; the source on B uses the same slot; the target equals the source
// row for row once the writer stops and the pipeline drains. With --stop-source nothing is sent
// twice; after A's worker is killed in the middle of multi-row transactions, what is sent twice
// are changes of the transactions after the offset A's Debezium had last committed.
func TestPipelineMigratedAcrossMirrorMaker2(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	started := time.Now()
	b := startClusterB(t, ctx)
	t.Logf("cluster B and MirrorMaker 2 started in %s", time.Since(started).Round(time.Second))
	for i, c := range []pipelineCase{
		{name: "stop-source", rowsPerTx: 1},
		{name: "default-policy-sink-follows-source", rowsPerTx: 1, follow: true},
		// Last: it kills the shared worker of cluster A.
		{name: "kill-worker-a", kill: true, rowsPerTx: 4},
	} {
		t.Run(c.name, func(t *testing.T) { runPipeline(t, ctx, b, c, i+1) })
	}
}

func runPipeline(t *testing.T, ctx context.Context, b clusterB, c pipelineCase, n int) {
	started := time.Now()
	wA := env.Worker
	src, dst := fmt.Sprintf("src%d_%s", n, env.Run), fmt.Sprintf("dst%d_%s", n, env.Run)
	createSourceDB(t, src)
	sqlExec(t, "postgres", "CREATE DATABASE "+dst)
	sqlExec(t, dst, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, note text NOT NULL)")
	prefix := fmt.Sprintf("cdc-%s-p%d", env.Run, n)
	policy, topicOnB := "identity", func(t string) string { return t }
	if c.follow {
		prefix = fmt.Sprintf("cdc-%s-d%d", env.Run, n)
		policy, topicOnB = "default", func(t string) string { return "A." + t }
	}
	source, sink, slot, topic := prefix+"-source", prefix+"-sink", fmt.Sprintf("pipeline%d", n), prefix+".public.items"
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": source, "config": debeziumConfig(src, slot, prefix)})
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": sink, "config": map[string]string{
		"connector.class":                "io.debezium.connector.jdbc.JdbcSinkConnector",
		"tasks.max":                      "1",
		"topics":                         topic,
		"connection.url":                 fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/%s", env.Postgres.Port, dst),
		"connection.username":            "postgres",
		"connection.password":            "unused",
		"insert.mode":                    "upsert",
		"delete.enabled":                 "true",
		"primary.key.mode":               "record_key",
		"schema.evolution":               "none",
		"collection.name.format":         "items",
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
	}})
	tier.WaitState(t, wA, source, "RUNNING")
	tier.WaitState(t, wA, sink, "RUNNING")

	wr := startWriter(t, src, c.rowsPerTx, 100*time.Millisecond)
	wr.waitTxs(t, 40)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	common := []string{"migrate", "--from-brokers", env.Broker.Addr, "--from-config-topic", namesA.Config,
		"--from-offsets-topic", namesA.Offsets, "--to-brokers", b.broker.Addr, "--to-connect-url", b.worker.URL,
		"--include", source + "|" + sink, "--mm2-source-alias", "A", "--mm2-target-alias", "B",
		"--replication-policy", policy, "--checkpoint-wait", "30s", "--allow-replay", "--no-verify",
		"--report", reportPath}
	var committed map[string]any
	if c.kill {
		wA.Kill()
		env.Skip = "cluster A's worker was killed by " + t.Name() // no later test may use it
		committed = lastOffset(t, env.Broker.Addr, namesA.Offsets, source)
	} else {
		common = append(common, "--stop-source", "--from-connect-url", wA.URL)
	}
	if c.follow {
		refused(t, ctx, b, c, common, source, sink, topic)
		common = append(common, "--sink-follows-source")
	}
	_, txsBefore, _ := wr.result()
	migStart := time.Now()
	stdout := env.Offsetagent(t, ctx, b.agent.Env, common...)
	migTook := time.Since(migStart)
	t.Logf("migrate (%s, writer at transaction %d):\n%s", migTook.Round(time.Second), txsBefore, stdout)
	require.Regexp(t, source+`\s+`+source+`\s+source\s+1\s+succeeded`, stdout)
	sinkOffsets := "1"
	if c.follow {
		sinkOffsets = "0" // it follows its source into a topic B does not have yet: no offset
	}
	require.Regexp(t, sink+`\s+`+sink+`\s+sink\s+`+sinkOffsets+`\s+succeeded`, stdout)
	var verdict apply.SinkTranslation
	var followed apply.FollowedSources
	if c.follow {
		followed = sinkFollowed(t, reportPath, sink)
		require.Equal(t, []string{source}, followed.FollowsSources)
		require.Equal(t, []string{topic}, followed.Topics, "the sink on B reads the topic the source writes on B")
	} else {
		verdict = sinkVerdict(t, reportPath, sink)
		require.Equal(t, 1, verdict.Partitions, "%+v", verdict)
		require.Zero(t, verdict.Missing, "MM2 checkpointed the sink's group: %+v", verdict)
	}
	if !c.kill {
		tier.WaitState(t, wA, source, "STOPPED")
		tier.WaitState(t, wA, sink, "STOPPED")
		committed = lastOffset(t, env.Broker.Addr, namesA.Offsets, source)
	}
	tier.WaitState(t, b.worker, source, "RUNNING")
	tier.WaitState(t, b.worker, sink, "RUNNING")

	// The writer goes on for 30 transactions on B's watch, then stops.
	_, txsAfterMigrate, _ := wr.result()
	wr.waitTxs(t, txsAfterMigrate+30)
	wr.halt()
	want, txs, err := wr.result()
	require.NoError(t, err, "the writer")

	// Drain: the target equals the source, row for row.
	query := "SELECT id, v, note FROM items ORDER BY id"
	var srcRows, dstRows []string
	require.Eventually(t, func() bool {
		a, aerr := env.Postgres.Query(ctx, src, query)
		b, berr := env.Postgres.Query(ctx, dst, query)
		srcRows, dstRows = rows(a), rows(b)
		return aerr == nil && berr == nil && a == b
	}, 2*time.Minute, 500*time.Millisecond, "the target equals the source")

	// Every change on B (A's through MM2, then B's own), counted: with the identity policy in
	// one topic; with the default policy A's in A.<topic>, B's in <topic>.
	var onB []change
	require.Eventually(t, func() bool {
		mirrored, err := readChanges(b.broker.Addr, topicOnB(topic))
		if err != nil {
			return false
		}
		onB = mirrored
		if c.follow {
			own, err := readChanges(b.broker.Addr, topic)
			if err != nil {
				return false
			}
			onB = append(onB, own...)
		}
		return countMissing(want, onB) == 0
	}, 2*time.Minute, 500*time.Millisecond, "every committed change reaches B")
	require.Zero(t, countMissing(want, onB), "no change lost")
	onA := changes(t, env.Broker.Addr, topic)
	seen := map[string]int{}
	snapshotsB, doubled := 0, 0
	var doubledIDs []change
	for _, e := range onB {
		if e.Op == "r" {
			snapshotsB++
		}
		seen[e.id()]++
		if seen[e.id()] == 2 {
			doubledIDs = append(doubledIDs, e)
		}
		if seen[e.id()] > 1 {
			doubled++
		}
	}
	require.Len(t, seen, len(want), "B's topic holds only the writer's changes")
	afterStop := 0
	onAIDs := map[string]bool{}
	for _, e := range onA {
		onAIDs[e.id()] = true
	}
	for id := range seen {
		if !onAIDs[id] {
			afterStop++
		}
	}
	// The first transaction A's last committed offset does not cover in full: the next one,
	// or its own when the offset was committed at one of its changes (messageType INSERT,
	// UPDATE or DELETE: lsn_commit may be behind lsn_proc or, seen once in a CI rehearsal,
	// equal to it), which Debezium then streams again from its start. Only an offset at the
	// transaction's COMMIT covers it.
	firstUncovered := int64(toFloat(committed["txId"])) + 1
	if committed["messageType"] != "COMMIT" || toFloat(committed["lsn_commit"]) < toFloat(committed["lsn_proc"]) {
		firstUncovered--
	}
	windowOnA := 0 // changes A's Debezium sent after its last committed offset: its at-least-once window
	for _, e := range onA {
		if e.Source.TxID >= firstUncovered {
			windowOnA++
		}
	}
	report(t, c, pipelineReport{
		source: len(srcRows), target: len(dstRows), txs: txs, changes: len(want), onA: len(onA), onB: len(onB),
		afterStop: afterStop, snapshotsB: snapshotsB, doubled: doubled, window: windowOnA, committed: committed,
		slots: slots(t, src), migrate: stdout, verdict: verdict, followed: followed, took: time.Since(started),
	})
	require.Zero(t, snapshotsB, "Debezium on B did not snapshot")
	require.Equal(t, []string{slot + " true"}, slots(t, src), "B's Debezium streams from A's slot; no other slot")
	require.Positive(t, afterStop, "changes committed after the stop were made on B")
	if !c.kill {
		require.Zero(t, doubled, "--stop-source: nothing sent twice %v", doubledIDs)
		return
	}
	for _, e := range doubledIDs {
		require.GreaterOrEqual(t, e.Source.TxID, firstUncovered, "a change sent twice belongs to a transaction A's last committed offset does not cover in full %v", committed)
	}
	require.LessOrEqual(t, doubled, windowOnA, "no more sent twice than A sent after its last committed offset")
}

// rows splits psql's output into rows.
func rows(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// countMissing returns how many of the writer's changes ("txid op id") are not among events.
func countMissing(want []string, events []change) int {
	have := map[string]bool{}
	for _, e := range events {
		have[e.summary()] = true
	}
	missing := 0
	for _, w := range want {
		if !have[w] {
			missing++
		}
	}
	return missing
}

func toFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

// pipelineReport is what an operator checks after the migration.
type pipelineReport struct {
	source, target, txs, changes, onA, onB, afterStop, snapshotsB, doubled, window int
	committed                                                                      map[string]any
	slots                                                                          []string
	migrate                                                                        string
	verdict                                                                        apply.SinkTranslation
	followed                                                                       apply.FollowedSources
	took                                                                           time.Duration
}

// report prints the pipeline's numbers: with -v, the demo's output.
func report(t *testing.T, c pipelineCase, r pipelineReport) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n== CDC pipeline, %s (%d rows per transaction)\n", c.name, c.rowsPerTx)
	fmt.Fprintf(&b, "  rows in the source / the target        %d / %d\n", r.source, r.target)
	fmt.Fprintf(&b, "  transactions / changes committed       %d / %d\n", r.txs, r.changes)
	fmt.Fprintf(&b, "  change events on A / on B              %d / %d\n", r.onA, r.onB)
	fmt.Fprintf(&b, "  changes made by B's Debezium           %d\n", r.afterStop)
	fmt.Fprintf(&b, "  snapshot events on B                   %d\n", r.snapshotsB)
	fmt.Fprintf(&b, "  changes lost                           0\n")
	fmt.Fprintf(&b, "  changes doubled                        %d (A sent %d after its last committed offset)\n", r.doubled, r.window)
	fmt.Fprintf(&b, "  A's last committed offset              %s\n", mustJSON(t, r.committed))
	fmt.Fprintf(&b, "  replication slots                      %s\n", strings.Join(r.slots, ", "))
	fmt.Fprintf(&b, "  migrate's outcomes:\n")
	for _, l := range strings.Split(strings.TrimSpace(r.migrate), "\n") {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	if c.follow {
		f := r.followed
		fmt.Fprintf(&b, "  the sink on B follows %v: reads %v, A's sink drained in %s, starts %v\n", f.FollowsSources, f.Topics, f.Drained, f.Starts)
		fmt.Fprintf(&b, "  took %s\n", r.took.Round(time.Second))
		t.Log(b.String())
		return
	}
	v := r.verdict
	bound := "unknown"
	if v.ReplayBound != nil {
		bound = fmt.Sprint(*v.ReplayBound)
	}
	fmt.Fprintf(&b, "  the sink's translated offsets          %d partition: %d exact, %d replay (at most %s records again), %d missing\n",
		v.Partitions, v.Exact, v.Replay, bound, v.Missing)
	for _, p := range v.NotExact {
		fmt.Fprintf(&b, "    %s: %s from offset %d on B (A's group at %d): %s\n", p.Target, p.Verdict, p.Offset, p.Committed, p.Reason)
	}
	fmt.Fprintf(&b, "  took %s\n", r.took.Round(time.Second))
	t.Log(b.String())
}

// sinkVerdict returns the translation of sink in migrate's report.
func sinkVerdict(t *testing.T, path, sink string) apply.SinkTranslation {
	t.Helper()
	return reportTranslation(t, path, sink, func(*apply.SinkTranslation) bool { return true })
}

// sinkFollowed returns the translation of a sink moved with --sink-follows-source in
// migrate's report.
func sinkFollowed(t *testing.T, path, sink string) apply.FollowedSources {
	t.Helper()
	return reportTranslation(t, path, sink, func(f *apply.FollowedSources) bool { return len(f.FollowsSources) > 0 })
}

// reportTranslation returns sink's translation in migrate's report, read as a T that ok accepts.
func reportTranslation[T any](t *testing.T, path, sink string, ok func(*T) bool) T {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep struct {
		Connectors []struct {
			Name        string `json:"name"`
			Translation *T     `json:"translation"`
		} `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal(data, &rep))
	for _, c := range rep.Connectors {
		if c.Name == sink && c.Translation != nil && ok(c.Translation) {
			return *c.Translation
		}
	}
	t.Fatalf("no translation for %s in the report: %s", sink, data)
	var none T
	return none
}

// refused runs migrate on the default-policy pipeline without --sink-follows-source and
// requires it to refuse the pair, naming both, the topic the source writes on B and the one
// the sink would read there, and to leave both running on A and absent from B.
func refused(t *testing.T, ctx context.Context, b clusterB, c pipelineCase, common []string, source, sink, topic string) {
	t.Helper()
	args := append(append([]string{}, common...), "--stop-source", "--from-connect-url", env.Worker.URL)
	started := time.Now()
	cmd := exec.CommandContext(ctx, env.AgentBin, args...)
	cmd.Env = b.agent.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "migrate must refuse the pipeline\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, 1, exit.ExitCode(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String() + stderr.String()
	t.Logf("migrate without --sink-follows-source (%s, exit 1):\n%s", time.Since(started).Round(time.Millisecond), out)
	require.Regexp(t, source+`\s+`+source+`\s+source\s+\d+\s+skipped`, stdout.String())
	require.Regexp(t, sink+`\s+`+sink+`\s+sink\s+\d+\s+skipped`, stdout.String())
	data, err := os.ReadFile(args[slices.Index(args, "--report")+1])
	require.NoError(t, err)
	for _, want := range []string{`pipeline with source \"` + source + `\"`, `the moved sink \"` + sink + `\" would read A.` + topic + ` on B`,
		`the moved source \"` + source + `\" writes ` + topic + ` on B`, `--replication-policy identity`, `--sink-follows-source`} {
		require.Contains(t, string(data), want, "the report names the pair and what to do")
	}
	for _, name := range []string{source, sink} {
		var st tier.ConnectorStatus
		require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, env.Worker, http.MethodGet, "/connectors/"+name+"/status", nil)), &st))
		require.Equal(t, "RUNNING", st.Connector.State, "%s was not stopped on A", name)
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		code, _, err := b.worker.Do(rctx, http.MethodGet, "/connectors/"+name, nil)
		cancel()
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code, "%s was not created on B", name)
	}
}

// lastOffset returns the offset connector name last committed in a Connect offsets topic on
// broker (every partition is read: the key's partition is Connect's murmur2 choice).
func lastOffset(t *testing.T, broker, topic, name string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	require.NoError(t, err)
	require.Len(t, md.Topics, 1)
	prefix := []byte(`["` + name + `",`)
	var last []byte
	parts := md.Topics[0].Partitions
	sort.Slice(parts, func(i, j int) bool { return parts[i].ID < parts[j].ID })
	for _, p := range parts {
		lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(p.ID)}}})
		require.NoError(t, err)
		end := lo.Topics[topic][0].LastOffset
		if end == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: p.ID, MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			if bytes.HasPrefix(m.Key, prefix) {
				last = m.Value
			}
			if m.Offset+1 >= end {
				break
			}
		}
		r.Close()
	}
	require.NotNil(t, last, "%s committed no offset", name)
	var v map[string]any
	require.NoError(t, json.Unmarshal(last, &v))
	return v
}
