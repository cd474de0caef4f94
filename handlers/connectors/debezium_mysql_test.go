package connectors

import "testing"

func TestDebeziumMySQL(t *testing.T) {
	cfg := map[string]string{"topic.prefix": "dbserver1"}
	p := `{"server":"dbserver1"}`
	for _, class := range []string{"io.debezium.connector.mysql.MySqlConnector", "MariaDb"} {
		t.Run(class, func(t *testing.T) {
			requireValidation(t, class, []validationCase{
				{name: "valid current", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"ts_sec":1700000000,"file":"mysql-bin.000003","pos":154,"gtids":"3e11fa47:1-5","row":1,"server_id":223344,"event":2}}]`},
				{name: "valid 2.5 with null transaction_id", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"transaction_id":null,"file":"f","pos":"154","snapshot":true}}]`},
				{name: "valid 3.0.2 snapshot type", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","pos":4,"snapshot":"INITIAL","transaction_data_collection_order_db.t":3}}]`},
				{name: "legacy logical name", config: map[string]string{"database.server.name": "dbserver1"}, offsets: `[{"partition":` + p + `,"offset":{"file":"f"}}]`},
				{name: "no logical name configured", config: map[string]string{}, offsets: `[{"partition":{"server":"any"},"offset":{"file":"f"}}]`},
				{name: "tombstone", config: cfg, offsets: `[{"partition":{"server":"other"},"offset":null}]`},
				{name: "file missing", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"pos":4}}]`, code: 400, msg: "Source offset 'file' parameter is missing"},
				{name: "file null", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":null,"pos":4}}]`, code: 400, msg: "Source offset 'file' parameter is missing"},
				{
					name: "file not a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":3}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'file' must be a string (the binlog file name), found number 3`,
				},
				{
					name: "pos not a long", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","pos":"abc"}}]`, code: 400,
					msg: "Source offset 'pos' parameter value abc could not be converted to a long",
				},
				{
					name: "event boolean", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","event":true}}]`, code: 400,
					msg: "Source offset 'event' parameter value true could not be converted to a long",
				},
				{
					name: "row beyond int", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","row":4294967296}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'row' is 4294967296, which does not fit the int the connector narrows it to`,
				},
				{
					name: "gtids not a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","gtids":1}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'gtids' must be a string or null, found number 1`,
				},
				{
					name: "snapshot false", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","snapshot":false}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'snapshot' must be true or one of "INITIAL", "BLOCKING", "INCREMENTAL", found boolean false`,
				},
				{
					name: "transaction_id not a string", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","transaction_id":7}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'transaction_id' must be a string or null, found number 7`,
				},
				{
					name: "collection order not an integer", config: cfg, offsets: `[{"partition":` + p + `,"offset":{"file":"f","transaction_data_collection_order_db.t":"3"}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the offset's 'transaction_data_collection_order_db.t' must be an integer (the transaction's event count for that table), found string "3"`,
				},
				{
					name: "server differs from topic.prefix", config: cfg, offsets: `[{"partition":{"server":"other"},"offset":{"file":"f"}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"other"}): the partition's 'server' is "other" but the connector's topic.prefix is "dbserver1"; the tasks read offsets only under their logical name`,
				},
				{
					name: "server differs from database.server.name", config: map[string]string{"database.server.name": "old"}, offsets: `[{"partition":` + p + `,"offset":{"file":"f"}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1"}): the partition's 'server' is "dbserver1" but the connector's database.server.name is "old"; the tasks read offsets only under their logical name`,
				},
				{
					name: "extra partition key", config: cfg, offsets: `[{"partition":{"server":"dbserver1","database":"inventory"},"offset":{"file":"f"}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":"dbserver1","database":"inventory"}): the partition must have exactly the keys 'server' (found 'server', 'database'), or the connector's tasks never read this offset`,
				},
				{
					name: "server not a string", config: cfg, offsets: `[{"partition":{"server":1},"offset":{"file":"f"}}]`, code: 400,
					msg: `Offset entry 0 (partition {"server":1}): the partition's 'server' must be a string, found number 1`,
				},
				{
					name: "null partition", config: cfg, offsets: `[{"partition":null,"offset":{"file":"f"}}]`, code: 400,
					msg: `Offset entry 0 (partition null): the partition cannot be null; the connector's tasks look their offset up under a partition with the key 'server'`,
				},
			})
		})
	}
}
