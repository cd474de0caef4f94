package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// benchBody is a create request of n offsets shaped as cmd/offsetagent-bench's bulk requests
// of family name (mm2, filestream, debezium).
func benchBody(family string, n int) (class string, props map[string]string, body []byte) {
	var b bytes.Buffer
	switch family {
	case "mm2":
		class = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
		props = map[string]string{"source.cluster.alias": "src", "target.cluster.alias": "dst", "topics": ".*", "tasks.max": "4"}
	case "filestream":
		class = "org.apache.kafka.connect.file.FileStreamSourceConnector"
		props = map[string]string{"file": "/data/in.txt", "topic": "lines", "tasks.max": "1"}
	case "debezium":
		class = "io.debezium.connector.sqlserver.SqlServerConnector"
		props = map[string]string{"topic.prefix": "srv", "database.hostname": "db", "tasks.max": "1"}
	}
	props["connector.class"] = class
	cfg, _ := json.Marshal(props)
	props["name"] = "bulk"
	fmt.Fprintf(&b, `{"name":"bulk","config":%s,"initial_offsets":[`, cfg)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch family {
		case "mm2":
			fmt.Fprintf(&b, `{"partition":{"cluster":"src","partition":%d,"topic":"mirrored-%05d"},"offset":{"offset":%d}}`, i%100, i/100, 1000+7*i)
		case "filestream":
			fmt.Fprintf(&b, `{"partition":{"filename":"/data/logs/app-%06d.log"},"offset":{"position":%d}}`, i, 30+11*i)
		case "debezium":
			lsn := fmt.Sprintf("%08x:%08x:%04x", 45, 2888+i, 3)
			fmt.Fprintf(&b, `{"partition":{"server":"srv","database":"db%06d"},"offset":{"commit_lsn":%q,"change_lsn":%q,"event_serial_no":1}}`, i, lsn, lsn)
		}
	}
	b.WriteString("]}")
	return class, props, b.Bytes()
}

// BenchmarkRequestInput is what the agent does with a bulk request's bytes before the write,
// for 100,000 offsets of each family of the bulk scenario, into the record batches of a
// 25-partition offsets topic: "checked" decodes the record (events.DecodeRequest, which checks
// the offsets text) and reads the text (sourceRecordsFromText); "read-ahead" is the agent's
// way, the decoding deferred (events.DecodeRequestDeferred) and the text read once
// (Creator.ReadAhead).
func BenchmarkRequestInput(b *testing.B) {
	reg := connectors.Builtin()
	c := &Creator{opts: Options{Registry: reg, Store: newFakeStore(), OffsetsTopic: testOffsetsTopic}}
	for _, family := range []string{"mm2", "filestream", "debezium"} {
		className, props, body := benchBody(family, 100_000)
		class, _ := reg.Lookup(className)
		msg, err := events.RequestMessage("requests", body, events.RequestOptions{ID: "bench", Source: "/bench"})
		if err != nil {
			b.Fatal(err)
		}
		run := func(name string, op func(b *testing.B)) {
			b.Run(family+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(msg.Value)))
				b.ReportAllocs()
				defer reportCPU(b)()
				for b.Loop() {
					op(b)
				}
			})
		}
		run("checked", func(b *testing.B) {
			req, err := events.DecodeRequest(&msg, 16<<20)
			if err != nil || req.Data.RawOffsets == nil {
				b.Fatalf("decode: %v", err)
			}
			_, enc, err := sourceRecordsFromText("bulk", class, props, req.Data.RawOffsets, 25)
			if err != nil || enc == nil || enc.Len() != 100_000 {
				b.Fatalf("not encoded: %v", err)
			}
		})
		run("read-ahead", func(b *testing.B) {
			req, err := events.DecodeRequestDeferred(&msg, 16<<20)
			if err != nil || !req.Deferred() {
				b.Fatalf("decode: %v", err)
			}
			if _, err := c.ReadAhead(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			if a := c.takeReadAhead(req); a == nil || a.encoded == nil || a.encoded.Len() != 100_000 {
				b.Fatal("not read ahead")
			}
		})
	}
}

// reportCPU reports the process's CPU time per operation (cpu-ms/op) from now to the call of
// the function it returns: on a shared machine it moves less than the wall time.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
