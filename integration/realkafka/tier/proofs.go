package tier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// The core proofs: every Kafka version the tier covers runs these, each package's Test
// functions call them with its Env.

// altered is Connect's answer to an alter of a connector whose alterOffsets returns true.
const altered = "The offsets for this connector have been altered successfully"

// FileSource is a FileStream source born at the end of the first lines of its file.
type FileSource struct {
	Name, File, Topic string
	Position          int
	e                 *Env
}

// NewFileSource writes a file of 5 lines and returns a source whose initial offset is their end.
func (e *Env) NewFileSource(t testing.TB, prefix string) FileSource {
	t.Helper()
	name := e.Unique(prefix)
	content, n := Lines("before", 0, 5)
	return FileSource{Name: name, File: e.WriteFile(t, name+".txt", content), Topic: name + "-out", Position: n, e: e}
}

// Request is the creation request of the source in the initial state.
func (s FileSource) Request(state string) map[string]any {
	return map[string]any{
		"name": s.Name,
		"config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"file":            s.File, "topic": s.Topic, "tasks.max": "1",
		},
		"initial_state":   state,
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"filename": s.File}, "offset": map[string]any{"position": s.Position}}},
	}
}

// Offsets is GET /connectors/NAME/offsets of the source as born.
func (s FileSource) Offsets() string {
	return fmt.Sprintf(`{"offsets":[{"partition":{"filename":%s},"offset":{"position":%d}}]}`, JSONString(s.File), s.Position)
}

// RequireBorn checks a FileStream source born in state: the worker shows the state and exactly
// the initial offsets; once RUNNING (at once, or resumed) it produces the lines appended after the
// initial position and none before it.
func (s FileSource) RequireBorn(t testing.TB, w *realkafka.Worker, state string) {
	t.Helper()
	WaitState(t, w, s.Name, state)
	RequireOffsets(t, w, s.Name, s.Offsets())
	if state != "RUNNING" {
		RestOK(t, w, http.MethodPut, "/connectors/"+s.Name+"/resume", nil)
		WaitState(t, w, s.Name, "RUNNING")
	}
	after, _ := Lines("after", 0, 3)
	AppendFile(t, s.File, after)
	got := s.e.WaitValues(t, s.Topic, 3)
	require.Equal(t, []string{`"after-00"`, `"after-01"`, `"after-02"`}, got,
		"the task must start at position %d: the lines before it are not produced", s.Position)
}

// SourceInitialStates: with the worker running while the agent writes, a FileStream source
// (the seed example's class) created by the agent in each initial_state is in that state at its
// initial offsets, and a RUNNING one produces from the given file position.
func SourceInitialStates(t *testing.T, e *Env) {
	e.RequirePeers(t)
	for _, state := range []string{"RUNNING", "PAUSED", "STOPPED"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			s := e.NewFileSource(t, "fs-"+state)
			res := e.Agent.Create(t, s.Request(state))
			require.Equal(t, altered, res.Data.InitialOffsetsResponse)
			s.RequireBorn(t, e.Worker, state)
		})
	}
}

// SinkInitialOffsets: a FileStream sink born at topic offsets writes the records from those
// offsets on into its file.
func SinkInitialOffsets(t *testing.T, e *Env) {
	e.RequirePeers(t)
	name := e.Unique("sink")
	topic := name + "-in"
	e.CreateTopic(t, topic, 1, false)
	e.Produce(t, topic, Numbered(`"m-%02d"`, 10)...) // JSON strings: the sink's converter is JSON
	out := e.WriteFile(t, name+".out", "")
	res := e.Agent.Create(t, map[string]any{"name": name,
		"config": map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"topics": topic, "file": out, "tasks.max": "1"},
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0},
			"offset": map[string]any{"kafka_offset": 6}}}})
	require.Equal(t, altered, res.Data.InitialOffsetsResponse)
	WaitState(t, e.Worker, name, "RUNNING")
	var got string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		got = string(b)
		return strings.Count(got, "\n") >= 4
	}, 90*time.Second, 250*time.Millisecond, "sink output: %q", got)
	require.Equal(t, "m-06\nm-07\nm-08\nm-09\n", got)
}

// TestConnector is the Maven project's source connector whose alterOffsets returns true: it
// stands in on the worker for classes whose plugins the worker does not have.
const TestConnector = "io.github.offsetagent.realkafka.AlterableSourceConnector"

// ParityAgent writes to a Connect cluster of its own ("parity": offsets topic of 25 partitions,
// as the worker's), so that its records for a connector name can be compared with the worker's
// records for the same name. It has no OFFSETAGENT_CONNECT_URL: the classes of most families
// are not on the worker. It starts on first use.
func (e *Env) ParityAgent() (*Agent, error) {
	e.parityOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		n := e.ConnectNames("parity")
		e.parityAgent, e.parityErr = e.StartAgent(ctx, "agent-parity", map[string]string{
			"OFFSETAGENT_CONFIG_TOPIC":          n.Config,
			"OFFSETAGENT_OFFSETS_TOPIC":         n.Offsets,
			"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
		})
	})
	return e.parityAgent, e.parityErr
}

// parityCase is one connector family: the worker creates workerClass STOPPED and PATCHes the
// offsets; the agent creates config (with its real class) with the same offsets.
type parityCase struct {
	name        string
	workerClass string // empty: config's class
	config      map[string]string
	offsets     string // the KIP-875 entries, as JSON
}

func (e *Env) parityCases() []parityCase {
	mm2 := map[string]string{"source.cluster.alias": "src", "target.cluster.alias": "tgt",
		"source.cluster.bootstrap.servers": strings.Join(e.Brokers, ","),
		"target.cluster.bootstrap.servers": strings.Join(e.Brokers, ",")}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return []parityCase{
		{name: "filestream", config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"file": "/data/in.txt", "topic": "t"},
			offsets: `[{"partition":{"filename":"/data/in.txt"},"offset":{"position":30}},
			           {"partition":{"filename":"/data/ü\"€😀\t\u2028</x>&\\.txt"},"offset":{"position":9007199254740993}},
			           {"partition":{"filename":"/data/gone.txt"},"offset":null}]`},
		{name: "mirror-source", config: with(mm2, "connector.class", "org.apache.kafka.connect.mirror.MirrorSourceConnector", "topics", "orders"),
			offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":0},"offset":{"offset":42}},
			           {"partition":{"topic":"orders","partition":1,"cluster":"src"},"offset":{"offset":0}}]`},
		{name: "mirror-checkpoint", config: with(mm2, "connector.class", "org.apache.kafka.connect.mirror.MirrorCheckpointConnector", "groups", "g1"),
			offsets: `[{"partition":{"group":"g1","topic":"orders","partition":3},"offset":{"offset":0}}]`},
		{name: "mirror-heartbeat", config: with(mm2, "connector.class", "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"),
			offsets: `[{"partition":{"sourceClusterAlias":"src","targetClusterAlias":"tgt"},"offset":{"offset":0}}]`},
		{name: "debezium-mysql", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server":"dbserver1"},"offset":{"ts_sec":1700000000,"file":"mysql-bin.000003","pos":154,"gtids":"3e11fa47:1-5","row":1,"server_id":223344,"event":2}}]`},
		{name: "debezium-postgres", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server":"dbserver1"},"offset":{"lsn_proc":37051152,"messageType":"INSERT","lsn_commit":36989040,"lsn":37051152,"txId":1007,"ts_usec":1767208115470483}}]`},
		{name: "debezium-sqlserver", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector", "topic.prefix": "server1", "database.names": "testDB"},
			offsets: `[{"partition":{"server":"server1","database":"testDB"},"offset":{"event_serial_no":1,"commit_lsn":"0000002d:00000b48:0003","change_lsn":"0000002d:00000b48:0002"}}]`},
		{name: "debezium-mongodb", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server_id":"dbserver1"},"offset":{"sec":1700000000,"ord":1,"resume_token":"gmVk"}}]`},
		{name: "debezium-oracle", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.oracle.OracleConnector", "topic.prefix": "server1"},
			offsets: `[{"partition":{"server":"server1"},"offset":{"commit_scn":"2885432:1:","snapshot_scn":"2885000","scn":"2885432","scn_idx":3}}]`},
		{name: "jdbc-source", workerClass: TestConnector,
			config:  map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "mode": "timestamp+incrementing", "table.whitelist": "accounts"},
			offsets: `[{"partition":{"protocol":"1","table":"db.accounts"},"offset":{"timestamp_nanos":729000000,"incrementing":3,"timestamp":1790818723729}}]`},
		{name: "generic", workerClass: TestConnector,
			config: map[string]string{"connector.class": "com.example.CustomSourceConnector"},
			offsets: `[{"partition":{"k01":"a","k02":"b","k03":"c","k04":"d","k05":"e","k06":"f","k07":"g","k08":"h","k09":"i","k10":"j","k11":"k","k12":"l","k13":"m"},
			            "offset":{"half":1.5,"big":1e20,"tenth":0.1,"tiny":1e-7,"neg":-0.0,"negtiny":-1e-400,"int":-42,"max":9223372036854775807,"t":true,"f":false,"n":null,"s":"\u0001\u001f\u007f"}},
			           {"partition":{"only":"one"},"offset":{"d":100.0,"e":12345.678e3}}]`},
	}
}

// OffsetsRecordsByteParity: for every connector family of the registry, the records offsetagent
// writes to the offsets topic (partition, key bytes, value bytes) are the records Connect's own
// PATCH /connectors/NAME/offsets writes for the same offsets; and for the classes on the worker,
// the agent's initial_offsets_response is the text of Connect's PATCH answer.
func OffsetsRecordsByteParity(t *testing.T, e *Env) {
	e.RequirePeers(t)
	pa, err := e.ParityAgent()
	require.NoError(t, err)
	for _, tc := range e.parityCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := e.Unique("parity-" + tc.name)
			var entries []json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tc.offsets), &entries))

			cfg := map[string]string{"tasks.max": "1"}
			for k, v := range tc.config {
				cfg[k] = v
			}
			if tc.workerClass != "" {
				cfg = map[string]string{"connector.class": tc.workerClass, "tasks.max": "1"}
			}
			RestOK(t, e.Worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg, "initial_state": "STOPPED"})
			patched := RestOK(t, e.Worker, http.MethodPatch, "/connectors/"+name+"/offsets", map[string]any{"offsets": entries})

			res := pa.Create(t, map[string]any{"name": name, "config": tc.config, "initial_state": "STOPPED", "initial_offsets": entries})
			if tc.workerClass == "" {
				require.JSONEq(t, MustJSON(t, map[string]string{"message": res.Data.InitialOffsetsResponse}), patched)
			}

			connect := e.OffsetRecords(t, e.ConnectNames("main").Offsets, name)
			agent := e.OffsetRecords(t, e.ConnectNames("parity").Offsets, name)
			require.Len(t, connect, len(entries), "Connect's records")
			// A null offset is a tombstone in Connect's PATCH; the agent writes none for it, as
			// its wipe of the name's offsets (before the write) already removed that key.
			live, tombstones := split(connect)
			require.Len(t, tombstones, strings.Count(strings.ReplaceAll(tc.offsets, " ", ""), `"offset":null`))
			require.Equal(t, recordSet(live), recordSet(agent), "records of Connect (expected) and offsetagent (actual)")
			if !sameOrder(live, agent) {
				t.Logf("same records, another order within a partition:\nconnect: %v\nagent:   %v", connect, agent)
			}
		})
	}
}

// split separates records with a value from tombstones.
func split(rs []Record) (live, tombstones []Record) {
	for _, r := range rs {
		if r.Value == nil {
			tombstones = append(tombstones, r)
		} else {
			live = append(live, r)
		}
	}
	return live, tombstones
}

// recordSet is the records as sorted strings of partition, key and value.
func recordSet(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	sort.Strings(out)
	return out
}

func sameOrder(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// ConfigRecordsParity: for each initial state, the config topic records offsetagent writes for a
// new connector (key and value bytes, in order) are the ones Connect's own POST /connectors
// with that initial_state writes: target-state-NAME, then connector-NAME. Workers read key and
// value only; the agent's request headers are not compared, nor the task-* and commit-* records
// a worker's leader writes afterwards for a running connector.
func ConfigRecordsParity(t *testing.T, e *Env) {
	e.RequirePeers(t)
	pa, err := e.ParityAgent()
	require.NoError(t, err)
	for _, state := range []string{"RUNNING", "PAUSED", "STOPPED"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			name := e.Unique("cfg-parity-" + strings.ToLower(state))
			cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
				"file": e.WriteFile(t, name+".txt", ""), "topic": name + "-out", "tasks.max": "1"}
			RestOK(t, e.Worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg, "initial_state": state})
			pa.Create(t, map[string]any{"name": name, "config": cfg, "initial_state": state})
			connect := e.configRecords(t, e.ConnectNames("main").Config, name)
			agent := e.configRecords(t, e.ConnectNames("parity").Config, name)
			require.Len(t, connect, 2, "Connect's records: %v", connect)
			require.Equal(t, "target-state-"+name, string(connect[0].Key), "Connect writes the target state first")
			require.Equal(t, []string{connect[0].String(), connect[1].String()}, recordList(agent),
				"records of Connect (expected) and offsetagent (actual)")
			t.Logf("%s", connect[0].Value)
		})
	}
}

// configRecords returns the target-state and connector records of connector name in a config
// topic, in order, without the partition (the topic has one).
func (e *Env) configRecords(t testing.TB, topic, name string) []Record {
	t.Helper()
	var out []Record
	for _, r := range e.ReadTopic(t, topic) {
		if k := string(r.Key); k == "target-state-"+name || k == "connector-"+name {
			r.Offset = 0
			out = append(out, r)
		}
	}
	return out
}

func recordList(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// SinkOffsetsParity: the consumer group offsets offsetagent commits for a sink connector are the
// ones Connect's own PATCH commits (offset, metadata and committed leader epoch), and the worker
// reports them alike.
func SinkOffsetsParity(t *testing.T, e *Env) {
	e.RequirePeers(t)
	topic := e.Unique("sink-parity-in")
	e.CreateTopic(t, topic, 3, false)
	entries := fmt.Sprintf(`[{"partition":{"kafka_topic":%[1]q,"kafka_partition":0},"offset":{"kafka_offset":5}},
		{"partition":{"kafka_topic":%[1]q,"kafka_partition":"2"},"offset":{"kafka_offset":"7"}}]`, topic)
	var list []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(entries), &list))
	cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"topics": topic, "file": e.WriteFile(t, topic+".sink", ""), "tasks.max": "1"}

	byConnect, byAgent := e.Unique("sink-parity-connect"), e.Unique("sink-parity-agent")
	RestOK(t, e.Worker, http.MethodPost, "/connectors", map[string]any{"name": byConnect, "config": cfg, "initial_state": "STOPPED"})
	patched := RestOK(t, e.Worker, http.MethodPatch, "/connectors/"+byConnect+"/offsets", map[string]any{"offsets": list})
	res := e.Agent.Create(t, map[string]any{"name": byAgent, "config": cfg, "initial_state": "STOPPED", "initial_offsets": list})
	require.JSONEq(t, MustJSON(t, map[string]string{"message": res.Data.InitialOffsetsResponse}), patched)

	want := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%[1]q,"kafka_partition":0},"offset":{"kafka_offset":5}},
		{"partition":{"kafka_topic":%[1]q,"kafka_partition":2},"offset":{"kafka_offset":7}}]}`, topic)
	RequireOffsets(t, e.Worker, byConnect, want)
	RequireOffsets(t, e.Worker, byAgent, want)
	require.Equal(t, e.GroupOffsets(t, "connect-"+byConnect, topic), e.GroupOffsets(t, "connect-"+byAgent, topic))
	// The committed leader epoch too: Connect's PATCH commits none (-1).
	require.Equal(t, kafkatest.GroupEntries(t, e.Brokers, "connect-"+byConnect), kafkatest.GroupEntries(t, e.Brokers, "connect-"+byAgent))
}

// StartClusterB starts a second Kafka cluster from the jars lib: a broker, a Connect worker on
// it and an agent writing to that worker's topics, all stopped when t ends.
func (e *Env) StartClusterB(ctx context.Context, t testing.TB, name, lib string) (*realkafka.Broker, *realkafka.Worker, *Agent) {
	t.Helper()
	b, err := e.StartBroker(ctx, "broker-"+name, lib)
	require.NoError(t, err)
	StopAfter(t, b.Stop)
	names := e.ConnectNames(name)
	w, err := e.StartWorkerOn(ctx, "worker-"+name, lib, []string{b.Addr}, names)
	require.NoError(t, err)
	StopAfter(t, w.Stop)
	ag, err := e.StartAgentOn(ctx, "agent-"+name, b.Addr, names)
	require.NoError(t, err)
	StopAfter(t, ag.Stop)
	return b, w, ag
}
