package tier

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// Migration says how MigrateStopSource sets up its two clusters.
type Migration struct {
	// LibB is the jar folder of cluster B's broker and worker; empty is the Env's (Lib, which
	// is known only once the peers are up: RequirePeers).
	LibB string
	// SharedWorkerA makes the Env's worker cluster A (one JVM fewer); otherwise A is a Connect
	// cluster of its own on the Env's broker.
	SharedWorkerA bool
}

// MigrateStopSource is the real-Kafka proof of moving running connectors between Connect
// clusters with nothing lost or sent twice: two brokers with a Connect worker each (A:
// the Env's broker and version, B: the jars m.LibB); a FileStream source and a FileStream sink
// running on A are moved with `offsetagent migrate --stop-source` while A's tasks are still busy,
// and B's worker runs them from exactly the offsets A's tasks had reached: every line of the
// source's file is produced once, on A or on B, and every record of the sink's topic is written
// once, by A's sink or B's.
func MigrateStopSource(t *testing.T, e *Env, m Migration) {
	e.RequirePeers(t)
	if m.LibB == "" {
		m.LibB = e.Lib
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := startMigrationClusters(ctx, t, e, m)
	p := startBusyPair(t, e, c)
	cutover := runMigrateStopSource(ctx, t, e, c, p)
	requireMovedOnce(t, c, p)
	verifyCutover(ctx, t, e, c.agentB, c.b.Addr, cutover, c.wA, c.wB, c.namesA)
}

// migrationClusters are MigrateStopSource's two Connect clusters.
type migrationClusters struct {
	namesA             Connect
	wA, wB             *realkafka.Worker
	b                  *realkafka.Broker
	agentB             *Agent
	brokersA, brokersB []string
}

// startMigrationClusters starts what MigrateStopSource moves between: A, the shared broker
// with the shared worker or a Connect cluster of its own; B, a broker, a worker and an agent
// of their own, shared with RollbackAfterMove when they run the Env's jars (clusterB).
func startMigrationClusters(ctx context.Context, t *testing.T, e *Env, m Migration) *migrationClusters {
	c := &migrationClusters{namesA: e.ConnectNames("main"), wA: e.Worker, brokersA: e.Brokers}
	if !m.SharedWorkerA {
		c.namesA = e.ConnectNames("mig-a")
		var err error
		c.wA, err = e.StartWorker(ctx, "worker-mig-a", c.namesA)
		require.NoError(t, err)
		StopAfter(t, c.wA.Stop)
	}
	if m.LibB == e.Lib {
		c.b, c.wB, c.agentB = e.clusterB(ctx, t)
	} else {
		c.b, c.wB, c.agentB = e.StartClusterB(ctx, t, "mig-b", m.LibB)
	}
	c.brokersB = []string{c.b.Addr}
	return c
}

// busyPair is a FileStream source and sink running on A, with what they read.
type busyPair struct {
	src, sink, file, srcTopic, sinkTopic, sinkOut string
	// lines are the source file's lines, and records the sink topic's values, so far.
	lines   string
	records []string
}

// startBusyPair starts on A a source reading a file and a sink writing one, both running,
// and gives them more work while the migration stops them: their final commits decide.
func startBusyPair(t *testing.T, e *Env, c *migrationClusters) *busyPair {
	p := &busyPair{src: e.Unique("mig-src"), sink: e.Unique("mig-sink")}
	first, _ := Lines("a", 0, 20)
	p.file = e.WriteFile(t, p.src+".txt", first)
	p.srcTopic, p.sinkTopic = p.src+"-out", p.sink+"-in"
	// Both workers run on this host: B's sink appends to the file A's sink wrote.
	p.sinkOut = filepath.Join(t.TempDir(), "sink.txt")
	for _, brokers := range [][]string{c.brokersA, c.brokersB} {
		CreateTopicOn(t, brokers, p.sinkTopic, 1)
	}
	recordsA := ValuesFrom("r", 0, 30)
	ProduceTo(t, c.brokersA, p.sinkTopic, recordsA...)
	RestOK(t, c.wA, http.MethodPost, "/connectors", map[string]any{"name": p.src, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": p.file, "topic": p.srcTopic, "tasks.max": "1"}})
	RestOK(t, c.wA, http.MethodPost, "/connectors", map[string]any{"name": p.sink, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": p.sinkOut, "topics": p.sinkTopic, "tasks.max": "1"}})
	WaitState(t, c.wA, p.src, "RUNNING")
	WaitState(t, c.wA, p.sink, "RUNNING")
	require.NotEmpty(t, WaitTopic(t, c.brokersA, p.srcTopic, 1))
	// More work arrives while the migration stops the tasks: their final commits decide.
	more, _ := Lines("a", 20, 200)
	AppendFile(t, p.file, more)
	recordsA2 := ValuesFrom("r", 30, 200)
	ProduceTo(t, c.brokersA, p.sinkTopic, recordsA2...)
	p.lines, p.records = first+more, append(recordsA, recordsA2...)

	// B's copy of the sink's topic holds the same records at the same offsets (an
	// offset-preserving link), as --sink-offsets copy requires.
	ProduceTo(t, c.brokersB, p.sinkTopic, p.records...)
	return p
}

// runMigrateStopSource moves the pair with `offsetagent migrate --stop-source`, and returns
// the cutover report's path once B's worker runs both.
func runMigrateStopSource(ctx context.Context, t *testing.T, e *Env, c *migrationClusters, p *busyPair) (cutover string) {
	cutover = filepath.Join(t.TempDir(), "cutover.json")
	cmd := exec.CommandContext(ctx, e.AgentBin, "migrate",
		"--from-brokers", strings.Join(c.brokersA, ","), "--from-config-topic", c.namesA.Config, "--from-offsets-topic", c.namesA.Offsets,
		"--from-connect-url", c.wA.URL, "--to-brokers", c.b.Addr, "--to-connect-url", c.wB.URL,
		"--include", p.src+"|"+p.sink, "--stop-source", "--verify-timeout", "2s", "--cutover-report", cutover, "--report", filepath.Join(t.TempDir(), "report.json"))
	cmd.Env = c.agentB.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Regexp(t, p.src+`\s+`+p.src+`\s+source\s+1\s+succeeded`, stdout.String())
	require.Regexp(t, p.sink+`\s+`+p.sink+`\s+sink\s+1\s+succeeded`, stdout.String())

	WaitState(t, c.wA, p.src, "STOPPED")
	WaitState(t, c.wA, p.sink, "STOPPED")
	// B's connectors run, as they did on A.
	WaitState(t, c.wB, p.src, "RUNNING")
	WaitState(t, c.wB, p.sink, "RUNNING")
	return cutover
}

// requireMovedOnce gives B's connectors more work and requires every line produced once, on A
// or on B, and every record written once in the sink's file, by A or by B.
func requireMovedOnce(t *testing.T, c *migrationClusters, p *busyPair) {
	last, _ := Lines("a", 220, 5)
	AppendFile(t, p.file, last)
	recordsB := ValuesFrom("r", 230, 5)
	ProduceTo(t, c.brokersB, p.sinkTopic, recordsB...)

	allLines := strings.Split(strings.TrimSuffix(p.lines+last, "\n"), "\n")
	var produced []string
	require.Eventually(t, func() bool {
		produced = append(TopicValues(t, c.brokersA, p.srcTopic), TopicValues(t, c.brokersB, p.srcTopic)...)
		return len(produced) >= len(allLines)
	}, 90*time.Second, 500*time.Millisecond, "lines produced on A and B")
	want := make([]string, len(allLines))
	for i, l := range allLines {
		want[i] = JSONString(l)
	}
	require.Equal(t, want, produced, "no line produced twice, none skipped")
	t.Logf("source: %d lines produced on A, %d on B", len(TopicValues(t, c.brokersA, p.srcTopic)), len(TopicValues(t, c.brokersB, p.srcTopic)))
	var allRecords []string
	for _, v := range append(p.records, recordsB...) {
		allRecords = append(allRecords, strings.Trim(v, `"`)) // the sink writes the string itself
	}
	var written []string
	require.Eventually(t, func() bool {
		written = FileLines(t, p.sinkOut)
		return len(written) >= len(allRecords)
	}, 90*time.Second, 500*time.Millisecond, "records written by A's and B's sinks")
	require.Equal(t, allRecords, written, "no record written twice, none skipped")
}
