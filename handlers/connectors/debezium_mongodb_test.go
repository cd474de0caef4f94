package connectors

import "testing"

func TestDebeziumMongoDB(t *testing.T) {
	cfg := map[string]string{"topic.prefix": "dbserver1"}
	p := `{"server_id":"dbserver1"}`
	e := `Offset entry 0 (partition {"server_id":"dbserver1"}): `
	requireValidation(t, "MongoDb", []validationCase{
		{name: "valid 2.7", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"sec":1700000000,"ord":1,"resume_token":"gmVk"}}]`},
		{name: "valid legacy rs partition", config: cfg, offsets: `[{"partition":{"rs":"rs0","server_id":"dbserver1"},"offset":{"sec":"1700000000","ord":1,"transaction_id":null,"lsid":"x","txnNumber":"3","initsync":"whatever"}}]`},
		{name: "1.x mongodb.name", config: map[string]string{"mongodb.name": "dbserver1"}, offsets: `[{"partition":` + p + `,"offset":{"sec":1,"ord":1,"h":null}}]`},
		{name: "sec not an integer", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"sec":"soon"}}]`, code: 400, msg: "Source offset 'sec' parameter value soon could not be converted to an integer"},
		{name: "ord beyond int", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"ord":"2147483648"}}]`, code: 400, msg: "Source offset 'ord' parameter value 2147483648 could not be converted to an integer"},
		{name: "txnNumber not a long", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"txnNumber":"x"}}]`, code: 400, msg: "Source offset 'txnNumber' parameter value x could not be converted to a long"},
		{name: "resume_token not a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"resume_token":1}}]`, code: 400, msg: e + `the offset's 'resume_token' must be a string or null, found number 1`},
		{name: "server key", config: cfg, offsets: `[{"partition":{"server":"dbserver1"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"server":"dbserver1"}): the partition must have exactly the keys 'server_id' or 'rs', 'server_id' (found 'server'), or the connector's tasks never read this offset`},
		{name: "wrong logical name", config: cfg, offsets: `[{"partition":{"rs":"rs0","server_id":"x"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"rs":"rs0","server_id":"x"}): the partition's 'server_id' is "x" but the connector's topic.prefix is "dbserver1"; the tasks read offsets only under their logical name`},
	})
}
