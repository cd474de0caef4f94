package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func TestJdbcSource(t *testing.T) {
	tsi := map[string]string{"mode": "timestamp+incrementing"}
	p := `{"protocol":"1","table":"demo.accounts"}`
	e := `Offset entry 0 (partition {"protocol":"1","table":"demo.accounts"}): `
	requireValidation(t, "JdbcSource", []validationCase{
		{name: "valid timestamp+incrementing", config: tsi, offsets: `[{"partition":` + p + `,"offset":{"timestamp_nanos":729000000,"incrementing":3,"timestamp":1790818723729}}]`},
		{name: "valid incrementing", config: map[string]string{"mode": "incrementing"}, offsets: `[{"partition":` + p + `,"offset":{"incrementing":18343}}]`},
		{name: "valid timestamp legacy V0", config: map[string]string{"mode": "timestamp"}, offsets: `[{"partition":{"table":"accounts"},"offset":{"timestamp_nanos":0,"timestamp":1547030056000}}]`},
		{name: "valid query mode", config: map[string]string{"mode": "incrementing", "query": "SELECT 1"}, offsets: `[{"partition":{"query":"query"},"offset":{"incrementing":5}}]`},
		{name: "valid empty offset", config: tsi, offsets: `[{"partition":` + p + `,"offset":{}}]`},
		{name: "bulk tombstone", config: map[string]string{"mode": "bulk"}, offsets: `[{"partition":{"table":"t"},"offset":null}]`},
		{name: "bulk offset", config: map[string]string{"mode": "bulk"}, offsets: `[{"partition":{"table":"t"},"offset":{"incrementing":1}}]`, code: 400, msg: `Offset entry 0 (partition {"table":"t"}): mode 'bulk' never reads offsets; give a null offset or none`},
		{name: "protocol a number", config: tsi, offsets: `[{"partition":{"protocol":1,"table":"t"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"protocol":1,"table":"t"}): the partition's 'protocol' must be the string "1", found number 1`},
		{name: "empty table", config: tsi, offsets: `[{"partition":{"protocol":"1","table":""},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"protocol":"1","table":""}): the partition's 'table' must be a non-empty string, found string ""`},
		{name: "table a number", config: tsi, offsets: `[{"partition":{"table":5},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"table":5}): the partition's 'table' must be a non-empty string, found number 5`},
		{name: "unknown partition keys", config: tsi, offsets: `[{"partition":{"tbl":"t"},"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition {"tbl":"t"}): the partition must be {"protocol":"1","table":<table>} or the legacy {"table":<table>}, found keys 'tbl'`},
		{name: "query mode needs query partition", config: map[string]string{"query": "SELECT 1"}, offsets: `[{"partition":` + p + `,"offset":{}}]`, code: 400, msg: e + `with 'query' set the partition must be exactly {"query":"query"}`},
		{name: "key of another mode", config: map[string]string{"mode": "incrementing"}, offsets: `[{"partition":` + p + `,"offset":{"timestamp":1}}]`, code: 400, msg: e + `mode 'incrementing' reads only the offset keys 'incrementing', found 'timestamp'`},
		{name: "unknown key without mode", config: map[string]string{}, offsets: `[{"partition":` + p + `,"offset":{"timestmap":1}}]`, code: 400, msg: e + `the offset may only have the keys 'incrementing', 'timestamp', 'timestamp_nanos', found 'timestmap'`},
		{name: "string value", config: tsi, offsets: `[{"partition":` + p + `,"offset":{"incrementing":"3"}}]`, code: 400, msg: e + `the offset's 'incrementing' must be an integer (the loader casts it to Long), found string "3"`},
		{name: "nanos without timestamp", config: tsi, offsets: `[{"partition":` + p + `,"offset":{"timestamp_nanos":5}}]`, code: 400, msg: e + `the offset's 'timestamp_nanos' is read only together with 'timestamp'`},
		{name: "nanos out of range", config: tsi, offsets: `[{"partition":` + p + `,"offset":{"timestamp_nanos":1000000000,"timestamp":1}}]`, code: 400, msg: e + `the offset's 'timestamp_nanos' must be between 0 and 999999999 (nanoseconds of the second), found 1000000000`},
		{name: "null partition", config: tsi, offsets: `[{"offset":{}}]`, code: 400, msg: `Offset entry 0 (partition null): the partition cannot be null; the JDBC source looks offsets up under {"protocol":"1","table":<table>} or, in query mode, {"query":"query"}`},
	})
}

func TestJdbcSourceOffsetOrder(t *testing.T) {
	c, ok := Builtin().Lookup("io.confluent.connect.jdbc.JdbcSourceConnector")
	require.True(t, ok)
	require.Nil(t, c.PartitionOrder, "V1 partitions are HashMaps")
	require.Nil(t, c.OffsetOrder, "capacity 4 and 16 order these keys alike")
	in := jsonvalue.Map{
		{Key: "incrementing", Value: jsonvalue.Number("3")},
		{Key: "timestamp", Value: jsonvalue.Number("1790818723729")},
		{Key: "timestamp_nanos", Value: jsonvalue.Number("729000000")},
	}
	// Order printed by a JVM for new HashMap<>(3) in toMap's insertion order.
	require.Equal(t, []string{"timestamp_nanos", "incrementing", "timestamp"}, mapKeys(offsetstore.JavaHashMapOrder(in)))
}
