package realkafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/mm2"
)

// TestMigrateSinkAcrossMirrorMaker2 proves sink translation on real Kafka: a real MirrorMaker 2
// (MirrorSourceConnector and MirrorCheckpointConnector running on B's worker, with
// ByteArrayConverter) replicates A's topic to B. With MM2's default groups.exclude, `migrate
// --stop-source` refuses a sink still RUNNING on A before stopping it, naming the MM2 setting to
// change, and so it does with a groups.exclude whose lookahead (Java's syntax) excludes the
// sink's group; with groups.exclude changed as named, so that connect-.* groups are checkpointed, it
// replicates A's topic to B, where the mirrored topic starts with records of B's own, so its
// offsets differ from A's. A FileStream sink consumed part of the topic on A; after `migrate
// --sink-offsets translate`, B's sink continues on the mirrored topic with no record skipped
// and no more delivered again than the verdict's replay bound.
func TestMigrateSinkAcrossMirrorMaker2(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	started := time.Now()

	namesA := env.ConnectNames("mm2-a")
	wA, err := env.StartTestWorker(ctx, t, "worker-mm2-a", namesA)
	require.NoError(t, err)
	brokersA := env.Brokers
	b, wB, agentB := env.StartClusterB(ctx, t, "mm2-b", env.Lib)
	brokersB := []string{b.Addr}
	policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A", TargetAlias: "B"}

	// A's topic: the sink on A consumes its first 60 records, then is stopped; 40 more follow.
	sink, topic := env.Unique("mm2-sink"), env.Unique("mm2-topic")
	remote := policy.RemoteTopic(topic)
	tier.CreateTopicOn(t, brokersA, topic, 1)
	first, rest := tier.ValuesFrom("r", 0, 60), tier.ValuesFrom("r", 60, 40)
	tier.ProduceTo(t, brokersA, topic, first...)
	sinkOut := filepath.Join(t.TempDir(), "sink.txt")
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": sink, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": sinkOut, "topics": topic, "tasks.max": "1"}})
	tier.WaitState(t, wA, sink, "RUNNING")
	require.Eventually(t, func() bool { return len(tier.FileLines(t, sinkOut)) >= len(first) }, 90*time.Second, 250*time.Millisecond)
	tier.RestOK(t, wA, http.MethodPut, "/connectors/"+sink+"/stop", nil)
	tier.WaitState(t, wA, sink, "STOPPED")
	group := "connect-" + sink
	require.Eventually(t, func() bool { return env.GroupOffsets(t, group, topic)[0] == `60 metadata=""` }, 60*time.Second, 250*time.Millisecond)
	// A second sink on A reads the same records through a chain of transforms whose output
	// depends on the topic's name at each step: HoistField makes the value a map, a RegexRouter
	// renames the topic to "routed-<suffix>", and an InsertField writes the routed name into
	// the value where a TopicNameMatches predicate matches it. FileStream writes each value,
	// so every line says under which name the record left the chain.
	chainSink, chainOut := env.Unique("mm2-chain"), filepath.Join(t.TempDir(), "chain.txt")
	routed := "routed-" + strings.TrimPrefix(topic, "mm2-topic-")
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": chainSink, "config": map[string]string{
		"connector.class":              "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"file":                         chainOut,
		"topics":                       topic,
		"tasks.max":                    "1",
		"transforms":                   "hoist,route,tag",
		"transforms.hoist.type":        "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoist.field":       "v",
		"transforms.route.type":        "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":       "mm2-topic-(.*)",
		"transforms.route.replacement": "routed-$1",
		"transforms.tag.type":          "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.tag.topic.field":   "dest",
		"transforms.tag.predicate":     "isRouted",
		"predicates":                   "isRouted",
		"predicates.isRouted.type":     "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.isRouted.pattern":  "routed-.*",
	}})
	tier.WaitState(t, wA, chainSink, "RUNNING")
	require.Eventually(t, func() bool { return len(tier.FileLines(t, chainOut)) >= len(first) }, 90*time.Second, 250*time.Millisecond)
	tier.RestOK(t, wA, http.MethodPut, "/connectors/"+chainSink+"/stop", nil)
	tier.WaitState(t, wA, chainSink, "STOPPED")
	require.Eventually(t, func() bool { return env.GroupOffsets(t, "connect-"+chainSink, topic)[0] == `60 metadata=""` }, 60*time.Second, 250*time.Millisecond)
	tier.ProduceTo(t, brokersA, topic, rest...)

	// B's copy of the topic begins with 3 records of B's own: A's record k lands at k+3.
	tier.CreateTopicOn(t, brokersB, remote, 1)
	tier.ProduceTo(t, brokersB, remote, tier.ValuesFrom("b", 0, 3)...)

	// MirrorMaker 2 as connectors on B's worker, A -> B.
	mm2Config := func(class string, extra map[string]string) map[string]string {
		return tier.MM2Config(class, brokersA, []string{b.Addr}, topic, extra)
	}
	checkpointConfig := map[string]string{
		"groups":                            ".*",
		"emit.checkpoints.interval.seconds": "1",
		"refresh.groups.interval.seconds":   "1",
		"sync.group.offsets.enabled":        "false",
	}
	tier.RestOK(t, wB, http.MethodPost, "/connectors", map[string]any{"name": "mm2-source",
		"config": mm2Config(tier.MirrorSource, nil)})
	// First with MM2's default groups.exclude, which excludes every connect-<name> group.
	tier.RestOK(t, wB, http.MethodPost, "/connectors", map[string]any{"name": "mm2-checkpoint",
		"config": mm2Config(tier.MirrorCheckpoint, checkpointConfig)})
	// (no task: no group passes its filter)
	tier.WaitState(t, wB, "mm2-source", "RUNNING")
	tier.WaitState(t, wB, "mm2-checkpoint", "RUNNING", tier.TasksOptional())

	// A sink still RUNNING on A is refused before anything is stopped, with the MM2 setting to
	// change read from the checkpoint connector's config in B's Connect config topic.
	running := env.Unique("mm2-running")
	tier.RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": running, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": filepath.Join(t.TempDir(), "running.txt"),
		"topics": topic, "tasks.max": "1"}})
	tier.WaitState(t, wA, running, "RUNNING")
	type hazard struct {
		Check, Key, Message, Fix string
		Refuse                   bool
	}
	// refusedBeforeStop runs `migrate --stop-source` on the running sink and returns its one
	// MirrorMaker 2 hazard, after checking that it refused the sink before anything was
	// stopped. B's Connect REST API is given: the checkpoint connector's status is read there.
	refusedBeforeStop := func() hazard {
		t.Helper()
		healthReport := filepath.Join(t.TempDir(), "health.json")
		cmd := exec.CommandContext(ctx, env.AgentBin, "migrate", "--from-brokers", strings.Join(brokersA, ","), "--from-config-topic", namesA.Config,
			"--from-offsets-topic", namesA.Offsets, "--from-connect-url", wA.URL, "--to-brokers", b.Addr, "--to-connect-url", wB.URL, "--include", running,
			"--mm2-source-alias", "A", "--mm2-target-alias", "B", "--checkpoint-wait", "20s", "--stop-source", "--timeout", "2m", "--report", healthReport)
		cmd.Env = agentB.Env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 1, exit.ExitCode(), "%s", out)
		var status struct {
			Connector struct{ State string }
			Tasks     []struct{ State string }
		}
		require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, wA, http.MethodGet, "/connectors/"+running+"/status", nil)), &status))
		require.Equal(t, "RUNNING", status.Connector.State, "nothing was stopped on A")
		require.Len(t, status.Tasks, 1)
		require.Equal(t, "RUNNING", status.Tasks[0].State)
		hdata, err := os.ReadFile(healthReport)
		require.NoError(t, err)
		var health struct {
			Connectors []struct {
				Outcome string
				Hazards []hazard
			}
		}
		require.NoError(t, json.Unmarshal(hdata, &health), "%s", hdata)
		require.Len(t, health.Connectors, 1)
		require.Equal(t, "skipped", health.Connectors[0].Outcome, "%s", hdata)
		hazards := slices.DeleteFunc(health.Connectors[0].Hazards, func(h hazard) bool { return h.Check != "mm2" })
		require.Len(t, hazards, 1, "%s", hdata) // the checkpoint connector is RUNNING: its status says nothing
		h := hazards[0]
		t.Logf("hazard: %+v", h)
		require.True(t, h.Refuse)
		return h
	}
	h := refusedBeforeStop()
	require.Equal(t, "groups.exclude", h.Key)
	require.Contains(t, h.Message, `"mm2-checkpoint"`)
	require.Contains(t, h.Message, `group "connect-`+running+`"`)
	require.Contains(t, h.Fix, `groups.exclude = console-consumer-.*, __.* on the MirrorCheckpointConnector "mm2-checkpoint"`)
	require.Contains(t, h.Fix, "A->B.groups.exclude = console-consumer-.*, __.*")

	// A groups.exclude with a lookahead, Java's syntax that Go's regexp refuses, which still
	// excludes the running sink's group (it spares only connect-keep-*): refused as MirrorMaker 2
	// reads it, before anything is stopped.
	checkpointConfig["groups.exclude"] = "console-consumer-.*, connect-(?!keep-).*, __.*"
	tier.RestOK(t, wB, http.MethodPut, "/connectors/mm2-checkpoint/config", mm2Config(tier.MirrorCheckpoint, checkpointConfig))
	tier.WaitState(t, wB, "mm2-checkpoint", "RUNNING", tier.TasksOptional())
	h = refusedBeforeStop()
	require.Equal(t, "groups.exclude", h.Key)
	require.Contains(t, h.Message, `its groups.exclude (console-consumer-.*, connect-(?!keep-).*, __.*) matches it`)
	require.Contains(t, h.Fix, `groups.exclude = console-consumer-.*, __.* on the MirrorCheckpointConnector "mm2-checkpoint"`)
	tier.RestOK(t, wA, http.MethodDelete, "/connectors/"+running, nil)

	// The named fix: MM2 then checkpoints connect-* groups.
	checkpointConfig["groups.exclude"] = "console-consumer-.*, __.*"
	tier.RestOK(t, wB, http.MethodPut, "/connectors/mm2-checkpoint/config", mm2Config(tier.MirrorCheckpoint, checkpointConfig))
	tier.WaitState(t, wB, "mm2-checkpoint", "RUNNING")
	require.Len(t, tier.WaitTopic(t, brokersB, remote, 103), 103, "MM2 mirrored A's 100 records after B's 3")
	cp := waitCheckpoint(t, brokersB, policy.CheckpointsTopic(), group, remote, 60)
	waitCheckpoint(t, brokersB, policy.CheckpointsTopic(), "connect-"+chainSink, remote, 60)
	t.Logf("MM2 checkpoint: upstreamOffset %d, offset %d (exact: 63); setup took %s", cp.UpstreamOffset, cp.Offset, time.Since(started).Round(time.Second))

	common := []string{"--from-brokers", strings.Join(brokersA, ","), "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--from-connect-url", wA.URL, "--to-brokers", b.Addr, "--include", sink, "--include", chainSink, "--initial-state", "RUNNING",
		"--mm2-source-alias", "A", "--mm2-target-alias", "B", "--checkpoint-wait", "30s"}
	offsetagent := func(args ...string) (string, string) {
		cmd := exec.CommandContext(ctx, env.AgentBin, args...)
		cmd.Env = agentB.Env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%v\nstdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
		return stdout.String(), stderr.String()
	}

	// --exact finds A's record 59 among MM2's copies on B (timestamp, key, value and headers
	// preserved): the exact offset, 63.
	body, _ := offsetagent(append([]string{"export", "--exact"}, common...)...)
	require.Contains(t, body, `"initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"`+remote+`"},"offset":{"kafka_offset":63}}]`)

	// The migration itself relies on MM2's checkpoint and the offset syncs' bound.
	report := filepath.Join(t.TempDir(), "report.json")
	stdout, _ := offsetagent(append([]string{"migrate", "--sink-offsets", "translate", "--allow-replay", "--no-verify", "--report", report}, common...)...)
	require.Regexp(t, sink+`\s+`+sink+`\s+sink\s+1\s+succeeded`, stdout)
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	type entry struct {
		Name        string
		Translation struct {
			mm2.Report
			NotExact []mm2.PartitionTranslation `json:"not_exact"`
		}
		Rewrites []struct{ Key, Why string } `json:"config_rewrites"`
	}
	var rep struct{ Connectors []entry }
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Len(t, rep.Connectors, 2)
	slices.SortFunc(rep.Connectors, func(a, b entry) int { return strings.Compare(b.Name, a.Name) }) // mm2-sink-… first
	require.Equal(t, sink, rep.Connectors[0].Name)
	tr := rep.Connectors[0].Translation
	require.Equal(t, 1, tr.Partitions)
	require.Zero(t, tr.Missing, "%+v", tr)
	var bound int64
	if tr.Replay == 1 {
		require.NotNil(t, tr.ReplayBound, "the offset syncs bound the replay: %+v", tr.NotExact)
		bound = *tr.ReplayBound
	}
	t.Logf("verdict: %d exact, %d replay, replay_bound %d", tr.Exact, tr.Replay, bound)

	// B's sink runs on the mirrored topic and appends to the same file: A's 60 records, then at
	// most `bound` of them again, then the 40 A's sink never saw, each once, in order.
	require.Contains(t, tier.RestOK(t, wB, http.MethodGet, "/connectors/"+sink+"/config", nil), `"topics":"`+remote+`"`)
	tier.WaitState(t, wB, sink, "RUNNING")
	want := len(first) + len(rest)
	var written []string
	require.Eventually(t, func() bool { written = tier.FileLines(t, sinkOut); return len(written) >= want }, 90*time.Second, 250*time.Millisecond)
	time.Sleep(2 * time.Second) // anything more B's sink would write
	written = tier.FileLines(t, sinkOut)
	unquote := func(vs []string) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = strings.Trim(v, `"`)
		}
		return out
	}
	require.Equal(t, unquote(first), written[:len(first)], "A's sink")
	fromB := written[len(first):]
	replayed := int64(len(fromB) - len(rest))
	require.GreaterOrEqual(t, replayed, int64(0), "no record skipped: %v", fromB)
	require.LessOrEqual(t, replayed, bound, "no more replayed than the verdict says")
	require.Equal(t, unquote(append(first[len(first)-int(replayed):], rest...)), fromB, "B's sink continues in order")
	t.Logf("B's sink delivered %d records again (bound %d)", replayed, bound)

	// The chain sink on B reads A's records as "A.<topic>": the migration put a RegexRouter
	// first in its chain that gives them back their name on A, and said so in the report.
	// Every record, on A and on B, leaves the chain under the same name: "routed-<suffix>".
	require.Equal(t, chainSink, rep.Connectors[1].Name)
	var rewritten []string
	for _, rw := range rep.Connectors[1].Rewrites {
		rewritten = append(rewritten, rw.Key)
	}
	require.Equal(t, []string{"topics", "transforms", "transforms.restoreTopicNamesOfA.type", "transforms.restoreTopicNamesOfA.regex",
		"transforms.restoreTopicNamesOfA.replacement"}, rewritten, "%s", data)
	require.Contains(t, stdout, "rewritten for B: "+chainSink+": transforms: \"hoist,route,tag\" -> \"restoreTopicNamesOfA,hoist,route,tag\"")
	var onB map[string]string
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, wB, http.MethodGet, "/connectors/"+chainSink+"/config", nil)), &onB))
	require.Equal(t, "restoreTopicNamesOfA,hoist,route,tag", onB["transforms"])
	require.Equal(t, `A\.(.*)`, onB["transforms.restoreTopicNamesOfA.regex"])
	tier.WaitState(t, wB, chainSink, "RUNNING")
	valueRE := regexp.MustCompile(`^\{(?:v=(r-\d+), dest=([^,}]*)|dest=([^,}]*), v=(r-\d+))\}$`)
	var chained []string
	require.Eventually(t, func() bool { chained = tier.FileLines(t, chainOut); return len(chained) >= want }, 90*time.Second, 250*time.Millisecond)
	time.Sleep(2 * time.Second) // anything more B's sink would write
	chained = tier.FileLines(t, chainOut)
	seen := map[string]bool{}
	for i, line := range chained {
		m := valueRE.FindStringSubmatch(line)
		require.NotNil(t, m, "line %d %q: the record left the chain without its routed name", i, line)
		v, dest := m[1]+m[4], m[2]+m[3]
		require.Equal(t, routed, dest, "line %d (%s, written on %s): the same destination name on B as on A", i, v, map[bool]string{true: "A", false: "B"}[i < len(first)])
		seen[v] = true
	}
	for _, v := range unquote(append(slices.Clone(first), rest...)) {
		require.True(t, seen[v], "record %s reached the chain's destination", v)
	}
	t.Logf("the chain sink wrote %d lines, all under %q (%d on A); the test took %s", len(chained), routed, len(first), time.Since(started).Round(time.Second))
}

// waitCheckpoint waits until B's checkpoints topic holds a checkpoint of group for partition 0
// of topic with the given upstream offset, and returns it.
func waitCheckpoint(t *testing.T, brokers []string, cpTopic, group, topic string, upstream int64) mm2.Checkpoint {
	t.Helper()
	var found mm2.Checkpoint
	var seen []string
	require.Eventually(t, func() bool {
		seen = nil
		ok := false
		for _, m := range tier.TopicMessages(t, brokers, cpTopic) {
			c, err := mm2.DecodeCheckpoint(m.Key, m.Value)
			require.NoError(t, err, "MM2's checkpoint at offset %d", m.Offset)
			seen = append(seen, fmt.Sprintf("%+v", c))
			if c.Group == group && c.Topic == topic && c.Partition == 0 {
				found, ok = c, c.UpstreamOffset == upstream
			}
		}
		return ok
	}, 90*time.Second, time.Second, "checkpoints seen: %v", seen)
	return found
}
