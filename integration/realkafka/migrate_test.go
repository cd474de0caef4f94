package realkafka_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// TestMigrateStopSource is issue 15's real-Kafka proof: two brokers with a Connect worker each;
// a FileStream source and a FileStream sink running on A are moved with `offsetagent migrate
// --stop-source` while A's tasks are still busy, and B's worker runs them from exactly the
// offsets A's tasks had reached: every line of the source's file is produced once, on A or on
// B, and every record of the sink's topic is written once, by A's sink or B's.
func TestMigrateStopSource(t *testing.T) {
	requirePeers(t)
	if peers.lib == "" {
		t.Skip("needs the jars to start a second broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// A: the shared broker, a Connect cluster of its own.
	namesA := connectNames("mig-a")
	wA, err := startWorker(ctx, "worker-mig-a", namesA)
	require.NoError(t, err)
	brokersA := peers.brokers

	// B: a broker, a worker and an agent of their own.
	b, wB, agentB := startClusterB(ctx, t, "mig-b")
	brokersB := []string{b.Addr}

	// On A: a source reading a file and a sink writing one, both running and busy.
	src, sink := unique("mig-src"), unique("mig-sink")
	first, _ := lines("a", 0, 20)
	file := writeFile(t, src+".txt", first)
	srcTopic, sinkTopic := src+"-out", sink+"-in"
	// Both workers run on this host: B's sink appends to the file A's sink wrote.
	sinkOut := filepath.Join(t.TempDir(), "sink.txt")
	for _, brokers := range [][]string{brokersA, brokersB} {
		createTopicOn(t, brokers, sinkTopic, 1)
	}
	recordsA := valuesFrom("r", 0, 30)
	produceTo(t, brokersA, sinkTopic, recordsA...)
	restOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": src, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": srcTopic, "tasks.max": "1"}})
	restOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": sink, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": sinkOut, "topics": sinkTopic, "tasks.max": "1"}})
	waitState(t, wA, src, "RUNNING")
	waitState(t, wA, sink, "RUNNING")
	require.NotEmpty(t, waitTopic(t, brokersA, srcTopic, 1))
	// More work arrives while the migration stops the tasks: their final commits decide.
	more, _ := lines("a", 20, 200)
	appendFile(t, file, more)
	recordsA2 := valuesFrom("r", 30, 200)
	produceTo(t, brokersA, sinkTopic, recordsA2...)

	// B's copy of the sink's topic holds the same records at the same offsets (an
	// offset-preserving link), as --sink-offsets copy requires.
	produceTo(t, brokersB, sinkTopic, append(recordsA, recordsA2...)...)

	cmd := exec.CommandContext(ctx, peers.agentBin, "migrate",
		"--from-brokers", strings.Join(brokersA, ","), "--from-config-topic", namesA.config, "--from-offsets-topic", namesA.offsets,
		"--from-connect-url", wA.URL, "--to-brokers", b.Addr, "--to-connect-url", wB.URL,
		"--include", src+"|"+sink, "--stop-source", "--report", filepath.Join(t.TempDir(), "report.json"))
	cmd.Env = agentB.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Regexp(t, src+`\s+`+src+`\s+source\s+1\s+succeeded`, stdout.String())
	require.Regexp(t, sink+`\s+`+sink+`\s+sink\s+1\s+succeeded`, stdout.String())

	waitState(t, wA, src, "STOPPED")
	waitState(t, wA, sink, "STOPPED")
	// B's connectors run, as they did on A.
	waitState(t, wB, src, "RUNNING")
	waitState(t, wB, sink, "RUNNING")
	last, _ := lines("a", 220, 5)
	appendFile(t, file, last)
	recordsB := valuesFrom("r", 230, 5)
	produceTo(t, brokersB, sinkTopic, recordsB...)

	// Every line once, on A or on B; every record once in the sink's file, by A or by B.
	allLines := strings.Split(strings.TrimSuffix(first+more+last, "\n"), "\n")
	var produced []string
	require.Eventually(t, func() bool {
		produced = append(topicValues(t, brokersA, srcTopic), topicValues(t, brokersB, srcTopic)...)
		return len(produced) >= len(allLines)
	}, 90*time.Second, 500*time.Millisecond, "lines produced on A and B")
	want := make([]string, len(allLines))
	for i, l := range allLines {
		want[i] = jsonString(l)
	}
	require.Equal(t, want, produced, "no line produced twice, none skipped")
	t.Logf("source: %d lines produced on A, %d on B", len(topicValues(t, brokersA, srcTopic)), len(topicValues(t, brokersB, srcTopic)))
	var allRecords []string
	for _, v := range append(append(recordsA, recordsA2...), recordsB...) {
		allRecords = append(allRecords, strings.Trim(v, `"`)) // the sink writes the string itself
	}
	var written []string
	require.Eventually(t, func() bool {
		written = fileLines(t, sinkOut)
		return len(written) >= len(allRecords)
	}, 90*time.Second, 500*time.Millisecond, "records written by A's and B's sinks")
	require.Equal(t, allRecords, written, "no record written twice, none skipped")
}

// startClusterB starts a second Kafka cluster: a broker, a Connect worker on it and an agent
// writing to that worker's topics, all stopped after the tests.
func startClusterB(ctx context.Context, t *testing.T, name string) (*realkafka.Broker, *realkafka.Worker, *agentProc) {
	t.Helper()
	d, err := subdir("broker-" + name)
	require.NoError(t, err)
	b, err := realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: peers.lib, Dir: d})
	require.NoError(t, err)
	atExit(b.Stop)
	names := connectNames(name)
	d, err = subdir("worker-" + name)
	require.NoError(t, err)
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: peers.lib, Dir: d, Brokers: []string{b.Addr},
		GroupID: names.group, ConfigTopic: names.config, OffsetsTopic: names.offsets, StatusTopic: names.status})
	require.NoError(t, err)
	atExit(w.Stop)
	ag, err := startAgent(ctx, "agent-"+name, map[string]string{
		"OFFSETAGENT_BROKERS":       b.Addr,
		"OFFSETAGENT_CONFIG_TOPIC":  names.config,
		"OFFSETAGENT_OFFSETS_TOPIC": names.offsets,
	})
	require.NoError(t, err)
	return b, w, ag
}

// valuesFrom returns n JSON string values "<prefix>-<i>" from first.
func valuesFrom(prefix string, first, n int) []string {
	s, _ := lines(prefix, first, n)
	out := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range out {
		out[i] = jsonString(out[i])
	}
	return out
}

func createTopicOn(t *testing.T, brokers []string, topic string, partitions int) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	_, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	require.NoError(t, err)
}

func produceTo(t *testing.T, brokers []string, topic string, values ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, msgs...))
}

// topicValues returns the values of partition 0 of topic on brokers (none when it does not
// exist yet).
func topicValues(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	var out []string
	for _, m := range topicMessages(t, brokers, topic) {
		out = append(out, string(m.Value))
	}
	return out
}

// topicMessages returns the records of partition 0 of topic on brokers (none when it does not
// exist yet).
func topicMessages(t *testing.T, brokers []string, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil || len(lo.Topics[topic]) == 0 || lo.Topics[topic][0].Error != nil || lo.Topics[topic][0].LastOffset == 0 {
		return nil
	}
	end := lo.Topics[topic][0].LastOffset
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []kafka.Message
	for {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err)
		out = append(out, m)
		if m.Offset+1 >= end {
			return out
		}
	}
}

// waitTopic waits until topic holds at least n records.
func waitTopic(t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	var vals []string
	require.Eventually(t, func() bool { vals = topicValues(t, brokers, topic); return len(vals) >= n }, 90*time.Second, 250*time.Millisecond)
	return vals
}

// fileLines returns the lines of a FileStream sink's file (none before it exists).
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return slices.Clip(strings.Split(s, "\n"))
}
