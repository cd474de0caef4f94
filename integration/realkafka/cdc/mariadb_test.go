package cdc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
)

// binlogChange is one Debezium MariaDB change event as the JsonConverter with schemas writes
// it: its row, and where its row event is in the binary log.
type binlogChange struct {
	Op     string         `json:"op"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Source struct {
		File     string `json:"file"`
		Pos      int64  `json:"pos"`
		Row      int64  `json:"row"`
		GTID     string `json:"gtid"`
		Snapshot string `json:"snapshot"`
	} `json:"source"`
}

// at is the change event's identity: its row event's binlog file and position, and its row in
// the event. A change produced twice has it twice.
func (c binlogChange) at() string {
	return fmt.Sprintf("%s/%d/%d", c.Source.File, c.Source.Pos, c.Source.Row)
}

// summary is the change as "op id v".
func (c binlogChange) summary() string {
	row := c.After
	if c.Op == "d" {
		row = c.Before
	}
	return fmt.Sprintf("%s %v %v", c.Op, row["id"], row["v"])
}

// mariadbConfig is a Debezium MariaDB source config for the tables db.table and db.probe (see
// waitStreaming), with topic prefix prefix and binlog client id serverID (unique per
// connector): the database's schema only (snapshot.mode=no_data, no rows), no schema change
// topic, the schema history on A's Kafka cluster, change events in JSON with schemas.
func mariadbConfig(m *realkafka.MariaDB, db, table, prefix string, serverID int) map[string]string {
	return map[string]string{
		"connector.class":        "io.debezium.connector.mariadb.MariaDbConnector",
		"tasks.max":              "1",
		"database.hostname":      "127.0.0.1",
		"database.port":          fmt.Sprint(m.Port),
		"database.user":          "root",
		"database.server.id":     fmt.Sprint(serverID),
		"topic.prefix":           prefix,
		"database.include.list":  db,
		"table.include.list":     db + "." + table + "," + db + ".probe",
		"snapshot.mode":          "no_data",
		"include.schema.changes": "false",
		"schema.history.internal.kafka.bootstrap.servers": env.Broker.Addr,
		"schema.history.internal.kafka.topic":             prefix + "-history",
		"key.converter":                                   "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                                 "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":                    "true",
		"value.converter.schemas.enable":                  "true",
	}
}

// waitStreaming waits until connector name streams the binary log: it inserts a row into
// db.probe every half second until the connector has produced one. (With snapshot.mode=no_data
// a RUNNING connector may still be reading the schema and the binlog position it starts from,
// and commits no offset before its first record.)
func waitStreaming(t *testing.T, m *realkafka.MariaDB, db, name string) {
	t.Helper()
	topic := name + "." + db + ".probe"
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := m.Query(ctx, db, "INSERT INTO probe (note) VALUES ('"+name+"')"); err != nil {
			return false
		}
		got, err := readPayloads[binlogChange](env.Broker.Addr, topic)
		return err == nil && len(got) > 0
	}, 2*time.Minute, 500*time.Millisecond, "%s streams the binary log", name)
}

// mdbExec runs statements on MariaDB's database db ("" for none).
func mdbExec(t *testing.T, m *realkafka.MariaDB, db, stmts string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := m.Query(ctx, db, stmts)
	require.NoError(t, err)
	return out
}

// binlogChanges reads the change events of topic on A's broker.
func binlogChanges(t *testing.T, topic string) []binlogChange {
	t.Helper()
	out, err := readPayloads[binlogChange](env.Broker.Addr, topic)
	require.NoError(t, err)
	return out
}

// waitBinlogChanges waits until topic holds at least n change events and returns them.
func waitBinlogChanges(t *testing.T, topic string, n int) []binlogChange {
	t.Helper()
	var out []binlogChange
	require.Eventually(t, func() bool {
		got, err := readPayloads[binlogChange](env.Broker.Addr, topic)
		out = got
		return err == nil && len(got) >= n
	}, 90*time.Second, 200*time.Millisecond, "%s holds %d change events", topic, n)
	return out
}

// sourceOffset is connector name's one source offset on w (GET /connectors/NAME/offsets), once
// it has one.
func sourceOffset(t *testing.T, w *realkafka.Worker, name string) map[string]any {
	t.Helper()
	var o map[string]any
	require.Eventually(t, func() bool {
		var ok bool
		o, ok = offsetOf(w, name)
		return ok
	}, 90*time.Second, 250*time.Millisecond, "%s has committed an offset", name)
	return o
}

// offsetOf is sourceOffset for the conditions of require.Eventually: false while there is none.
func offsetOf(w *realkafka.Worker, name string) (map[string]any, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, body, err := w.Do(ctx, http.MethodGet, "/connectors/"+name+"/offsets", nil)
	var got struct {
		Offsets []struct {
			Offset map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err != nil || json.Unmarshal(body, &got) != nil || len(got.Offsets) != 1 {
		return nil, false
	}
	return got.Offsets[0].Offset, true
}

// verifyUntilDecided runs migrate --verify on the cutover report until no partition is
// waiting, and returns the report, migrate's output and its exit status.
func verifyUntilDecided(t *testing.T, ctx context.Context, vars []string, cutoverPath string) (cutover.Cutover, string, int) {
	t.Helper()
	var out []byte
	var cut cutover.Cutover
	code := -1
	require.Eventually(t, func() bool {
		cmd := exec.CommandContext(ctx, env.AgentBin, "migrate", "--verify", "--cutover-report", cutoverPath, "--to-brokers", env.Broker.Addr,
			"--verify-timeout", "5s")
		cmd.Env = vars
		out, _ = cmd.CombinedOutput()
		code = cmd.ProcessState.ExitCode()
		data, err := os.ReadFile(cutoverPath)
		if err != nil || json.Unmarshal(data, &cut) != nil {
			return false
		}
		return cut.Counts[cutover.VerdictWaiting] == 0
	}, 90*time.Second, time.Second, "the verification decides every connector")
	t.Logf("migrate --verify (exit %d):\n%s", code, out)
	return cut, string(out), code
}

// verdictsOf is each connector's one partition in the cutover report, by name.
func verdictsOf(t *testing.T, cut cutover.Cutover) map[string]*cutover.Partition {
	t.Helper()
	out := map[string]*cutover.Partition{}
	for _, cc := range cut.Connectors {
		require.Len(t, cc.Partitions, 1, cc.Name)
		out[cc.Name] = cc.Partitions[0]
	}
	return out
}

// mariadbMove is what the MariaDB cases share: the server, its database, and cluster B
// (clusterBOnA).
type mariadbMove struct {
	m      *realkafka.MariaDB
	db     string
	wB     *realkafka.Worker
	agentB *tier.Agent
}

// TestMariaDBMoved moves Debezium MariaDB source connectors from cluster A to B, a second
// Connect cluster on A's Kafka cluster (clusterBOnA), where A's records are there to be told
// from B's. The MariaDB server (Debian's mariadb-server) writes a row-based binary log with
// GTIDs, which every connector reads with a client id of its own.
func TestMariaDBMoved(t *testing.T) {
	m := env.RequireMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	// B and the worker of A the second case kills (a Connect cluster of its own on A's Kafka
	// cluster) start side by side.
	namesK := env.ConnectNames("mdbk")
	var wK *realkafka.Worker
	errK := make(chan error, 1)
	go func() {
		var err error
		wK, err = env.StartTestWorkerWith(ctx, t, "worker-mdbk", namesK, map[string]string{"session.timeout.ms": fmt.Sprint(mdbkSession.Milliseconds())})
		errK <- err
	}()
	wB, agentB := startClusterBOnA(t, ctx)
	require.NoError(t, <-errK)
	t.Logf("cluster B and A's second worker started in %s", time.Since(started).Round(time.Second))
	mv := mariadbMove{m: m, db: "mdb_" + env.Run, wB: wB, agentB: agentB}
	mdbExec(t, m, "", "CREATE DATABASE "+mv.db+";\n"+
		"CREATE TABLE "+mv.db+".items (id int PRIMARY KEY, v int NOT NULL, note varchar(64) NOT NULL);\n"+
		"CREATE TABLE "+mv.db+".bulk (id int PRIMARY KEY, v int NOT NULL, note varchar(64) NOT NULL);\n"+
		"CREATE TABLE "+mv.db+".probe (id int AUTO_INCREMENT PRIMARY KEY, note varchar(64) NOT NULL);")
	t.Run("stop-source", func(t *testing.T) { mariadbStopSource(t, ctx, mv) })
	t.Run("worker-killed-mid-transaction", func(t *testing.T) { mariadbKilled(t, ctx, mv, wK, namesK) })
	t.Logf("took %s", time.Since(started).Round(time.Second))
}

// deleteAfter deletes connector name on each worker when t ends.
func deleteAfter(t *testing.T, name string, workers ...*realkafka.Worker) {
	t.Cleanup(func() {
		for _, w := range workers {
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, _, _ = w.Do(rctx, http.MethodDelete, "/connectors/"+name, nil)
			cancel()
		}
	})
}

// mariadbStopSource: two connectors move with migrate --stop-source. The one placed at A's
// offset is RUNNING on B, produces the row inserted after the cutover and nothing A had
// produced (every change on its topic exactly once), and migrate --verify says verified with
// evidence "records". The other's offset on A was set back to before its last transaction (a
// wrong placement its offsets cannot show: B holds what A had): B produces that transaction
// again, and the verification says mismatch with evidence "records", naming the offset A had
// committed before it was set back.
func mariadbStopSource(t *testing.T, ctx context.Context, mv mariadbMove) {
	m, db, w, wB := mv.m, mv.db, env.Worker, mv.wB
	good, early := "cdc-"+env.Run+"-mgood", "cdc-"+env.Run+"-mearly"
	for i, name := range []string{good, early} {
		tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": mariadbConfig(m, db, "items", name, 5401+i)})
		deleteAfter(t, name, wB, w)
	}
	for _, name := range []string{good, early} {
		tier.WaitState(t, w, name, "RUNNING")
		waitStreaming(t, m, db, name)
	}
	topic := func(name string) string { return name + "." + db + ".items" }
	mdbExec(t, m, db, "BEGIN;\nINSERT INTO items VALUES (1, 1, 'a'), (2, 1, 'b');\nCOMMIT;")
	waitBinlogChanges(t, topic(early), 2)
	// early's offset once it has produced the first transaction, read after a stop (the
	// stop commits it).
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+early+"/stop", nil)
	tier.WaitState(t, w, early, "STOPPED")
	afterTx1 := sourceOffset(t, w, early)
	t.Logf("%s's offset after the first transaction: %s", early, mustJSON(t, afterTx1))
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+early+"/resume", nil)
	tier.WaitState(t, w, early, "RUNNING")
	mdbExec(t, m, db, "BEGIN;\nUPDATE items SET v = 2 WHERE id = 1;\nINSERT INTO items VALUES (3, 1, 'c');\nCOMMIT;")
	for _, name := range []string{good, early} {
		for _, c := range waitBinlogChanges(t, topic(name), 4) {
			t.Logf("%s on A: %s at %s gtid %s", name, c.summary(), c.at(), c.Source.GTID)
		}
	}

	// early's offset on A is set back to after the first transaction, as a wrong placement
	// would.
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+early+"/stop", nil)
	tier.WaitState(t, w, early, "STOPPED")
	afterTx2 := sourceOffset(t, w, early)
	tier.RestOK(t, w, http.MethodPatch, "/connectors/"+early+"/offsets",
		map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"server": early}, "offset": afterTx1}}})

	a := env.Broker.Addr
	cutoverPath := filepath.Join(t.TempDir(), "cutover.json")
	code, rep := migrateExit(t, ctx, mv.agentB.Env, "--from-brokers", a, "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--from-connect-url", w.URL, "--to-brokers", a, "--to-connect-url", wB.URL, "--stop-source", "--timeout", "2m",
		"--include", good+"|"+early, "--initial-state", "RUNNING", "--no-verify", "--cutover-report", cutoverPath)
	require.Equal(t, 0, code)
	for _, e := range rep.Connectors {
		require.Equal(t, apply.OutcomeSucceeded, e.Outcome, "%s: %s", e.Name, e.Message)
	}
	for _, name := range []string{good, early} {
		tier.WaitState(t, wB, name, "RUNNING")
		var st tier.ConnectorStatus
		require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)), &st))
		require.Equal(t, "STOPPED", st.Connector.State, "%s is stopped on A", name)
	}
	mdbExec(t, m, db, "INSERT INTO items VALUES (4, 1, 'd');")

	cut, out, code := verifyUntilDecided(t, ctx, mv.agentB.Env, cutoverPath)
	verdicts := verdictsOf(t, cut)
	for _, name := range []string{good, early} {
		t.Logf("%s: placed %s, verdict %s (%s): %s", name, mustJSON(t, verdicts[name].Placed), verdicts[name].Verdict, verdicts[name].Evidence, verdicts[name].Detail)
	}

	// good: every change once, the last one by B.
	want := []string{"c 1 1", "c 2 1", "u 1 2", "c 3 1", "c 4 1"}
	require.Equal(t, want, summaries(waitBinlogChanges(t, topic(good), len(want))),
		"%s: every change once, in order: none lost, none produced again", good)
	// early: B produced the second transaction again.
	require.Equal(t, []string{"c 1 1", "c 2 1", "u 1 2", "c 3 1", "u 1 2", "c 3 1", "c 4 1"}, summaries(waitBinlogChanges(t, topic(early), 7)),
		"%s: B produced the transaction after the offset placed again", early)

	p := verdicts[good]
	require.Equal(t, cutover.VerdictVerified, p.Verdict, p.Detail)
	require.Equal(t, cutover.EvidenceRecords, p.Evidence)
	require.Contains(t, p.Detail.String(), "B's first record is at")
	p = verdicts[early]
	require.Equal(t, cutover.VerdictMismatch, p.Verdict, p.Detail)
	require.Equal(t, cutover.EvidenceRecords, p.Evidence)
	require.NotNil(t, p.FurthestOnA, "the mismatch names the offset A had committed before it was set back: %s", p.Detail)
	require.Equal(t, binlogAt(t, afterTx2), binlogAt(t, p.FurthestOnA), "A's furthest offset")
	require.Contains(t, out, "1 verified, 0 waiting, 1 mismatch")
	require.Equal(t, 1, code, "a mismatch is exit status 1")
}

// summaries are the changes' summaries, in order.
func summaries(cs []binlogChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.summary()
	}
	return out
}

// topicEnd is the end offset of partition 0 of topic on A's broker (0 when the topic does not
// exist yet).
func topicEnd(t *testing.T, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(env.Broker.Addr), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil || len(lo.Topics[topic]) == 0 || lo.Topics[topic][0].Error != nil {
		return 0
	}
	return lo.Topics[topic][0].LastOffset
}

// bulkRows is the size of the transaction A's worker is killed in the middle of: A's worker
// dies at its first offset commit in the transaction, at most offset.flush.interval.ms (1 s)
// after its first records, by when Debezium had produced 117 to 2442 of them in the runs here.
const bulkRows = 12000

// mdbkSession is the session of the worker mariadbKilled kills (session.timeout.ms): the
// time A's Connect group keeps the dead worker as a member, long enough for the first
// migrate run to find it there on a loaded machine.
const mdbkSession = 20 * time.Second

// mariadbKilled: A's Connect worker is SIGKILLed while its connector is producing the changes
// of one transaction of bulkRows rows, past the last offset it committed. Nothing answers at
// A's REST API any more, so migrate --stop-source judges by the Connect groups on A's Kafka
// cluster: at once, while the dead worker is still a member of A's group (until its session
// expires), it refuses the connector, naming the group and the member, and leaves it; a
// transaction is committed while no worker runs the connector; once the group has no member
// the same command moves the connector to B (stopped on A de facto, as the cutover report
// says), where it resumes at A's last committed offset, in that transaction, and one more
// transaction is committed. On the topic: every change (none lost); the changes produced
// twice are exactly A's last ones, from the offset placed on (all in the transaction it is in,
// or later); and migrate --verify, which finds again that no worker of A holds the connector,
// says replay with evidence "records", counting them.
func mariadbKilled(t *testing.T, ctx context.Context, mv mariadbMove, wK *realkafka.Worker, namesK tier.Connect) {
	m, db, wB := mv.m, mv.db, mv.wB
	killed := "cdc-" + env.Run + "-mkill"
	tier.RestOK(t, wK, http.MethodPost, "/connectors", map[string]any{"name": killed, "config": mariadbConfig(m, db, "bulk", killed, 5403)})
	deleteAfter(t, killed, wB)
	tier.WaitState(t, wK, killed, "RUNNING")
	waitStreaming(t, m, db, killed)
	topic := killed + "." + db + ".bulk"

	// The transaction starts where the binary log ends now: an offset Debezium commits in its
	// middle has that pos (the start of its transaction) and counts the events and rows
	// already produced.
	status := strings.Fields(mdbExec(t, m, "", "SHOW MASTER STATUS"))
	require.GreaterOrEqual(t, len(status), 2, "SHOW MASTER STATUS")
	txFile, txPos := status[0], status[1]
	mdbExec(t, m, db, fmt.Sprintf("BEGIN;\nINSERT INTO bulk SELECT seq, 1, 'bulk' FROM seq_1_to_%d;\nCOMMIT;", bulkRows))
	// A's worker dies as soon as its connector has committed an offset in the transaction,
	// while it goes on producing the rest.
	require.Eventually(t, func() bool {
		o, ok := offsetOf(wK, killed)
		return ok && o["file"] == txFile && fmt.Sprint(o["pos"]) == txPos
	}, time.Minute, 20*time.Millisecond, "%s commits an offset in the transaction at %s/%s", killed, txFile, txPos)
	wK.Kill()
	killedAt := time.Now()

	// At once: the dead worker is still a member of A's Connect group, holding the connector.
	a := env.Broker.Addr
	cutoverPath := filepath.Join(t.TempDir(), "cutover.json")
	args := []string{"--from-brokers", a, "--from-config-topic", namesK.Config, "--from-offsets-topic", namesK.Offsets,
		"--from-connect-url", wK.URL, "--stop-source", "--to-brokers", a, "--to-connect-url", wB.URL, "--timeout", "2m",
		"--include", killed, "--initial-state", "RUNNING", "--no-verify", "--cutover-report", cutoverPath}
	code, rep := migrateExit(t, ctx, mv.agentB.Env, args...)
	require.Less(t, time.Since(killedAt), mdbkSession, "the first run ended within the dead worker's session")
	require.NotEqual(t, 0, code, "a refused connector fails the run")
	require.Len(t, rep.Connectors, 1)
	require.Equal(t, apply.OutcomeSkipped, rep.Connectors[0].Outcome, rep.Connectors[0].Message)
	for _, want := range []string{"A runs it", `Connect group "` + namesK.Group + `"`, "holds connector " + killed, "session.timeout.ms"} {
		require.Contains(t, rep.Connectors[0].Message.String(), want)
	}
	require.Equal(t, http.StatusNotFound, restStatus(t, wB, "/connectors/"+killed), "nothing created on B")

	mdbExec(t, m, db, "BEGIN;\nINSERT INTO bulk VALUES (100001, 1, 'outage'), (100002, 1, 'outage');\nCOMMIT;")
	onA := binlogChanges(t, topic)
	require.Less(t, len(onA), bulkRows, "A's worker was killed in the middle of the transaction")
	committed := lastOffset(t, env.Broker.Addr, namesK.Offsets, killed)
	t.Logf("A's worker killed: it produced %d of the transaction's %d changes, the last at %s; its last committed offset: %s",
		len(onA), bulkRows, onA[len(onA)-1].at(), mustJSON(t, committed))
	require.Equal(t, txPos, fmt.Sprint(committed["pos"]), "A's last committed offset is in the transaction")

	// Once the dead worker's session has expired, A's group has no member: the same command
	// moves the connector.
	waitNoMember(t, namesK.Group, mdbkSession+time.Minute)
	t.Logf("A's group %s has no member %s after the kill", namesK.Group, time.Since(killedAt).Round(time.Second))
	code, rep = migrateExit(t, ctx, mv.agentB.Env, args...)
	require.Equal(t, 0, code)
	require.Len(t, rep.Connectors, 1)
	require.Equal(t, apply.OutcomeSucceeded, rep.Connectors[0].Outcome, rep.Connectors[0].Message)
	require.Len(t, rep.Connectors[0].Warnings, 1)
	require.Contains(t, rep.Connectors[0].Warnings[0].String(), "do not restart A's workers with it")
	var moved cutover.Cutover
	data, err := os.ReadFile(cutoverPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &moved))
	require.Len(t, moved.Connectors, 1)
	require.True(t, moved.Connectors[0].StoppedOnA)
	require.Contains(t, moved.Connectors[0].StoppedOnABy, "no live worker of A holds it")
	require.Contains(t, moved.Connectors[0].StoppedOnABy, namesK.Group)
	tier.WaitState(t, wB, killed, "RUNNING")
	mdbExec(t, m, db, "INSERT INTO bulk VALUES (100003, 1, 'after');")

	// Every change on the topic, A's then B's: at least total records once B has produced
	// what A had not.
	total := bulkRows + 3
	require.Eventually(t, func() bool { return topicEnd(t, topic) >= int64(total) }, 3*time.Minute, 250*time.Millisecond,
		"B produces the rest of the transaction and the later ones")
	var all []binlogChange
	require.Eventually(t, func() bool {
		got, err := readPayloads[binlogChange](env.Broker.Addr, topic)
		all = got
		ids := map[any]bool{}
		for _, c := range got {
			ids[c.After["id"]] = true
		}
		return err == nil && len(ids) == total
	}, 3*time.Minute, time.Second, "every change reaches the topic")
	seen := map[string]int{}
	var doubled []binlogChange
	for _, c := range all {
		if seen[c.at()]++; seen[c.at()] == 2 {
			doubled = append(doubled, c)
		}
	}
	require.Positive(t, len(doubled), "A had produced changes past its last committed offset")
	// The changes produced twice are A's last ones, from the offset placed on.
	require.Equal(t, summaries(onA[len(onA)-len(doubled):]), summaries(doubled), "B produces again exactly A's last changes")
	for _, c := range doubled {
		require.Equal(t, committed["file"], c.Source.File)
		require.GreaterOrEqual(t, float64(c.Source.Pos), toFloat(committed["pos"]),
			"a change produced twice is in the transaction of the offset placed (which starts at its pos) or later: %s", c.at())
	}
	t.Logf("changes on the topic: %d (%d distinct), produced twice: %d, from %s to %s", len(all), len(seen), len(doubled),
		doubled[0].at(), doubled[len(doubled)-1].at())

	cut, out, code := verifyUntilDecided(t, ctx, mv.agentB.Env, cutoverPath)
	p := verdictsOf(t, cut)[killed]
	t.Logf("%s: placed %s, verdict %s (%s): %s", killed, mustJSON(t, p.Placed), p.Verdict, p.Evidence, p.Detail)
	require.Equal(t, cutover.VerdictReplay, p.Verdict, p.Detail)
	require.Equal(t, cutover.EvidenceRecords, p.Evidence)
	require.NotNil(t, p.Replay)
	require.Equal(t, len(doubled), p.Replay.Records, "the replay counts the changes B produces again")
	requirePosition(t, doubled[0], p.Replay.First, "the replay's first record")
	requirePosition(t, doubled[len(doubled)-1], p.Replay.Last, "the replay's last record")
	require.Contains(t, out, "1 replay")
	require.Equal(t, 4, code, "a replay without a mismatch is exit status 4")
	w := verdictsOfConnector(t, cut, killed).WorkersOfA
	require.NotNil(t, w)
	require.False(t, w.Held, w.Checked)
	require.Contains(t, w.Checked.String(), "checked again at the verification: no live worker of A holds it")
}

// verdictsOfConnector is connector name's entry of the cutover report.
func verdictsOfConnector(t *testing.T, cut cutover.Cutover, name string) *cutover.Connector {
	t.Helper()
	for _, cc := range cut.Connectors {
		if cc.Name == name {
			return cc
		}
	}
	t.Fatalf("%s is not in the cutover report", name)
	return nil
}

// waitNoMember waits, at most within, until Connect group group on A's Kafka cluster has no
// member (its last worker's session expired).
func waitNoMember(t *testing.T, group string, within time.Duration) {
	t.Helper()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: []string{env.Broker.Addr}})
	cl.Timeout = 10 * time.Second
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := kafkaio.DescribeGroup(ctx, cl, group)
		return err == nil && len(d.Members) == 0
	}, within, 250*time.Millisecond, "A's Connect group %s has no member", group)
}

// restStatus is the HTTP status of GET path on w.
func restStatus(t *testing.T, w *realkafka.Worker, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, _, err := w.Do(ctx, http.MethodGet, path, nil)
	require.NoError(t, err)
	return code
}

// binlogAt is an offset's (or a record position's) binlog file and pos, and its event and row
// counts, as "file/pos/event/row".
func binlogAt(t *testing.T, offset any) string {
	t.Helper()
	var o struct {
		File       string `json:"file"`
		Pos        int64  `json:"pos"`
		Event, Row int64
	}
	require.NoError(t, json.Unmarshal([]byte(mustJSON(t, offset)), &o))
	return fmt.Sprintf("%s/%d/%d/%d", o.File, o.Pos, o.Event, o.Row)
}

// requirePosition requires pos (a record position of the cutover report) to be where change c
// is: its binlog file, pos and row.
func requirePosition(t *testing.T, c binlogChange, pos any, what string) {
	t.Helper()
	var got struct {
		File string `json:"file"`
		Pos  int64  `json:"pos"`
		Row  int64  `json:"row"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustJSON(t, pos)), &got), what)
	require.Equal(t, c.at(), fmt.Sprintf("%s/%d/%d", got.File, got.Pos, got.Row), "%s: %s", what, mustJSON(t, pos))
}
