package cutover

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

func TestOffsetOrder(t *testing.T) {
	obj := func(s string) jsonvalue.Map {
		m, err := jsonvalue.NewStringScanner(s).Object()
		require.NoError(t, err)
		return m
	}
	cases := []struct {
		name, class, got, placed string
		cmp                      int
		ok                       bool
	}{
		{name: "file after", class: "FileStreamSource", got: `{"position":45}`, placed: `{"position":30}`, cmp: 1, ok: true},
		{name: "file before", class: "org.apache.kafka.connect.file.FileStreamSourceConnector", got: `{"position":12}`, placed: `{"position":30}`, cmp: -1, ok: true},
		{name: "mm2 same", class: "MirrorSourceConnector", got: `{"offset":7}`, placed: `{"offset":7}`, cmp: 0, ok: true},
		{name: "jdbc incrementing", class: "JdbcSourceConnector", got: `{"incrementing":18344}`, placed: `{"incrementing":18343}`, cmp: 1, ok: true},
		{name: "jdbc timestamp nanos", class: "JdbcSource", got: `{"timestamp_nanos":2,"incrementing":3,"timestamp":1790818723729}`,
			placed: `{"timestamp_nanos":729000000,"incrementing":9,"timestamp":1790818723728}`, cmp: 1, ok: true},
		{name: "binlog next file", class: "MySqlConnector", got: `{"file":"mysql-bin.000010","pos":4}`, placed: `{"file":"mysql-bin.000009","pos":154,"event":2,"row":1}`, cmp: 1, ok: true},
		{name: "binlog row", class: "MySql", got: `{"file":"mysql-bin.000003","pos":154,"event":2}`, placed: `{"file":"mysql-bin.000003","pos":154,"event":2,"row":1}`, cmp: -1, ok: true},
		{name: "binlog other server", class: "MySql", got: `{"file":"other-bin.000001","pos":4}`, placed: `{"file":"mysql-bin.000003","pos":154}`},
		{name: "postgres commit lsn", class: "PostgresConnector", got: `{"lsn_proc":37051200,"lsn_commit":37051190,"lsn":37051200}`,
			placed: `{"lsn_proc":37051152,"lsn_commit":36989040,"lsn":37051152,"txId":1007}`, cmp: 1, ok: true},
		{name: "postgres snapshot", class: "Postgres", got: `{"lsn":5,"snapshot":true,"last_snapshot_record":false}`, placed: `{"lsn":4}`},
		{name: "sql server hex lsn", class: "SqlServer", got: `{"commit_lsn":"0000002b:00000a28:0004","change_lsn":"0000002b:00000a28:0003"}`,
			placed: `{"commit_lsn":"0000002b:00000a28:0003","change_lsn":"0000002b:00000a28:0002","event_serial_no":1}`, cmp: 1, ok: true},
		{name: "oracle scn string", class: "OracleConnector", got: `{"scn":"10000000000000000001"}`, placed: `{"scn":"9999999999999999999"}`, cmp: 1, ok: true},
		// A transaction left open holds the low watermark (scn) back while commits go on.
		{name: "oracle commits past a held watermark", class: "OracleConnector", got: `{"commit_scn":"1100:1:0b.2","snapshot_scn":"500","scn":"900"}`,
			placed: `{"commit_scn":"1000:1:0a.1","snapshot_scn":"500","scn":"900"}`, cmp: 1, ok: true},
		{name: "oracle an earlier commit", class: "OracleConnector", got: `{"commit_scn":"990:1:","scn":"950"}`,
			placed: `{"commit_scn":"1000:1:0a.1","scn":"900"}`, cmp: -1, ok: true},
		{name: "oracle redo threads apart", class: "OracleConnector", got: `{"commit_scn":"1100:1:,900:2:","scn":"950"}`,
			placed: `{"commit_scn":"1000:1:,1000:2:","scn":"900"}`},
		{name: "oracle the same commit, more of a transaction emitted", class: "OracleConnector",
			got:    `{"commit_scn":"1000:1:0a.1","scn":"900","txId":"0b.2","txSeq":7}`,
			placed: `{"commit_scn":"1000:1:0a.1","scn":"900","txId":"0b.2","txSeq":3}`, cmp: 1, ok: true},
		{name: "mongodb", class: "MongoDbConnector", got: `{"sec":1700000000,"ord":2}`, placed: `{"sec":1700000000,"ord":3}`, cmp: -1, ok: true},
		{name: "a member missing", class: "FileStreamSource", got: `{"pos":45}`, placed: `{"position":30}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			order := orderOf(connectors.Builtin(), c.class)
			require.NotNil(t, order)
			cmp, ok := order(obj(c.got), obj(c.placed))
			require.Equal(t, c.ok, ok)
			if ok {
				require.Equal(t, c.cmp, cmp)
			}
		})
	}
	require.Nil(t, orderOf(connectors.Builtin(), "io.aiven.kafka.connect.s3.source.S3SourceConnector"))
	require.Nil(t, orderOf(connectors.Builtin(), "MirrorCheckpointConnector"))
}
