package connectors

import "testing"

func TestDebeziumPostgres(t *testing.T) {
	cfg := map[string]string{"topic.prefix": "dbserver1"}
	p := `{"server":"dbserver1"}`
	e := `Offset entry 0 (partition {"server":"dbserver1"}): `
	requireValidation(t, "Postgres", []validationCase{
		{name: "valid streaming", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"lsn_proc":37051152,"messageType":"INSERT","lsn_commit":36989040,"lsn":37051152,"txId":1007,"ts_usec":1767208115470483}}]`},
		{name: "valid snapshot", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"last_snapshot_record":true,"lsn":1,"txId":2,"ts_usec":3,"snapshot":true}}]`},
		{name: "valid empty", config: cfg, offsets: `[{"partition":` + p + `,"offset":{}}]`},
		{name: "lsn a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"lsn":"0/16B3748"}}]`, code: 400, msg: e + `the offset's 'lsn' must be a number or null, found string "0/16B3748"`},
		{name: "ts_usec a double", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"ts_usec":1.5}}]`, code: 400, msg: e + `the offset's 'ts_usec' must be an integer (commit time in epoch microseconds), found number 1.5`},
		{name: "ts_usec null", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"ts_usec":null}}]`, code: 400, msg: e + `the offset's 'ts_usec' must be an integer (commit time in epoch microseconds), found null`},
		{name: "unknown messageType", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"messageType":"insert"}}]`, code: 400, msg: e + `the offset's 'messageType' must be one of INSERT, UPDATE, DELETE, TRUNCATE, MESSAGE, BEGIN, COMMIT, NOOP, ORIGIN, found string "insert"`},
		{name: "last_snapshot_record a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"last_snapshot_record":"true"}}]`, code: 400, msg: e + `the offset's 'last_snapshot_record' must be a boolean, found string "true"`},
		{name: "incremental snapshot key not a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"incremental_snapshot_collections":1}}]`, code: 400, msg: e + `the offset's 'incremental_snapshot_collections' must be a string or null, found number 1`},
		{name: "wrong server", config: cfg, offsets: `[{"partition":{"server":"x"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"server":"x"}): the partition's 'server' is "x" but the connector's topic.prefix is "dbserver1"; the tasks read offsets only under their logical name`},
	})
}
