package realkafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// testConnector is the Maven project's source connector whose alterOffsets returns true: it
// stands in on the worker for classes whose plugins the worker does not have.
const testConnector = "io.github.offsetagent.realkafka.AlterableSourceConnector"

// parityAgent writes to a Connect cluster of its own (offsets topic of 25 partitions, as the
// worker's), so that its records for a connector name can be compared with the worker's records
// for the same name. It has no OFFSETAGENT_CONNECT_URL: the classes of most families are not
// on the worker.
var parityAgent = sync.OnceValues(func() (*agentProc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := connectNames("parity")
	return startAgent(ctx, "agent-parity", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":          n.config,
		"OFFSETAGENT_OFFSETS_TOPIC":         n.offsets,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
	})
})

// parityCase is one connector family: the worker creates workerClass STOPPED and PATCHes the
// offsets; the agent creates config (with its real class) with the same offsets.
type parityCase struct {
	name        string
	workerClass string // empty: config's class
	config      map[string]string
	offsets     string // the KIP-875 entries, as JSON
}

func parityCases() []parityCase {
	mm2 := map[string]string{"source.cluster.alias": "src", "target.cluster.alias": "tgt",
		"source.cluster.bootstrap.servers": strings.Join(peers.brokers, ","),
		"target.cluster.bootstrap.servers": strings.Join(peers.brokers, ",")}
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
		{name: "debezium-mysql", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server":"dbserver1"},"offset":{"ts_sec":1700000000,"file":"mysql-bin.000003","pos":154,"gtids":"3e11fa47:1-5","row":1,"server_id":223344,"event":2}}]`},
		{name: "debezium-postgres", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server":"dbserver1"},"offset":{"lsn_proc":37051152,"messageType":"INSERT","lsn_commit":36989040,"lsn":37051152,"txId":1007,"ts_usec":1767208115470483}}]`},
		{name: "debezium-sqlserver", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector", "topic.prefix": "server1", "database.names": "testDB"},
			offsets: `[{"partition":{"server":"server1","database":"testDB"},"offset":{"event_serial_no":1,"commit_lsn":"0000002d:00000b48:0003","change_lsn":"0000002d:00000b48:0002"}}]`},
		{name: "debezium-mongodb", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "dbserver1"},
			offsets: `[{"partition":{"server_id":"dbserver1"},"offset":{"sec":1700000000,"ord":1,"resume_token":"gmVk"}}]`},
		{name: "debezium-oracle", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.debezium.connector.oracle.OracleConnector", "topic.prefix": "server1"},
			offsets: `[{"partition":{"server":"server1"},"offset":{"commit_scn":"2885432:1:","snapshot_scn":"2885000","scn":"2885432","scn_idx":3}}]`},
		{name: "jdbc-source", workerClass: testConnector,
			config:  map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "mode": "timestamp+incrementing", "table.whitelist": "accounts"},
			offsets: `[{"partition":{"protocol":"1","table":"db.accounts"},"offset":{"timestamp_nanos":729000000,"incrementing":3,"timestamp":1790818723729}}]`},
		{name: "generic", workerClass: testConnector,
			config: map[string]string{"connector.class": "com.example.CustomSourceConnector"},
			offsets: `[{"partition":{"k01":"a","k02":"b","k03":"c","k04":"d","k05":"e","k06":"f","k07":"g","k08":"h","k09":"i","k10":"j","k11":"k","k12":"l","k13":"m"},
			            "offset":{"half":1.5,"big":1e20,"tenth":0.1,"tiny":1e-7,"neg":-0.0,"negtiny":-1e-400,"int":-42,"max":9223372036854775807,"t":true,"f":false,"n":null,"s":"\u0001\u001f\u007f"}},
			           {"partition":{"only":"one"},"offset":{"d":100.0,"e":12345.678e3}}]`},
	}
}

// TestOffsetsRecordsByteParity: for every connector family of the registry, the records
// offsetagent writes to the offsets topic (partition, key bytes, value bytes) are the records
// Connect's own PATCH /connectors/NAME/offsets writes for the same offsets; and for the classes on
// the worker, the agent's initial_offsets_response is the text of Connect's PATCH answer.
func TestOffsetsRecordsByteParity(t *testing.T) {
	requirePeers(t)
	pa, err := parityAgent()
	require.NoError(t, err)
	for _, tc := range parityCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := unique("parity-" + tc.name)
			var entries []json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tc.offsets), &entries))

			cfg := map[string]string{"tasks.max": "1"}
			for k, v := range tc.config {
				cfg[k] = v
			}
			if tc.workerClass != "" {
				cfg = map[string]string{"connector.class": tc.workerClass, "tasks.max": "1"}
			}
			restOK(t, peers.worker, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg, "initial_state": "STOPPED"})
			patched := restOK(t, peers.worker, http.MethodPatch, "/connectors/"+name+"/offsets", map[string]any{"offsets": entries})

			res := pa.create(t, map[string]any{"name": name, "config": tc.config, "initial_state": "STOPPED", "initial_offsets": entries})
			if tc.workerClass == "" {
				require.JSONEq(t, mustJSON(t, map[string]string{"message": res.Data.InitialOffsetsResponse}), patched)
			}

			connect := offsetRecords(t, connectNames("main").offsets, name)
			agent := offsetRecords(t, connectNames("parity").offsets, name)
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
func split(rs []record) (live, tombstones []record) {
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
func recordSet(rs []record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	sort.Strings(out)
	return out
}

func sameOrder(a, b []record) bool {
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

// TestSinkOffsetsParity: the consumer group offsets offsetagent commits for a sink connector are
// the ones Connect's own PATCH commits (offset, metadata and committed leader epoch), and the
// worker reports them alike.
func TestSinkOffsetsParity(t *testing.T) {
	requirePeers(t)
	topic := unique("sink-parity-in")
	createTopic(t, topic, 3, false)
	entries := fmt.Sprintf(`[{"partition":{"kafka_topic":%[1]q,"kafka_partition":0},"offset":{"kafka_offset":5}},
		{"partition":{"kafka_topic":%[1]q,"kafka_partition":"2"},"offset":{"kafka_offset":"7"}}]`, topic)
	var list []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(entries), &list))
	cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"topics": topic, "file": writeFile(t, topic+".sink", ""), "tasks.max": "1"}

	byConnect, byAgent := unique("sink-parity-connect"), unique("sink-parity-agent")
	restOK(t, peers.worker, http.MethodPost, "/connectors", map[string]any{"name": byConnect, "config": cfg, "initial_state": "STOPPED"})
	patched := restOK(t, peers.worker, http.MethodPatch, "/connectors/"+byConnect+"/offsets", map[string]any{"offsets": list})
	res := peers.agent.create(t, map[string]any{"name": byAgent, "config": cfg, "initial_state": "STOPPED", "initial_offsets": list})
	require.JSONEq(t, mustJSON(t, map[string]string{"message": res.Data.InitialOffsetsResponse}), patched)

	want := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%[1]q,"kafka_partition":0},"offset":{"kafka_offset":5}},
		{"partition":{"kafka_topic":%[1]q,"kafka_partition":2},"offset":{"kafka_offset":7}}]}`, topic)
	requireOffsets(t, peers.worker, byConnect, want)
	requireOffsets(t, peers.worker, byAgent, want)
	require.Equal(t, groupOffsets(t, "connect-"+byConnect, topic), groupOffsets(t, "connect-"+byAgent, topic))
	// The committed leader epoch too: Connect's PATCH commits none (-1).
	require.Equal(t, kafkatest.GroupEntries(t, peers.brokers, "connect-"+byConnect), kafkatest.GroupEntries(t, peers.brokers, "connect-"+byAgent))
}
