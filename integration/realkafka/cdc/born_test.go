package cdc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// step is one writer transaction and the change events it makes, as "op id" ("c 3", "u 1",
// "d 2").
type step struct {
	sql  string
	want []string
}

// commit runs the statements of s in one transaction on db and returns its transaction id,
// which Debezium reports as source.txId.
func commit(t *testing.T, db, stmts string) int64 {
	t.Helper()
	out := sqlRows(t, db, "BEGIN;\n"+stmts+"\nSELECT pg_current_xact_id();\nCOMMIT;")
	require.Len(t, out, 1, "%s", stmts)
	id, err := strconv.ParseInt(out[0], 10, 64)
	require.NoError(t, err)
	return id
}

// commitSteps commits each step and returns the change events they make, as "txid op id".
func commitSteps(t *testing.T, db string, steps []step) []string {
	t.Helper()
	var out []string
	for _, s := range steps {
		tx := commit(t, db, s.sql)
		for _, w := range s.want {
			out = append(out, fmt.Sprintf("%d %s", tx, w))
		}
	}
	return out
}

// summary is a change event as "txid op id".
func (c change) summary() string {
	row := c.After
	if c.Op == "d" {
		row = c.Before
	}
	return fmt.Sprintf("%d %s %v", c.Source.TxID, c.Op, row["id"])
}

// TestDebeziumBornAtCommittedOffsets: a Debezium PostgreSQL connector created
// through a request, with snapshot.mode=initial and initial_offsets in the exact shape Debezium
// commits (a twin connector's offsets after a first batch of changes), streams every change
// committed after that point and none before it, emits no snapshot record and uses the
// replication slot it is given, in each initial_state. Each slot is created before the first
// batch, so it holds both batches: only the offset's LSN keeps the first out, and only a read
// offset keeps the snapshot away.
func TestDebeziumBornAtCommittedOffsets(t *testing.T) {
	env.RequirePeers(t)
	started := time.Now()
	w, db := env.Worker, "born_"+env.Run
	createSourceDB(t, db)
	states := []string{"RUNNING", "PAUSED", "STOPPED"}
	for _, s := range states {
		sqlExec(t, db, "SELECT pg_create_logical_replication_slot('born_"+strings.ToLower(s)+"', 'pgoutput')")
	}

	// The twin streams the first batch and commits Debezium's own offsets.
	twin, twinPrefix := "cdc-"+env.Run+"-twin", "cdc-"+env.Run+"-twin"
	cfg := debeziumConfig(db, "twin", twinPrefix)
	cfg["snapshot.mode"] = "no_data"
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": twin, "config": cfg})
	tier.WaitState(t, w, twin, "RUNNING")
	first := commitSteps(t, db, []step{
		{"INSERT INTO items VALUES (1, 1, 'a'), (2, 1, 'b');", []string{"c 1", "c 2"}},
		{"UPDATE items SET v = 2 WHERE id = 1;", []string{"u 1"}},
		{"INSERT INTO items VALUES (3, 1, 'c');", []string{"c 3"}},
		{"DELETE FROM items WHERE id = 2;", []string{"d 2"}},
	})
	lastTx := strings.Fields(first[len(first)-1])[0]
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, body, err := w.Do(ctx, http.MethodGet, "/connectors/"+twin+"/offsets", nil)
		return err == nil && strings.Contains(string(body), `"txId":`+lastTx)
	}, 90*time.Second, 250*time.Millisecond, "the twin commits the first batch's last transaction %s", lastTx)
	tier.RestOK(t, w, http.MethodPut, "/connectors/"+twin+"/stop", nil)
	tier.WaitState(t, w, twin, "STOPPED")
	var got struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, w, http.MethodGet, "/connectors/"+twin+"/offsets", nil)), &got))
	require.Len(t, got.Offsets, 1)
	require.Equal(t, map[string]any{"server": twinPrefix}, got.Offsets[0].Partition)
	point := got.Offsets[0].Offset
	t.Logf("Debezium %s committed after the first batch: %s", "3.6.1.Final", mustJSON(t, point))
	require.Equal(t, lastTx, fmt.Sprint(point["txId"]))
	tier.RestOK(t, w, http.MethodDelete, "/connectors/"+twin, nil)
	sqlExec(t, db, "SELECT pg_drop_replication_slot('twin')")

	second := commitSteps(t, db, []step{
		{"INSERT INTO items VALUES (4, 1, 'd');", []string{"c 4"}},
		{"UPDATE items SET v = 3, note = 'a2' WHERE id = 1;\nUPDATE items SET v = 2 WHERE id = 3;", []string{"u 1", "u 3"}},
		{"DELETE FROM items WHERE id = 4;", []string{"d 4"}},
		{"INSERT INTO items VALUES (5, 1, 'e');", []string{"c 5"}},
	})

	for _, state := range states {
		t.Run(state, func(t *testing.T) {
			name := "cdc-" + env.Run + "-born-" + strings.ToLower(state)
			slot := "born_" + strings.ToLower(state)
			initial := []any{map[string]any{"partition": map[string]any{"server": name}, "offset": point}}
			env.Agent.Create(t, map[string]any{"name": name, "config": debeziumConfig(db, slot, name),
				"initial_state": state, "initial_offsets": initial})
			tier.WaitState(t, w, name, state)
			require.JSONEq(t, mustJSON(t, map[string]any{"offsets": initial}),
				tier.RestOK(t, w, http.MethodGet, "/connectors/"+name+"/offsets", nil), "the worker reads the request's offsets")
			if state != "RUNNING" {
				tier.RestOK(t, w, http.MethodPut, "/connectors/"+name+"/resume", nil)
				tier.WaitState(t, w, name, "RUNNING")
			}
			topic := name + ".public.items"
			var events []change
			require.Eventually(t, func() bool {
				events, _ = readChanges(env.Broker.Addr, topic)
				// A snapshot record ends the wait at once: the checks below name the failure.
				return len(events) >= len(second) || len(events) > 0 && events[0].Op == "r"
			}, 90*time.Second, 250*time.Millisecond, "%s holds the second batch's %d changes", topic, len(second))
			var seen []string
			snapshots := 0
			for _, e := range events {
				seen = append(seen, e.summary())
				if e.Op == "r" {
					snapshots++
				}
			}
			require.Zero(t, snapshots, "no snapshot record: the connector read its initial offset")
			require.Equal(t, second, seen, "every change after the offset, in order, and none of the first batch %v", first)
			require.Contains(t, slots(t, db), slot+" true", "the connector streams from the slot it was given")
			require.Len(t, slots(t, db), len(states), "no slot created: %v", slots(t, db))
			tier.RestOK(t, w, http.MethodDelete, "/connectors/"+name, nil)
		})
	}
	if t.Failed() {
		return
	}
	t.Logf("born at committed offsets: %d changes before the offset, %d after it; %d connectors each streamed exactly the %d after it; took %s",
		len(first), len(second), len(states), len(second), time.Since(started).Round(time.Second))
}

// mustJSON marshals v or fails.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
