package realkafka_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// TestSinkResumesAfterLeaderEpochMove is the real-Kafka proof that sink offsets are committed as
// Connect commits them, with no leader epoch, so a sink resumes where it was born: on a
// broker of its own, records 0-9 of a topic are written in leader epoch 0 and, after a
// restart, records 10-49 in a later epoch. Three FileStream sinks are born at offset 30: one
// created by the agent, one moved there from the shared cluster by `offsetagent migrate`, and a
// twin created Connect's way (POST STOPPED, then PATCH /connectors/NAME/offsets). Their groups'
// committed entries (offset, leader epoch, metadata) are the twin's, and each sink, once
// resumed, writes exactly records 30-49. With a committed epoch 0 (kafka-go's commit) the
// worker's consumer takes offset 30 for a truncation of epoch 0, which ended at offset 10, and
// replays records 10-49.
func TestSinkResumesAfterLeaderEpochMove(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// C: a broker of its own (the restart would disturb the shared one's other users).
	d, err := env.Subdir("broker-epoch")
	require.NoError(t, err)
	b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: env.Lib, Dir: d})
	require.NoError(t, err)
	env.StopAfter(t, b.Stop)
	brokersC := []string{b.Addr}
	topic := env.Unique("epoch-in")
	tier.CreateTopicOn(t, brokersC, topic, 1)
	tier.ProduceTo(t, brokersC, topic, tier.ValuesFrom("m", 0, 10)...)
	require.NoError(t, b.Restart(ctx))
	tier.ProduceTo(t, brokersC, topic, tier.ValuesFrom("m", 10, 40)...)
	epochs := recordEpochs(t, brokersC, topic, 50)
	require.Equal(t, int32(0), epochs[9], "records 0-9 in leader epoch 0")
	require.Greater(t, epochs[10], int32(0), "records 10-49 in a later leader epoch")
	t.Logf("leader epochs: records 0-9 in %d, 10-49 in %d", epochs[0], epochs[10])

	// C's Connect cluster and agent, started after the restart.
	names := env.ConnectNames("epoch")
	d, err = env.Subdir("worker-epoch")
	require.NoError(t, err)
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: env.Lib, Dir: d, Brokers: brokersC,
		GroupID: names.Group, ConfigTopic: names.Config, OffsetsTopic: names.Offsets, StatusTopic: names.Status})
	require.NoError(t, err)
	env.StopAfter(t, w.Stop)
	agentC, err := env.StartAgent(ctx, "agent-epoch", map[string]string{
		"OFFSETAGENT_BROKERS":       b.Addr,
		"OFFSETAGENT_CONFIG_TOPIC":  names.Config,
		"OFFSETAGENT_OFFSETS_TOPIC": names.Offsets,
	})
	require.NoError(t, err)

	at30 := []any{map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0},
		"offset": map[string]any{"kafka_offset": 30}}}
	sinkConfig := func(name string) map[string]string {
		return map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"topics": topic, "file": filepath.Join(env.Dir, "files", name+".out"), "tasks.max": "1"}
	}
	_, err = env.Subdir("files")
	require.NoError(t, err)

	// The twin, Connect's way.
	twin := env.Unique("epoch-twin")
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": twin, "config": sinkConfig(twin), "initial_state": "STOPPED"})
	tier.RestOK(t, w, http.MethodPatch, "/connectors/"+twin+"/offsets", map[string]any{"offsets": at30})

	// The agent's.
	byAgent := env.Unique("epoch-agent")
	agentC.Create(t, map[string]any{"name": byAgent, "config": sinkConfig(byAgent), "initial_state": "STOPPED", "initial_offsets": at30})

	// Migrated: a stopped sink on the shared cluster (A) at offset 30 of its own copy of the
	// topic, moved to C by `offsetagent migrate`.
	moved := env.Unique("epoch-moved")
	env.CreateTopic(t, topic, 1, false)
	env.Produce(t, topic, tier.ValuesFrom("m", 0, 50)...)
	env.Agent.Create(t, map[string]any{"name": moved, "config": sinkConfig(moved), "initial_state": "STOPPED", "initial_offsets": at30})
	cmd := exec.CommandContext(ctx, env.AgentBin, "migrate",
		"--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", env.ConnectNames("main").Config,
		"--from-offsets-topic", env.ConnectNames("main").Offsets, "--from-connect-url", env.Worker.URL,
		"--to-brokers", b.Addr, "--to-connect-url", w.URL,
		"--include", moved, "--report", filepath.Join(t.TempDir(), "report.json"), "--no-verify")
	cmd.Env = agentC.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Regexp(t, moved+`\s+`+moved+`\s+sink\s+1\s+succeeded`, stdout.String())

	// The groups' committed entries are the twin's: offset 30, no leader epoch, no metadata.
	want := kafkatest.GroupEntries(t, brokersC, "connect-"+twin)
	require.Equal(t, map[string]string{topic + "/0": `offset=30 epoch=-1 metadata=""`}, want, "Connect's PATCH")
	require.Equal(t, want, kafkatest.GroupEntries(t, brokersC, "connect-"+byAgent), "the agent's sink")
	require.Equal(t, want, kafkatest.GroupEntries(t, brokersC, "connect-"+moved), "the migrated sink")

	// Each sink, resumed, writes exactly records 30-49.
	wantLines := make([]string, 20)
	for i := range wantLines {
		wantLines[i] = fmt.Sprintf("m-%02d", 30+i)
	}
	for _, name := range []string{twin, byAgent, moved} {
		tier.WaitState(t, w, name, "STOPPED")
		tier.RestOK(t, w, http.MethodPut, "/connectors/"+name+"/resume", nil)
	}
	for _, name := range []string{twin, byAgent, moved} {
		out := sinkConfig(name)["file"]
		var got []string
		require.Eventually(t, func() bool { got = tier.FileLines(t, out); return len(got) >= len(wantLines) },
			90*time.Second, 250*time.Millisecond, "sink %s wrote %d lines", name, len(got))
		require.Equal(t, wantLines, got, "sink %s: records 30-49, none replayed", name)
	}
}

// recordEpochs returns the partition leader epoch of each of the first n records of partition
// 0 of topic, by offset.
func recordEpochs(t *testing.T, brokers []string, topic string, n int) []int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	epochs := make([]int32, n)
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records of %s", seen, n, topic)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < int64(n) {
				epochs[r.Offset] = r.LeaderEpoch
				seen++
			}
		})
	}
	return epochs
}
