package cdc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// restOK calls the worker's REST API and requires a 2xx answer.
func restOK(t *testing.T, w *realkafka.Worker, method, path string, body any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, resp, err := w.Do(ctx, method, path, body)
	require.NoError(t, err, "%s %s", method, path)
	require.True(t, status/100 == 2, "%s %s: %d %s", method, path, status, resp)
	return string(resp)
}

// connectorStatus is GET /connectors/NAME/status.
type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
	} `json:"connector"`
	Tasks []struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

// waitState waits until the worker reports the connector in state: STOPPED with no tasks,
// RUNNING with all of its tasks running, PAUSED with any tasks paused. A failed task fails the
// test at once.
func waitState(t *testing.T, w *realkafka.Worker, name, state string) {
	t.Helper()
	waitStatus(t, w, name, state, true)
}

// waitStatus is waitState; without withTasks a RUNNING connector may have no task yet (MM2's
// source has none until A has a topic to mirror).
func waitStatus(t *testing.T, w *realkafka.Worker, name, state string, withTasks bool) {
	t.Helper()
	var last string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		status, body, err := w.Do(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
		cancel()
		require.NoError(t, err)
		last = string(body)
		if status == http.StatusOK {
			var s connectorStatus
			require.NoError(t, json.Unmarshal(body, &s))
			ok := s.Connector.State == state
			for _, tk := range s.Tasks {
				require.NotEqual(t, "FAILED", tk.State, "connector %s: a task failed: %s", name, tk.Trace)
				ok = ok && tk.State == state
			}
			switch state {
			case "STOPPED":
				ok = ok && len(s.Tasks) == 0
			case "RUNNING":
				ok = ok && (len(s.Tasks) > 0 || !withTasks)
			}
			if ok {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("connector %s never reached %s; last status: %s", name, state, last)
}

// agentProc is an `offsetagent run` process writing to one Connect cluster's topics.
type agentProc struct {
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
}

// startAgent runs the agent binary on broker for the Connect cluster n and returns once /readyz
// answers 200. It is stopped after the tests.
func startAgent(ctx context.Context, name, broker string, n connect) (*agentProc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpAddr := l.Addr().String()
	l.Close()
	p := "cdc-" + peers.run + "-" + name
	env := append(os.Environ(),
		"OFFSETAGENT_BROKERS="+broker,
		"OFFSETAGENT_CONFIG_TOPIC="+n.config,
		"OFFSETAGENT_OFFSETS_TOPIC="+n.offsets,
		"OFFSETAGENT_REQUEST_TOPIC="+p+"-requests",
		"OFFSETAGENT_RESULT_TOPIC="+p+"-results",
		"OFFSETAGENT_INTENT_TOPIC="+p+"-intents",
		"OFFSETAGENT_GROUP_ID="+p,
		"OFFSETAGENT_HTTP_ADDR="+httpAddr,
		"OFFSETAGENT_LOG_FORMAT=text",
		"OFFSETAGENT_SHUTDOWN_TIMEOUT=10s")
	logPath := filepath.Join(peers.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(peers.agentBin, "run")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	a := &agentProc{env: env, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(a.done) }()
	atExit(a.stop)
	for range 600 { // 2 minutes
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case <-a.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s exited before it was ready:\n%s", name, b)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s not ready: %w (log: %s)", name, ctx.Err(), logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("%s not ready within 2 minutes (log: %s)", name, logPath)
}

func (a *agentProc) stop() {
	realkafka.StopProcessGroup(a.cmd, a.done, 30*time.Second)
}

// create publishes a creation request through `offsetagent publish --wait` and requires it to
// succeed.
func (a *agentProc) create(t *testing.T, body any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	cmd := exec.Command(peers.agentBin, "publish", "--wait", "--timeout", "90s", "-")
	cmd.Env, cmd.Stdin = a.env, bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var res struct {
		Type string        `json:"type"`
		Data events.Result `json:"data"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "publish: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	require.Equal(t, events.TypeCreateSucceeded, res.Type, "the request failed at %s: %d %s", res.Data.FailedStep, res.Data.ErrorCode, res.Data.Message)
}

// offsetagent runs the agent binary with args in env and returns its stdout.
func offsetagent(t *testing.T, ctx context.Context, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, peers.agentBin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%v\nstdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
	return stdout.String()
}

// change is one Debezium change event as the JsonConverter with schemas writes it.
type change struct {
	Op     string         `json:"op"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Source struct {
		TxID     int64  `json:"txId"`
		LSN      int64  `json:"lsn"`
		Snapshot string `json:"snapshot"`
	} `json:"source"`
}

// id is the change's event identity: the transaction and the LSN of its row change.
func (c change) id() string { return fmt.Sprintf("%d/%d", c.Source.TxID, c.Source.LSN) }

// changes reads the records of topic on broker (partition 0: Debezium's topics have one here)
// up to its current end and decodes the change events (tombstones skipped). A topic that does
// not exist has none.
func changes(t *testing.T, broker, topic string) []change {
	t.Helper()
	out, err := readChanges(broker, topic)
	require.NoError(t, err)
	return out
}

// readChanges is changes for the conditions of require.Eventually, which must not fail the test
// from their own goroutine.
func readChanges(broker, topic string) ([]change, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil || len(lo.Topics[topic]) == 0 || lo.Topics[topic][0].Error != nil || lo.Topics[topic][0].LastOffset == 0 {
		return nil, nil
	}
	end := lo.Topics[topic][0].LastOffset
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []change
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", topic, err)
		}
		if m.Value != nil {
			var env struct {
				Payload change `json:"payload"`
			}
			if err := json.Unmarshal(m.Value, &env); err != nil {
				return nil, fmt.Errorf("decode %s at %d: %w: %s", topic, m.Offset, err, m.Value)
			}
			out = append(out, env.Payload)
		}
		if m.Offset+1 >= end {
			return out, nil
		}
	}
}

// sqlRows runs a query on db and returns its rows ('|'-separated columns).
func sqlRows(t *testing.T, db, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := peers.pg.Query(ctx, db, query)
	require.NoError(t, err)
	return rows(out)
}

// sqlExec runs statements on db.
func sqlExec(t *testing.T, db, stmts string) {
	t.Helper()
	sqlRows(t, db, stmts)
}

// debeziumConfig is a Debezium PostgreSQL source config for table public.items of db, through
// slot, with topic prefix prefix: pgoutput, snapshot.mode=initial (a lost offset shows as a
// re-snapshot), change events in JSON with schemas (the JDBC sink needs them).
func debeziumConfig(db, slot, prefix string) map[string]string {
	return map[string]string{
		"connector.class":                "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                      "1",
		"database.hostname":              "127.0.0.1",
		"database.port":                  fmt.Sprint(peers.pg.Port),
		"database.user":                  "postgres",
		"database.password":              "unused",
		"database.dbname":                db,
		"topic.prefix":                   prefix,
		"plugin.name":                    "pgoutput",
		"slot.name":                      slot,
		"publication.autocreate.mode":    "disabled",
		"publication.name":               "cdc",
		"table.include.list":             "public.items",
		"snapshot.mode":                  "initial",
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
	}
}

// createSourceDB creates database db with the table items and a publication of it.
func createSourceDB(t *testing.T, db string) {
	t.Helper()
	sqlExec(t, "postgres", "CREATE DATABASE "+db)
	sqlExec(t, db, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, note text NOT NULL);\n"+
		"CREATE PUBLICATION cdc FOR TABLE items;")
}

// slots returns the replication slots of db as "name active".
func slots(t *testing.T, db string) []string {
	t.Helper()
	return sqlRows(t, "postgres", "SELECT slot_name || ' ' || active FROM pg_replication_slots WHERE database = '"+db+"' ORDER BY slot_name")
}
