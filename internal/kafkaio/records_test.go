package kafkaio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// testRecord is a record as written: a nil key or value is null.
type testRecord struct {
	key, value []byte
	headers    []kafka.Header
	at         time.Time
}

// kafkaGoBatch encodes recs as one record batch with kafka-go's encoder (attrs: compression,
// control and transactional bits) and sets its base offset.
func kafkaGoBatch(t *testing.T, base int64, attrs protocol.Attributes, recs ...testRecord) []byte {
	t.Helper()
	kr := make([]kafka.Record, len(recs))
	for i, r := range recs {
		kr[i] = kafka.Record{Time: r.at, Headers: r.headers}
		if r.key != nil {
			kr[i].Key = kafka.NewBytes(r.key)
		}
		if r.value != nil {
			kr[i].Value = kafka.NewBytes(r.value)
		}
	}
	var buf bytes.Buffer
	rs := protocol.RecordSet{Version: 2, Attributes: attrs, Records: kafka.NewRecordReader(kr...)}
	_, err := rs.WriteTo(&buf)
	require.NoError(t, err)
	b := buf.Bytes()[4:] // the record set's size prefix
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

// testRecords are records of every shape: null key, empty and null values, headers (one with
// a null value), a long value (three-byte varints), ten each so that batches compress.
func testRecords(at time.Time, first int) []testRecord {
	var recs []testRecord
	for i := first; i < first+10; i++ {
		r := testRecord{at: at.Add(time.Duration(i) * time.Millisecond),
			key: fmt.Appendf(nil, `["c",{"k":%d}]`, i), value: fmt.Appendf(nil, `{"o":%d}`, i)}
		switch i % 5 {
		case 1:
			r.key = nil
		case 2:
			r.value = []byte{}
		case 3:
			r.value = nil // a tombstone
		case 4:
			r.headers = []kafka.Header{{Key: "ce_id", Value: []byte("42")}, {Key: "nil"}}
			r.value = bytes.Repeat([]byte{'v'}, 20_000)
		}
		recs = append(recs, r)
	}
	return recs
}

// wantMessages is what the reader gives for recs at offsets base, base+1, ...
func wantMessages(base int64, recs []testRecord) []kafka.Message {
	var out []kafka.Message
	for i, r := range recs {
		out = append(out, kafka.Message{Topic: "t", Partition: 3, Offset: base + int64(i), Key: r.key,
			Value: r.value, Headers: r.headers, Time: time.UnixMilli(r.at.UnixMilli())})
	}
	return out
}

// collect reads data with rr from offset, copying what flush is given (a borrowed record
// is valid only until then), as a view does.
func collect(rr *recordReader, data []byte, offset int64) ([]kafka.Message, int64, error) {
	var got []kafka.Message
	keep := func(ms []kafka.Message) {
		for _, m := range ms {
			m.Key, m.Value = copyKeyValue(m.Key, m.Value)
			for i, h := range m.Headers {
				if h.Value != nil {
					m.Headers[i].Value = bytes.Clone(h.Value)
				}
			}
			got = append(got, m)
		}
		clear(ms) // a borrowed record must not be used after flush
	}
	out, next, err := rr.read(data, "t", 3, offset, nil, keep, nil)
	keep(out)
	return got, next, err
}

// Batches of kafka-go's encoder, each compression, copied and borrowed: every record from the
// offset asked for, nulls and empties as written, control batches skipped but counted.
func TestRecordReaderKafkaGoBatches(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	first, second := testRecords(at, 0), testRecords(at, 10)
	control := testRecord{at: at, key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}} // a commit marker
	for _, codec := range []compress.Compression{compress.None, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		for _, borrow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s borrow=%v", codec, borrow), func(t *testing.T) {
				attrs := protocol.Attributes(codec)
				var data []byte
				data = append(data, kafkaGoBatch(t, 100, attrs, first...)...)
				data = append(data, kafkaGoBatch(t, 110, protocol.Control|protocol.Transactional, control)...)
				// The last batch as it is in data: kafka-go's snappy encoder need not give the
				// same bytes twice (its pooled writers), so the cut below is made from these.
				last := kafkaGoBatch(t, 111, attrs, second...)
				data = append(data, last...)
				rr := &recordReader{borrow: borrow}

				got, next, err := collect(rr, data, 104) // the first batch starts before the offset
				require.NoError(t, err)
				want := append(wantMessages(104, first[4:]), wantMessages(111, second)...)
				require.Equal(t, want, got)
				require.Equal(t, int64(121), next)

				// A fetch cut inside the last batch (a broker's byte limit) ends after the
				// batches before it.
				for _, cut := range []int{1, len(last) - 20} {
					got, next, err = collect(rr, data[:len(data)-cut], 100)
					require.NoError(t, err, cut)
					require.Equal(t, wantMessages(100, first), got)
					require.Equal(t, int64(111), next, "the control record moves the position")
				}

				// Nothing at or after the offset: no record, the position unmoved.
				got, next, err = collect(rr, data, 121)
				require.NoError(t, err)
				require.Empty(t, got)
				require.Equal(t, int64(121), next)
			})
		}
	}
}

func TestRecordReaderRejectsCorruptBatches(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	good := kafkaGoBatch(t, 0, 0, testRecords(at, 0)...)
	tests := []struct {
		name   string
		mangle func(b []byte)
		want   string
	}{
		{name: "flipped record byte", mangle: func(b []byte) { b[len(b)-3] ^= 1 }, want: "CRC mismatch"},
		{name: "unknown magic", mangle: func(b []byte) { b[batchMagicOffset] = 3 }, want: "magic 3"},
		{name: "old magic, batch bytes", mangle: func(b []byte) { b[batchMagicOffset] = 1 }, want: "CRC mismatch"},
		{name: "length below the header", mangle: func(b []byte) { binary.BigEndian.PutUint32(b[batchLengthOffset:], 10) }, want: "length 10"},
		{name: "record count beyond the records", mangle: func(b []byte) {
			binary.BigEndian.PutUint32(b[batchCountOffset:], 11)
			binary.BigEndian.PutUint32(b[crcOffset:], crc32.Checksum(b[attrOffset:], castagnoli))
		}, want: "record length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tt.mangle(b)
			_, _, err := collect(&recordReader{}, b, 0)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Batches as a real client writes them (franz-go: each compression, producer ids, sequence
// numbers, transactions committed and aborted), stored by kfake and fetched back through
// FetchPartition: every committed data record in order, none of the aborted transaction, no
// transaction marker, Next past them.
func TestFetchPartitionReadsClientBatches(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(1, "batches"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx := testContext(t)
	var want []string
	written := 0
	produce := func(opts []kgo.Opt, txn *kgo.TransactionEndTry, n int) {
		t.Helper()
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("batches"))...)
		require.NoError(t, err)
		defer cl.Close()
		if txn != nil {
			require.NoError(t, cl.BeginTransaction())
		}
		var recs []*kgo.Record
		for range n {
			v := fmt.Sprintf("value-%d-%s", written, bytes.Repeat([]byte{'x'}, written%200))
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", written), Value: []byte(v)})
			if txn == nil || *txn == kgo.TryCommit {
				want = append(want, v)
			}
			written++
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		if txn != nil {
			require.NoError(t, cl.EndTransaction(ctx, *txn))
		}
	}
	commit, abort := kgo.TryCommit, kgo.TryAbort
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(),
		kgo.Lz4Compression(), kgo.ZstdCompression()} {
		produce([]kgo.Opt{kgo.ProducerBatchCompression(codec)}, nil, 50)
	}
	produce([]kgo.Opt{kgo.TransactionalID("committed"), kgo.ProducerBatchCompression(kgo.ZstdCompression())}, &commit, 30)
	produce([]kgo.Opt{kgo.TransactionalID("aborted")}, &abort, 20)
	produce(nil, nil, 5)

	cl := NewClient(Options{Brokers: c.ListenAddrs(), Transport: testTransport(t)})
	var got, keys []string
	offset := int64(0)
	last := int64(-1)
	for range 100 {
		f, err := FetchPartition(ctx, cl, "batches", 0, offset, 4<<10, 10*time.Millisecond) // small fetches: cut batches
		require.NoError(t, err)
		for _, m := range f.Messages {
			require.Greater(t, m.Offset, last)
			last = m.Offset
			keys = append(keys, string(m.Key))
			got = append(got, string(m.Value))
		}
		offset = f.Next
		if offset >= f.HighWatermark && f.HighWatermark > 0 {
			break
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, "key-279", keys[279])
	require.Equal(t, "key-300", keys[280]) // after the 20 aborted records
	// 305 records and two transaction markers.
	require.Equal(t, int64(written+2), offset)
}

// With keepMin, a large record of an uncompressed batch keeps its bytes in the data read
// (no copy), a smaller one and any record of a compressed batch are copied.
func TestRecordReaderKeepsLargeRecordsInData(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	large := testRecord{at: at, key: []byte("big"), value: bytes.Repeat([]byte{'L'}, 100_000)}
	small := testRecord{at: at, key: []byte("small"), value: []byte("s")}
	within := func(data, b []byte) bool {
		return len(b) > 0 && len(data) > 0 &&
			uintptr(unsafe.Pointer(&b[0])) >= uintptr(unsafe.Pointer(&data[0])) &&
			uintptr(unsafe.Pointer(&b[0])) < uintptr(unsafe.Pointer(&data[0]))+uintptr(len(data))
	}
	for _, tc := range []struct {
		name     string
		codec    compress.Compression
		keepMin  int
		keepsBig bool
	}{
		{name: "uncompressed, keepMin", codec: compress.None, keepMin: 50_000, keepsBig: true},
		{name: "uncompressed, no keepMin", codec: compress.None},
		{name: "uncompressed, keepMin above the record", codec: compress.None, keepMin: 200_000},
		{name: "compressed, keepMin", codec: compress.Snappy, keepMin: 50_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := kafkaGoBatch(t, 7, protocol.Attributes(tc.codec), small, large, small)
			rr := &recordReader{keepMin: tc.keepMin}
			out, next, err := rr.read(data, "t", 3, 0, nil, nil, nil)
			require.NoError(t, err)
			require.Equal(t, int64(10), next)
			require.Equal(t, wantMessages(7, []testRecord{small, large, small}), out)
			require.Equal(t, tc.keepsBig, within(data, out[1].Value), "the large value")
			require.Equal(t, tc.keepsBig, within(data, out[1].Key), "the large record's key")
			require.False(t, within(data, out[0].Value), "a small value is copied")
			require.False(t, within(data, out[2].Key), "a small key is copied")
		})
	}
}

// varint, with its one- and two-byte fast paths, reads what binary.Varint reads, at any index,
// and rejects what binary.Varint rejects (truncated or overlong input); varint2 reads the same
// up to two bytes and leaves longer ones.
func TestVarintMatchesBinaryVarint(t *testing.T) {
	var values []int64
	for v := int64(-20000); v <= 20000; v++ {
		values = append(values, v)
	}
	values = append(values, 1<<62, -1<<62, 1<<63-1, -1<<63, 1<<20, -1<<20)
	// Plain comparisons: 80,000 inputs through require's reflection took 12 s under the race
	// detector.
	for _, v := range values {
		enc := binary.AppendVarint([]byte{0xff}, v) // at index 1, after a byte
		for cut := 1; cut <= len(enc); cut++ {
			b := enc[:cut]
			want, n := binary.Varint(b[1:])
			got, i, ok := varint(b, 1)
			if ok != (n > 0) || ok && (got != want || i != 1+n) {
				t.Fatalf("varint(%x, 1) = %d, %d, %v; binary.Varint reads %d in %d bytes", b, got, i, ok, want, n)
			}
			got, i = varint2(b, 1)
			if n > 0 && n <= 2 && (got != want || i != 1+n) || !(n > 0 && n <= 2) && i != -1 {
				t.Fatalf("varint2(%x, 1) = %d, %d; binary.Varint reads %d in %d bytes", b, got, i, want, n)
			}
		}
	}
	_, _, ok := varint([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0)
	require.False(t, ok, "overlong")
}

// BenchmarkRecordReader decodes 1 MiB of record batches of 100 offsets records each (77-byte
// keys and values, as an offsets view's load), borrowing, as the offsets view's fetches do.
func BenchmarkRecordReader(b *testing.B) {
	var data []byte
	n := 0
	for len(data) < 1<<20 {
		var bb batchBuilder
		bb.beginAt(1_700_000_000_000)
		for range 100 {
			bb.add(fmt.Appendf(nil, `["other-%04d",{"filename":"/data/file-%08d.txt"}]`, n%1000, n), fmt.Appendf(nil, `{"position":%d}`, n), nil)
			n++
		}
		batch := bb.finish()[4:]
		binary.BigEndian.PutUint64(batch, uint64(n-100)) // base offset
		binary.BigEndian.PutUint32(batch[crcOffset:], crc32.Checksum(batch[attrOffset:], castagnoli))
		data = append(data, batch...)
	}
	rr := recordReader{borrow: true}
	out := make([]kafka.Message, 0, logApplyChunk)
	seen := 0
	flush := func(ms []kafka.Message) { seen += len(ms) }
	for b.Loop() {
		seen = 0
		var err error
		var next int64
		out, next, err = rr.read(data, "offsets", 0, 0, out[:0], flush, nil)
		if err != nil || next != int64(n) {
			b.Fatal(next, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// FuzzDecodeRecord checks that a record decodeSmallRecord takes decodes to the same fields as
// with varint for every field (decodeAnyRecord), on any bytes.
func FuzzDecodeRecord(f *testing.F) {
	var bb batchBuilder
	bb.beginAt(0)
	for k := range 70 { // offset deltas of one and two bytes
		bb.add([]byte(`["c",{"k":1}]`), bytes.Repeat([]byte("v"), k*3), nil)
	}
	bb.add(nil, nil, []kafka.Header{{Key: "h", Value: []byte("x")}})
	bb.add(bytes.Repeat([]byte("k"), 9000), nil, nil)
	records := bb.finish()[4+batchHeaderSize:]
	for len(records) > 0 {
		length, n := binary.Varint(records)
		f.Add(records[n : n+int(length)])
		records = records[n+int(length):]
	}
	f.Add([]byte{0, 0x80, 0x01, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var any, small rawRecord
		err := decodeAnyRecord(b, &any)
		if !decodeSmallRecord(b, &small) {
			return
		}
		require.NoError(t, err, "%x", b)
		require.Equal(t, any, small, "%x", b)
	})
}

// A compressed batch of one large record (a large request published compressed) is inflated,
// with keepMin, into a buffer of the record's exact size that the message keeps: not the
// reader's reused buffer, which would be copied out of and keep its size for good.
func TestRecordReaderInflatesOneLargeRecordInPlace(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	value := randomText(1, 300_000)
	large := testRecord{at: at, key: []byte("request-id"), value: value}
	small := testRecord{at: at, key: []byte("small"), value: []byte("s")}
	for _, codec := range []compress.Compression{compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			one := kafkaGoBatch(t, 7, protocol.Attributes(codec), large)
			require.GreaterOrEqual(t, len(one)-batchHeaderSize, inflateOwnMin, "the test needs a large compressed batch")
			rr := &recordReader{keepMin: keepInResponseMin}
			out, next, err := rr.read(one, "t", 3, 0, nil, nil, nil)
			require.NoError(t, err)
			require.Equal(t, int64(8), next)
			require.Equal(t, wantMessages(7, []testRecord{large}), out)
			require.Zero(t, rr.inflated.Cap(), "the reader's buffer is not used")
			require.Less(t, cap(out[0].Value)-len(out[0].Value), 64, "the value lies at the end of a buffer of the record's size")

			// Several records in a compressed batch still go through the reused buffer.
			many := kafkaGoBatch(t, 7, protocol.Attributes(codec), small, large, small)
			rr = &recordReader{keepMin: keepInResponseMin}
			out, _, err = rr.read(many, "t", 3, 0, nil, nil, nil)
			require.NoError(t, err)
			require.Equal(t, wantMessages(7, []testRecord{small, large, small}), out)
			require.NotZero(t, rr.inflated.Cap())
		})
	}
}

// With inflateMax, a compressed batch that inflates beyond it is not read: each of its offsets
// comes back as a TooLarge message, and the batches after it are read as usual.
func TestRecordReaderInflateLimit(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	letters := randomText(5, 150_000)
	one := testRecord{at: at, key: []byte("one"), value: letters}                        // the exact-size path
	zeros := testRecord{at: at, key: []byte("zeros"), value: make([]byte, 40_000)}       // the shared buffer's
	small := testRecord{at: at, key: []byte("small"), value: []byte(`{"name":"after"}`)} // read as usual
	for _, tc := range []struct {
		name string
		recs []testRecord
		c    compress.Compression
	}{
		{name: "one record", recs: []testRecord{one}, c: compress.Lz4},
		{name: "several records", recs: []testRecord{zeros, zeros, zeros}, c: compress.Zstd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.recs)
			data := append(kafkaGoBatch(t, 0, protocol.Attributes(tc.c), tc.recs...),
				kafkaGoBatch(t, int64(n), protocol.Attributes(compress.Snappy), small)...)
			for _, limit := range []int64{0, 100_000} {
				rr := &recordReader{keepMin: keepInResponseMin, inflateMax: limit}
				out, next, err := rr.read(data, "t", 3, 0, nil, nil, nil)
				require.NoError(t, err)
				require.Equal(t, int64(n+1), next)
				require.Len(t, out, n+1)
				require.Equal(t, wantMessages(int64(n), []testRecord{small})[0], out[n], "the batch after it")
				for k := range n {
					require.Equal(t, int64(k), out[k].Offset)
					require.Equal(t, limit > 0, TooLarge(&out[k]), "limit %d, record %d", limit, k)
					if limit == 0 {
						require.Equal(t, tc.recs[k].value, out[k].Value)
					}
				}
			}
		})
	}
}

// randomText is n bytes of JSON-ish characters drawn from seed: text that compresses only a
// little, so that a batch of it stays large compressed.
func randomText(seed uint64, n int) []byte {
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz{}[],:0123456789"[rnd.IntN(42)]
	}
	return b
}

// Records with CloudEvents headers, read without borrowing: each record's headers cost their
// slice and one copy of its values, and a key met before in the read costs nothing (a string
// per key and record was most of a request record's allocations). Values stay apart: an append
// to one does not write into the next.
func TestRecordReaderHeaderAllocations(t *testing.T) {
	const n = 50
	recs := make([]testRecord, n)
	at := time.UnixMilli(1_700_000_000_000)
	for i := range recs {
		recs[i] = testRecord{at: at, key: fmt.Appendf(nil, "c-%d", i), value: []byte(`{"name":"c"}`), headers: []kafka.Header{
			{Key: "ce_id", Value: fmt.Appendf(nil, "id-%d", i)}, {Key: "ce_source", Value: []byte("/bench")},
			{Key: "ce_type", Value: []byte("io.offsetagent.create")}, {Key: "ce_specversion", Value: []byte("1.0")},
			{Key: "content-type", Value: []byte("application/json")}, {Key: "nil"}}}
	}
	data := kafkaGoBatch(t, 0, 0, recs...)
	out, _, err := (&recordReader{}).read(data, "t", 3, 0, nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, wantMessages(0, recs), out)
	v := out[0].Headers[0].Value
	_ = append(v, 'x')
	require.Equal(t, "/bench", string(out[0].Headers[1].Value), "an append to a value writes into the next")
	buf := make([]kafka.Message, 0, n)
	allocs := alloctest.Least(20, func() {
		var rr recordReader
		buf, _, _ = rr.read(data, "t", 3, 0, buf[:0], nil, nil)
	})
	// Per record: its headers, its values' copy, its key and value's copy; per read: the keys.
	require.LessOrEqual(t, allocs, float64(3*n+len(recs[0].headers)+2), "allocations to read %d records with headers", n)
}
