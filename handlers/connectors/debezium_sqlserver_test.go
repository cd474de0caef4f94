package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func TestDebeziumSQLServer(t *testing.T) {
	cfg := map[string]string{"topic.prefix": "server1", "database.names": "testDB, other"}
	p := `{"server":"server1","database":"testDB"}`
	e := `Offset entry 0 (partition {"server":"server1","database":"testDB"}): `
	requireValidation(t, "SqlServer", []validationCase{
		{name: "valid streaming", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"event_serial_no":1,"commit_lsn":"0000002d:00000b48:0003","change_lsn":"0000002d:00000b48:0002"}}]`},
		{name: "valid snapshot 3.0.1", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"commit_lsn":"NULL","snapshot":true,"snapshot_completed":false}}]`},
		{name: "database case-insensitive", config: cfg, offsets: `[{"partition":{"database":"TESTDB","server":"server1"},"offset":{"commit_lsn":"0000002D:00000B48:0003"}}]`},
		{name: "1.x single database", config: map[string]string{"database.server.name": "server1", "database.dbname": "testDB"}, offsets: `[{"partition":{"server":"server1"},"offset":{"commit_lsn":"0000002d:00000b48:0003"}}]`},
		{name: "database not configured", config: cfg, offsets: `[{"partition":{"server":"server1","database":"nope"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"server":"server1","database":"nope"}): the partition's 'database' "nope" is not one of database.names (testDB, other), so no task reads this offset`},
		{name: "server-only with database.names", config: cfg, offsets: `[{"partition":{"server":"server1"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"server":"server1"}): the partition must have the keys 'server' and 'database' when database.names is set; the server-only form is read only by 1.x single-database connectors (database.dbname)`},
		{name: "unknown partition keys", config: cfg, offsets: `[{"partition":{"server":"server1","db":"testDB"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"server":"server1","db":"testDB"}): the partition must have exactly the keys 'server', 'database' or 'server' (found 'server', 'db'), or the connector's tasks never read this offset`},
		{name: "bad lsn", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"commit_lsn":"2d:b48:3"}}]`, code: 400, msg: e + `the offset's 'commit_lsn' must be an LSN string such as "0000002d:00000b48:0003" (or "NULL"), found string "2d:b48:3"`},
		{name: "lsn a number", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"change_lsn":5}}]`, code: 400, msg: e + `the offset's 'change_lsn' must be an LSN string such as "0000002d:00000b48:0003" (or "NULL"), found number 5`},
		{name: "event_serial_no a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"event_serial_no":"1"}}]`, code: 400, msg: e + `the offset's 'event_serial_no' must be an integer or null, found string "1"`},
	})
}

func TestSQLServerPartitionOrder(t *testing.T) {
	c, ok := Builtin().Lookup("io.debezium.connector.sqlserver.SqlServerConnector")
	require.True(t, ok)
	in := jsonvalue.Map{{Key: "database", Value: "testDB"}, {Key: "server", Value: "server1"}}
	require.Equal(t, jsonvalue.Map{{Key: "server", Value: "server1"}, {Key: "database", Value: "testDB"}}, c.PartitionOrder(in))
	require.Equal(t, []string{"server", "database"}, mapKeys(offsetstore.JavaHashMapOrder(in)), "the explicit order is also the HashMap order")
}
