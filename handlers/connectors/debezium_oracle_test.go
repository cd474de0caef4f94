package connectors

import "testing"

func TestDebeziumOracle(t *testing.T) {
	cfg := map[string]string{"topic.prefix": "server1"}
	p := `{"server":"server1"}`
	e := `Offset entry 0 (partition {"server":"server1"}): `
	requireValidation(t, "Oracle", []validationCase{
		{name: "valid logminer", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"commit_scn":"2885432:1:","snapshot_scn":"2885000","scn":"2885432","scn_idx":3}}]`},
		{name: "valid legacy integers", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"commit_scn":2885432,"snapshot_scn":null,"scn":2885432,"txSeq":"ignored","window_advance_enabled":1}}]`},
		{name: "valid xstream", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"lcr_position":"0000","snapshot":"BLOCKING"}}]`},
		{name: "scn not decimal", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"scn":"0x2C0738"}}]`, code: 400, msg: e + `the offset's 'scn' must be a decimal SCN string such as "2885432", found string "0x2C0738"`},
		{name: "snapshot_scn boolean", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"snapshot_scn":true}}]`, code: 400, msg: e + `the offset's 'snapshot_scn' must be a decimal SCN string such as "2885432", found boolean true`},
		{name: "commit_scn double", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"commit_scn":1.5}}]`, code: 400, msg: e + `the offset's 'commit_scn' must be a string such as "2885432:1:", an integer or null, found number 1.5`},
		{name: "scn_idx string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"scn_idx":"1"}}]`, code: 400, msg: e + `the offset's 'scn_idx' must be an integer or null, found string "1"`},
		{name: "lcr_position number", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"lcr_position":1}}]`, code: 400, msg: e + `the offset's 'lcr_position' must be a string or null, found number 1`},
	})
}
