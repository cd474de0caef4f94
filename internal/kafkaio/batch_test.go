package kafkaio

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/stretchr/testify/require"
)

// TestRecordBatchMatchesKafkaGo holds the hand-written batch encoder to kafka-go's own: the
// same records at the same time give the same bytes, size prefix, CRC and all.
func TestRecordBatchMatchesKafkaGo(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_123)
	long := bytes.Repeat([]byte("v"), 70_000) // lengths that take three varint bytes
	type rec struct {
		key, value []byte
		headers    []kafka.Header
	}
	sets := map[string][]rec{
		"one":        {{key: []byte(`["c",{"a":1}]`), value: []byte(`{"o":1}`)}},
		"tombstones": {{key: []byte("k1")}, {key: []byte("k2"), value: []byte{}}, {value: []byte("no key")}},
		"headers": {{key: []byte("k"), value: []byte("v"), headers: []kafka.Header{
			{Key: "ce_id", Value: []byte("42")}, {Key: "empty", Value: []byte{}}, {Key: "nil"}}}},
		"long": {{key: long[:300], value: long}, {key: []byte("after"), value: []byte("long")}},
	}
	many := make([]rec, 300) // offset deltas above 63 take two varint bytes
	for i := range many {
		many[i] = rec{key: []byte{byte(i)}, value: bytes.Repeat([]byte{'x'}, i)}
	}
	sets["many"] = many
	for name, recs := range sets {
		t.Run(name, func(t *testing.T) {
			var b batchBuilder
			b.buf = []byte("prefix") // a batch appends to what is there
			b.beginAt(at.UnixMilli())
			kr := make([]kafka.Record, len(recs))
			for i, r := range recs {
				b.add(r.key, r.value, r.headers)
				kr[i] = kafka.Record{Time: at, Headers: r.headers}
				if r.key != nil {
					kr[i].Key = kafka.NewBytes(r.key)
				}
				if r.value != nil {
					kr[i].Value = kafka.NewBytes(r.value)
				}
			}
			got := b.finish()
			require.Equal(t, "prefix", string(got[:6]))

			rs := protocol.RecordSet{Version: 2, Records: kafka.NewRecordReader(kr...)}
			var want bytes.Buffer
			_, err := rs.WriteTo(&want)
			require.NoError(t, err)
			require.Equal(t, want.Bytes(), got[6:])
		})
	}
}

// BenchmarkRecordBatch encodes 10,000 offsets-topic records into one batch: the in-house
// encoder ("raw") against kafka-go's protocol.RecordSet with the records boxed as it wants
// them ("kafka-go"), which the writes used before.
func BenchmarkRecordBatch(b *testing.B) {
	keys := make([][]byte, 10_000)
	values := make([][]byte, len(keys))
	size := 0
	for i := range keys {
		keys[i] = fmt.Appendf(nil, `["mm2",{"cluster":"src","partition":%d,"topic":"mirrored-%05d"}]`, i%100, i/100)
		values[i] = fmt.Appendf(nil, `{"offset":%d}`, 1000+7*i)
		size += len(keys[i]) + len(values[i])
	}
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			bb := batchBuilder{buf: make([]byte, 0, size+16*len(keys)+64)}
			bb.begin()
			for i := range keys {
				bb.add(keys[i], values[i], nil)
			}
			bb.finish()
		}
	})
	b.Run("kafka-go", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		var out bytes.Buffer
		for b.Loop() {
			recs := make([]kafka.Record, len(keys))
			for i := range keys {
				recs[i] = kafka.Record{Key: kafka.NewBytes(keys[i]), Value: kafka.NewBytes(values[i])}
			}
			rs := protocol.RecordSet{Version: 2, Records: kafka.NewRecordReader(recs...)}
			out.Reset()
			if _, err := rs.WriteTo(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
