package cdc_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/offsetagent/offsetagent/migrate/hazard"
)

// migrateExit runs migrate with args in the environment vars and returns its exit code and the report it wrote.
func migrateExit(t *testing.T, ctx context.Context, vars []string, args ...string) (int, *apply.Report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(ctx, env.AgentBin, append(append([]string{"migrate"}, args...), "--report", path)...)
	cmd.Env = vars
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		code = exit.ExitCode()
	}
	t.Logf("migrate %v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	var rep apply.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	return code, &rep
}

// TestSettingsPointingAtARefusedThenMapped: a Debezium PostgreSQL connector on A with a Kafka
// signal channel on A's brokers, and a Debezium MySQL connector whose schema history is on A's
// brokers named otherwise (localhost for --from-brokers' 127.0.0.1: its config only, there is
// no MySQL server, and A's worker has no MySQL plugin), are refused by migrate --stop-source
// before anything stops, each by the cluster id A's broker answers with: both still on A (the
// PostgreSQL one RUNNING), neither on B, the report naming each key. With --map-value A's
// brokers=B's, the PostgreSQL connector moves: RUNNING on B, its signal channel on B's brokers.
// (Its file sorts before the pipeline test's, which kills A's worker last.)
func TestSettingsPointingAtARefusedThenMapped(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	namesB := env.ConnectNames("pointsat-b")
	brokerB, workerB, err := env.StartCluster(ctx, "pointsat-b", namesB)
	require.NoError(t, err)
	agentB, err := env.StartAgentOn(ctx, "agent-pointsat-b", brokerB.Addr, namesB)
	require.NoError(t, err)
	t.Logf("cluster B started in %s", time.Since(started).Round(time.Second))

	a, b := env.Broker.Addr, brokerB.Addr
	localA := strings.Replace(a, "127.0.0.1", "localhost", 1) // A, spelled otherwise
	require.NotEqual(t, a, localA)
	db, pg, mysql := "pointsat_"+env.Run, "cdc-"+env.Run+"-pointsat-pg", "cdc-"+env.Run+"-pointsat-mysql"
	signals := "cdc-" + env.Run + "-pointsat-signals"
	createSourceDB(t, db)
	tier.CreateTopicOn(t, []string{a}, signals, 1)
	tier.CreateTopicOn(t, []string{b}, signals, 1)
	cfg := debeziumConfig(db, "pointsat", "cdc-"+env.Run+"-pointsat")
	cfg["signal.enabled.channels"] = "source,kafka"
	cfg["signal.kafka.bootstrap.servers"] = a
	cfg["signal.kafka.topic"] = signals
	tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": pg, "config": cfg})
	tier.WaitState(t, env.Worker, pg, "RUNNING")
	// Written to A's config topic by A's agent: A's worker cannot load the class (FAILED).
	env.Agent.Create(t, map[string]any{"name": mysql, "config": map[string]string{
		"connector.class":   "io.debezium.connector.mysql.MySqlConnector",
		"tasks.max":         "1",
		"database.hostname": "127.0.0.1", "database.port": "3306", "database.user": "debezium",
		"database.password": "pw-secret-mysql", "database.server.id": "223344", "topic.prefix": "cdc-" + env.Run + "-pointsat-mysql",
		"schema.history.internal.kafka.bootstrap.servers": localA,
		"schema.history.internal.kafka.topic":             "cdc-" + env.Run + "-pointsat-history",
	}, "initial_offsets": []any{map[string]any{"partition": map[string]any{"server": "cdc-" + env.Run + "-pointsat-mysql"},
		"offset": map[string]any{"ts_sec": 1700000000, "file": "mysql-bin.000003", "pos": 154, "row": 1, "server_id": 223344, "event": 2}}}})
	t.Cleanup(func() { tier.RestOK(t, env.Worker, http.MethodDelete, "/connectors/"+mysql, nil) })

	common := []string{"--from-brokers", a, "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--from-connect-url", env.Worker.URL, "--to-brokers", b, "--to-connect-url", workerB.URL, "--stop-source", "--timeout", "2m"}

	code, rep := migrateExit(t, ctx, agentB.Env, append(common, "--include", pg+"|"+mysql)...)
	require.Equal(t, 1, code, "both connectors are refused")
	hazards := map[string]string{}
	for _, e := range rep.Connectors {
		require.Equal(t, apply.OutcomeSkipped, e.Outcome, "%s: %s", e.Name, e.Message)
		require.NotContains(t, e.Message.String(), "pw-secret")
		for _, h := range e.Hazards {
			if h.Refuse && h.Check == hazard.HazardPointsAtA {
				hazards[e.Name] = h.Key + ": " + h.Message.String() + "; " + h.Fix.String()
			}
		}
	}
	require.Contains(t, hazards[pg], `signal.kafka.bootstrap.servers: value "`+a+`" names A's Kafka cluster: `+a+` answered with A's cluster id`)
	require.Contains(t, hazards[mysql], `schema.history.internal.kafka.bootstrap.servers: value "`+localA+`" names A's Kafka cluster: `+localA+
		` answered with A's cluster id`)
	require.Contains(t, hazards[pg], "--map-value "+a+"=<B's bootstrap servers, as B's Connect workers reach them>")
	var st tier.ConnectorStatus
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, env.Worker, http.MethodGet, "/connectors/"+pg+"/status", nil)), &st))
	require.Equal(t, "RUNNING", st.Connector.State, "refused before it was stopped on A")
	for _, name := range []string{pg, mysql} {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		code, _, err := workerB.Do(rctx, http.MethodGet, "/connectors/"+name, nil)
		cancel()
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code, "%s is not created on B", name)
	}

	code, rep = migrateExit(t, ctx, agentB.Env, append(common, "--include", pg, "--map-value", a+"="+b)...)
	require.Equal(t, 0, code)
	require.Len(t, rep.Connectors, 1)
	require.Equal(t, apply.OutcomeSucceeded, rep.Connectors[0].Outcome, rep.Connectors[0].Message)
	tier.WaitState(t, workerB, pg, "RUNNING")
	var onB map[string]string
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, workerB, http.MethodGet, "/connectors/"+pg+"/config", nil)), &onB))
	require.Equal(t, b, onB["signal.kafka.bootstrap.servers"], "its signal channel is on B")
	require.Equal(t, signals, onB["signal.kafka.topic"])
	require.NoError(t, json.Unmarshal([]byte(tier.RestOK(t, env.Worker, http.MethodGet, "/connectors/"+pg+"/status", nil)), &st))
	require.Equal(t, "STOPPED", st.Connector.State, "stopped on A by the move")
	tier.RestOK(t, workerB, http.MethodDelete, "/connectors/"+pg, nil)
	tier.RestOK(t, env.Worker, http.MethodDelete, "/connectors/"+pg, nil)
	t.Logf("took %s", time.Since(started).Round(time.Second))
}
