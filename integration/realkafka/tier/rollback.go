package tier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// sharedB is an Env's cluster B of its own jars ("mig-b"): started by the first test that
// moves connectors to it, shared by the next ones (each with connectors of its own names), and
// stopped after every test.
type sharedB struct {
	once  sync.Once
	b     *realkafka.Broker
	w     *realkafka.Worker
	agent *Agent
	err   error
}

var (
	sharedBMu sync.Mutex
	sharedBs  = map[*Env]*sharedB{}
)

// clusterB is the Env's shared cluster B ("mig-b": a broker, a Connect worker and an agent of
// the Env's jars), started on first use.
func (e *Env) clusterB(ctx context.Context, t testing.TB) (*realkafka.Broker, *realkafka.Worker, *Agent) {
	t.Helper()
	sharedBMu.Lock()
	s := sharedBs[e]
	if s == nil {
		s = &sharedB{}
		sharedBs[e] = s
	}
	sharedBMu.Unlock()
	s.once.Do(func() {
		const name = "mig-b"
		if s.b, s.err = e.StartBroker(ctx, "broker-"+name, e.Lib); s.err != nil {
			return
		}
		e.AtExit(s.b.Stop)
		names := e.ConnectNames(name)
		if s.w, s.err = e.StartWorkerOn(ctx, "worker-"+name, e.Lib, []string{s.b.Addr}, names); s.err != nil {
			return
		}
		e.AtExit(s.w.Stop)
		if s.agent, s.err = e.StartAgentOn(ctx, "agent-"+name, s.b.Addr, names); s.err != nil {
			return
		}
		e.AtExit(s.agent.Stop)
	})
	require.NoError(t, s.err, "cluster B (mig-b)")
	return s.b, s.w, s.agent
}

// RollbackAfterMove is the real-Kafka proof of `offsetagent migrate rollback`: MigrateStopSource's
// busy FileStream source and sink (the sink's topic copied to B over an offset-preserving link)
// are moved to B with --stop-source and verified, and B works on. Then:
//   - `rollback REPORT` (a dry run) says each would roll back with every partition carried, and
//     changes nothing: both stay STOPPED on A and RUNNING on B;
//   - `rollback REPORT --execute`, also naming a third connector that is on A and on B but that
//     the report did not move, refuses that one ("not moved by this report", exit 1) and leaves
//     it on B, and rolls the two back: RUNNING on A, gone from B;
//   - A resumes at B's progress: every line of the source's file is produced once, on A before
//     the move, on B, or on A after the rollback, and every record of the sink's topic is written
//     once into the sink's file, by A, B, then A again (0 lost, and no duplicate, as the report
//     said: every partition carried);
//   - run again, the rollback finds both already rolled back (exit 0).
func RollbackAfterMove(t *testing.T, e *Env) {
	e.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := &migrationClusters{namesA: e.ConnectNames("main"), wA: e.Worker, brokersA: e.Brokers}
	c.b, c.wB, c.agentB = e.clusterB(ctx, t)
	c.brokersB = []string{c.b.Addr}
	p := startBusyPair(t, e, c)
	// A connector on A and on B that the migration does not move.
	hand := e.Unique("rb-hand")
	handCfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"file": e.WriteFile(t, hand+".txt", "h\n"), "topic": hand + "-out", "tasks.max": "1"}
	RestOK(t, c.wA, http.MethodPost, "/connectors", map[string]any{"name": hand, "config": handCfg, "initial_state": "STOPPED"})
	RestOK(t, c.wB, http.MethodPost, "/connectors", map[string]any{"name": hand, "config": handCfg, "initial_state": "STOPPED"})

	cutover := runMigrateStopSource(ctx, t, e, c, p)
	requireMovedOnce(t, c, p)
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, e.AgentBin, args...)
		cmd.Env = c.agentB.Env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			require.NoError(t, err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	code, out := run("migrate", "--verify", "--cutover-report", cutover, "--to-brokers", c.b.Addr, "--verify-timeout", "60s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 partitions of 2 connectors: 2 verified, 0 waiting, 0 mismatch")
	// The link copies to A what B's sink reads (records at the same offsets on both copies).
	recordsB := ValuesFrom("r", 230, 5)
	ProduceTo(t, c.brokersA, p.sinkTopic, recordsB...)

	rollback := []string{"migrate", "rollback", cutover, "--from-brokers", strings.Join(c.brokersA, ","), "--timeout", "60s"}
	code, out = run(rollback...)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 connectors: 0 rolled back, 2 would roll back, 0 refused, 0 failed, 0 kept on B; partitions: 2 carried, 0 not carried, 0 skip")
	require.Contains(t, out, "(a dry run: nothing was changed; --execute rolls back)")
	for _, n := range []string{p.src, p.sink} {
		WaitState(t, c.wA, n, "STOPPED")
		WaitState(t, c.wB, n, "RUNNING")
	}

	report := filepath.Join(t.TempDir(), "rollback.json")
	code, out = run(append(rollback, "--execute", "--include", p.src, "--include", p.sink, "--include", hand, "--report", report)...)
	require.Equal(t, 1, code, out)
	require.Regexp(t, hand+`\s+-\s+-\s+refused\s+-\s+no\s+not moved by this report`, out)
	require.Contains(t, out, "3 connectors: 2 rolled back, 0 would roll back, 1 refused, 0 failed, 0 kept on B; partitions: 2 carried, 0 not carried, 0 skip")
	var rep struct {
		Connectors []struct {
			Name, Outcome string
			DeletedOnB    bool `json:"deleted_on_b"`
			Partitions    []struct {
				Verdict      string
				Replay, Skip *int64
			}
		}
	}
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Len(t, rep.Connectors, 3)
	for _, rc := range rep.Connectors {
		if rc.Name == hand {
			require.Equal(t, "refused", rc.Outcome)
			continue
		}
		require.Equal(t, "rolled_back", rc.Outcome, rc.Name)
		require.True(t, rc.DeletedOnB, rc.Name)
		require.Len(t, rc.Partitions, 1, rc.Name)
		require.Equal(t, "carried", rc.Partitions[0].Verdict, rc.Name)
		require.True(t, rc.Partitions[0].Replay == nil || *rc.Partitions[0].Replay == 0, "%s: the report announces no replay", rc.Name)
		require.True(t, rc.Partitions[0].Skip == nil || *rc.Partitions[0].Skip == 0, "%s: the report announces no skip", rc.Name)
	}

	// A runs both again; B holds neither, and the one not moved is left as it was on A and B.
	for _, n := range []string{p.src, p.sink} {
		WaitState(t, c.wA, n, "RUNNING")
		status, body := Rest(t, c.wB, http.MethodGet, "/connectors/"+n, nil)
		require.Equal(t, http.StatusNotFound, status, "%s on B: %s", n, body)
	}
	var onB []string
	require.NoError(t, json.Unmarshal([]byte(RestOK(t, c.wB, http.MethodGet, "/connectors", nil)), &onB))
	require.NotContains(t, onB, p.src)
	require.NotContains(t, onB, p.sink)
	require.Contains(t, onB, hand)
	WaitState(t, c.wA, hand, "STOPPED")
	WaitState(t, c.wB, hand, "STOPPED")

	// A works on from B's progress: every line and record once, none lost.
	last, _ := Lines("a", 225, 5)
	AppendFile(t, p.file, last)
	recordsA := ValuesFrom("r", 235, 5)
	ProduceTo(t, c.brokersA, p.sinkTopic, recordsA...)
	all, _ := Lines("a", 0, 230)
	var want []string
	for _, l := range strings.Split(strings.TrimSuffix(all, "\n"), "\n") {
		want = append(want, JSONString(l))
	}
	var produced []string
	require.Eventually(t, func() bool {
		produced = append(TopicValues(t, c.brokersA, p.srcTopic), TopicValues(t, c.brokersB, p.srcTopic)...)
		return len(produced) >= len(want) && slices.Contains(produced, want[len(want)-1])
	}, 90*time.Second, 500*time.Millisecond, "lines produced on A, B, then A")
	// A FileStream source produces its file in order: a line produced twice came before the last.
	slices.Sort(produced)
	slices.Sort(want)
	require.Equal(t, want, produced, "every line produced once: none lost, none twice")

	var records []string
	for _, v := range ValuesFrom("r", 0, 240) {
		records = append(records, strings.Trim(v, `"`))
	}
	var written []string
	require.Eventually(t, func() bool {
		written = FileLines(t, p.sinkOut)
		return len(written) >= len(records) && slices.Contains(written, records[len(records)-1])
	}, 90*time.Second, 500*time.Millisecond, "records written by A's, B's, then A's sink")
	require.Equal(t, records, written, "every record written once, in order: none lost, none twice")

	code, out = run(append(rollback, "--execute")...)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "already rolled back")
}
