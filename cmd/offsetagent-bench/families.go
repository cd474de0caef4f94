package main

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// family is one connector family of the bulk scenario: its class, config and the i-th of its
// source offsets.
type family struct {
	tag    string // short name in the table
	class  string
	config string // the config's members after connector.class, as JSON text
	entry  func(i int) (partition, offset jsonvalue.Map)
}

// mm2Class is MirrorMaker 2's source connector, the class of the requests of the latency,
// many and migrate scenarios.
const mm2Class = "org.apache.kafka.connect.mirror.MirrorSourceConnector"

// mm2Family is MirrorMaker 2's source, whose partitions are {"cluster","topic","partition"}
// and offsets {"offset": N}: 100 upstream partitions per topic.
var mm2Family = family{
	tag:    "MirrorMaker 2",
	class:  mm2Class,
	config: `"source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*","tasks.max":"4"`,
	entry: func(i int) (jsonvalue.Map, jsonvalue.Map) {
		return jsonvalue.Map{
				{Key: "cluster", Value: "src"},
				{Key: "topic", Value: fmt.Sprintf("mirrored-%05d", i/100)},
				{Key: "partition", Value: jsonvalue.Number(strconv.Itoa(i % 100))},
			}, jsonvalue.Map{
				{Key: "offset", Value: jsonvalue.Number(strconv.Itoa(1000 + 7*i))},
			}
	},
}

// fileFamily is FileStream's source: {"filename"} -> {"position": N}, one file per offset.
var fileFamily = family{
	tag:    "FileStream",
	class:  "org.apache.kafka.connect.file.FileStreamSourceConnector",
	config: `"file":"/data/in.txt","topic":"lines","tasks.max":"1"`,
	entry: func(i int) (jsonvalue.Map, jsonvalue.Map) {
		return jsonvalue.Map{{Key: "filename", Value: fmt.Sprintf("/data/logs/app-%06d.log", i)}},
			jsonvalue.Map{{Key: "position", Value: jsonvalue.Number(strconv.Itoa(30 + 11*i))}}
	},
}

// sqlServerFamily is Debezium-shaped: SQL Server's {"server","database"} partitions, one
// database per offset, with LSN strings and a serial number.
var sqlServerFamily = family{
	tag:    "Debezium SQL Server",
	class:  "io.debezium.connector.sqlserver.SqlServerConnector",
	config: `"topic.prefix":"srv","database.hostname":"db","tasks.max":"1"`,
	entry: func(i int) (jsonvalue.Map, jsonvalue.Map) {
		lsn := fmt.Sprintf("%08x:%08x:%04x", 45, 2888+i, 3)
		return jsonvalue.Map{{Key: "server", Value: "srv"}, {Key: "database", Value: fmt.Sprintf("db%06d", i)}},
			jsonvalue.Map{
				{Key: "commit_lsn", Value: lsn}, {Key: "change_lsn", Value: lsn},
				{Key: "event_serial_no", Value: jsonvalue.Number("1")},
			}
	},
}

// body is a create request for connector name with n source offsets of f.
func (f family) body(name string, n int) []byte {
	var b bytes.Buffer
	b.Grow(200 + 100*n)
	fmt.Fprintf(&b, `{"name":%q,"config":{"connector.class":%q,%s},"initial_offsets":[`, name, f.class, f.config)
	buf := make([]byte, 0, 256)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		p, o := f.entry(i)
		buf = append(buf[:0], `{"partition":`...)
		buf = offsetstore.AppendMapJSON(buf, p)
		buf = append(buf, `,"offset":`...)
		buf = offsetstore.AppendMapJSON(buf, o)
		buf = append(buf, '}')
		b.Write(buf)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// records are the offsets-topic records Connect would hold for f.body(name, n): the key and
// value in HashMap order and the murmur2 partition of a 25-partition topic.
func (f family) records(topic, name string, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		p, o := f.entry(i)
		k := offsetstore.AppendKey(nil, name, offsetstore.JavaHashMapOrder(p))
		v := offsetstore.AppendMapJSON(nil, offsetstore.JavaHashMapOrder(o))
		msgs[i] = kafka.Message{Topic: topic, Key: k, Value: v, Partition: offsetstore.PartitionFor(k, 25)}
	}
	return msgs
}

// mm2Body is a MirrorMaker 2 create request for connector name with n offsets.
func mm2Body(name string, n int) []byte { return mm2Family.body(name, n) }

// mm2Records are the records of mm2Body(name, n).
func mm2Records(topic, name string, n int) []kafka.Message { return mm2Family.records(topic, name, n) }
