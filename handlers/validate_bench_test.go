package handlers

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// BenchmarkValidateSourceOffsets is validate_offsets of the bulk scenario: 100,000
// MirrorSourceConnector offsets checked, deduplicated and encoded into records.
func BenchmarkValidateSourceOffsets(b *testing.B) {
	class, ok := connectors.Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	if !ok {
		b.Fatal("MirrorSourceConnector is not registered")
	}
	// The offsets as the request decoder makes them (shared boxes, strings in the body).
	var body bytes.Buffer
	body.WriteString(`{"name":"mm2-bulk","config":{},"initial_offsets":[`)
	for i := range 100_000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"partition":{"cluster":"src","topic":"mirrored-%05d","partition":%d},"offset":{"offset":%d}}`, i/100, i%100, 1000+7*i)
	}
	body.WriteString(`]}`)
	build := func() []events.OffsetEntry {
		req, err := events.ParseCreateRequest(body.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		return req.InitialOffsets
	}
	props := map[string]string{"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "src"}
	c := &Creator{gc: &collector{collect: runtime.GC}}
	b.ReportAllocs()
	for range b.N {
		// validate_offsets consumes the decoded offsets: each run gets its own.
		b.StopTimer()
		entries := build()
		b.StartTimer()
		j := &job{req: &events.Request{Data: events.CreateRequest{InitialOffsets: entries}},
			name: "mm2-bulk", props: props, class: class, typ: connectors.Source}
		if err := c.validateOffsets(context.Background(), j); err != nil {
			b.Fatal(err)
		}
		if len(j.records) != len(entries) {
			b.Fatalf("%d records for %d offsets", len(j.records), len(entries))
		}
	}
}

// BenchmarkSourceRecordsFromText is validate_offsets of the bulk scenario's requests as the
// decoder hands them on (their offsets as text): 100,000 offsets read, checked and encoded.
func BenchmarkSourceRecordsFromText(b *testing.B) {
	reg := connectors.Builtin()
	for _, f := range fastFamilies() {
		switch f.name {
		case "mm2 source", "filestream", "debezium sqlserver":
		default:
			continue
		}
		for _, partitions := range []int{0, 25} {
			// 0: records; 25: record batches for a topic of 25 partitions (Connect's default).
			b.Run(fmt.Sprintf("%s/partitions=%d", f.name, partitions), func(b *testing.B) {
				class, _ := reg.Lookup(f.class)
				props := familyProps(f)
				body := f.request(rand.New(rand.NewPCG(1, 2)), 100_000, false)
				raw := body[bytes.IndexByte(body, '[') : len(body)-1]
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					recs, enc, err := sourceRecordsFromText("c", class, props, raw, partitions)
					n := len(recs)
					if enc != nil {
						n = enc.Len()
					}
					if err != nil || n != 100_000 {
						b.Fatalf("%d records: %v", n, err)
					}
				}
			})
		}
	}
}
