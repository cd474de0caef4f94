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

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
)

// TestVerifyByRecords: two Debezium PostgreSQL connectors move with migrate --stop-source
// from A to B, a second Connect cluster on A's Kafka cluster (clusterBOnA): B's connectors
// write into the topics A's wrote, so A's records are there to be told from B's. migrate --verify
// then judges each by the change events it produced on B: the one placed at A's offset, with
// rows inserted after the cutover, is verified with evidence "records"; the other, whose
// offset on A was set back before its last transaction (a wrong placement its offsets cannot
// show: B holds what A had), replays that transaction on B and is a mismatch with evidence
// "records": A's records are past the offset placed, and A's offsets topic, which migrate
// reads, shows A had committed past it (not a replay of what A never committed). Its slot
// keeps the WAL (flush.lsn.source=false), so the replay is real.
func TestVerifyByRecords(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()
	w, db := env.Worker, "records_"+env.Run
	wB, agentB := startClusterBOnA(t, ctx)
	createSourceDB(t, db)
	good, wrong := "cdc-"+env.Run+"-recgood", "cdc-"+env.Run+"-recwrong"
	sqlExec(t, db, "SELECT pg_create_logical_replication_slot('recwrong', 'pgoutput')")
	for _, name := range []string{good, wrong} {
		slot := strings.TrimPrefix(name, "cdc-"+env.Run+"-")
		cfg := debeziumConfig(db, slot, name)
		cfg["snapshot.mode"] = "no_data"
		if name == wrong {
			cfg["flush.lsn.source"] = "false"
		}
		tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg})
		t.Cleanup(func() {
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, _ = wB.Do(rctx, http.MethodDelete, "/connectors/"+name, nil)
			_, _, _ = w.Do(rctx, http.MethodDelete, "/connectors/"+name, nil)
		})
	}
	for _, name := range []string{good, wrong} {
		tier.WaitState(t, w, name, "RUNNING")
	}
	// Each connector's offset once it has streamed txs's last transaction.
	offsetAt := func(name string, tx int64) map[string]any {
		var point map[string]any
		require.Eventually(t, func() bool {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, body, err := w.Do(rctx, http.MethodGet, "/connectors/"+name+"/offsets", nil)
			var got struct {
				Offsets []struct {
					Offset map[string]any `json:"offset"`
				} `json:"offsets"`
			}
			if err != nil || json.Unmarshal(body, &got) != nil || len(got.Offsets) != 1 {
				return false
			}
			point = got.Offsets[0].Offset
			return fmt.Sprint(point["txId"]) == fmt.Sprint(tx)
		}, 60*time.Second, 250*time.Millisecond, "%s commits transaction %d", name, tx)
		return point
	}
	commit(t, db, "INSERT INTO items VALUES (1, 1, 'a');")
	tx1 := commit(t, db, "INSERT INTO items VALUES (2, 1, 'b');")
	early := offsetAt(wrong, tx1)
	tx2 := commit(t, db, "UPDATE items SET v = 2 WHERE id = 1;\nINSERT INTO items VALUES (3, 1, 'c');")
	offsetAt(good, tx2)
	offsetAt(wrong, tx2)

	// The wrong one's offset on A is set back to after tx1, as a wrong placement would.
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+wrong+"/stop", nil)
	tier.WaitState(t, w, wrong, "STOPPED")
	tier.RestOK(t, w, http.MethodPatch, "/connectors/"+wrong+"/offsets",
		map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"server": wrong}, "offset": early}}})

	a := env.Broker.Addr
	cutoverPath := filepath.Join(t.TempDir(), "cutover.json")
	code, rep := migrateExit(t, ctx, agentB.Env, "--from-brokers", a, "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--from-connect-url", w.URL, "--to-brokers", a, "--to-connect-url", wB.URL, "--stop-source", "--timeout", "2m",
		"--include", good+"|"+wrong, "--initial-state", "RUNNING", "--no-verify", "--cutover-report", cutoverPath)
	require.Equal(t, 0, code)
	for _, e := range rep.Connectors {
		require.Equal(t, apply.OutcomeSucceeded, e.Outcome, "%s: %s", e.Name, e.Message)
	}
	for _, name := range []string{good, wrong} {
		tier.WaitState(t, wB, name, "RUNNING")
	}
	commit(t, db, "INSERT INTO items VALUES (4, 1, 'd');")

	var out []byte
	var cut cutover.Cutover
	require.Eventually(t, func() bool { // until each connector on B has produced the row inserted after the cutover
		cmd := exec.CommandContext(ctx, env.AgentBin, "migrate", "--verify", "--cutover-report", cutoverPath, "--to-brokers", a, "--verify-timeout", "5s")
		cmd.Env = agentB.Env
		out, _ = cmd.CombinedOutput()
		data, err := os.ReadFile(cutoverPath)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &cut))
		return cut.Counts[cutover.VerdictWaiting] == 0
	}, 60*time.Second, time.Second, "the verification decides both connectors")
	t.Logf("migrate --verify:\n%s", out)
	verdicts := map[string]*cutover.Partition{}
	for _, cc := range cut.Connectors {
		require.Len(t, cc.Partitions, 1)
		verdicts[cc.Name] = cc.Partitions[0]
	}
	p := verdicts[good]
	require.Equal(t, cutover.VerdictVerified, p.Verdict, p.Detail)
	require.Equal(t, cutover.EvidenceRecords, p.Evidence)
	require.Contains(t, p.Detail.String(), "B's first record is at")
	p = verdicts[wrong]
	require.Equal(t, cutover.VerdictMismatch, p.Verdict, p.Detail)
	require.Equal(t, cutover.EvidenceRecords, p.Evidence)
	require.Contains(t, p.Detail.String(), "A's offset was set back: A's offsets topic held")
	require.NotNil(t, p.FurthestOnA)
	require.Contains(t, string(out), "1 verified, 0 waiting, 1 mismatch, 0 unordered, 0 replay")
	t.Logf("took %s", time.Since(started).Round(time.Second))
}
