package kafkaio

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/compress/snappy"
)

// Produce requests carry record batches this package encodes itself (Kafka's message format
// v2, uncompressed, no producer id), written on the connection by the request itself
// (produce_raw.go). kafka-go's own
// encoder wants each record as a kafka.Record whose key and value are boxed readers: for a
// 100,000-offset write that was 300,000 small allocations and about twice the records' size in
// garbage, before the request's own buffer. Here the records are appended straight from the
// caller's slices into one buffer per partition.
//
// The layout is Kafka's DefaultRecordBatch (and kafka-go's protocol.RecordSet.writeToVersion2,
// which TestRecordBatchMatchesKafkaGo compares it with):
//
//	size int32 (the record set's length prefix in the request, not part of the batch)
//	baseOffset int64 = 0
//	batchLength int32 (bytes after this field)
//	partitionLeaderEpoch int32 = -1
//	magic int8 = 2
//	crc uint32 (CRC-32C of everything from attributes on)
//	attributes int16 = 0
//	lastOffsetDelta int32
//	baseTimestamp, maxTimestamp int64 (the time of encoding, in ms: every record's)
//	producerId int64 = -1, producerEpoch int16 = -1, baseSequence int32 = -1
//	recordCount int32
//	records: length varint, attributes int8 = 0, timestampDelta varint = 0,
//	  offsetDelta varint, key varbytes (-1: null), value varbytes (-1: null, a tombstone),
//	  header count varint, headers (key varstring, value varbytes)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	batchHeaderSize = 61 // baseOffset through recordCount
	crcOffset       = 17 // within the batch
	attrOffset      = 21 // where the CRC's coverage starts
)

// batchBuilder appends one record batch to buf. The zero value is not ready: call begin.
type batchBuilder struct {
	buf   []byte
	start int // where the batch (after the size prefix) starts in buf
	n     int32
	now   int64
}

// begin starts a batch at the end of b.buf, stamped with the current time.
func (b *batchBuilder) begin() {
	b.beginAt(time.Now().UnixMilli())
}

func (b *batchBuilder) beginAt(now int64) {
	b.buf = append(b.buf, 0, 0, 0, 0) // the record set's size prefix
	b.start = len(b.buf)
	b.buf = append(b.buf, make([]byte, batchHeaderSize)...)
	b.n, b.now = 0, now
}

// add appends a record; a nil key or value is null (a nil value is a tombstone).
func (b *batchBuilder) add(key, value []byte, headers []kafka.Header) {
	offsetDelta := int64(b.n)
	length := 1 + varintLen(0) + varintLen(offsetDelta) + varbytesLen(key) + varbytesLen(value) +
		varintLen(int64(len(headers)))
	for _, h := range headers {
		length += varintLen(int64(len(h.Key))) + len(h.Key) + varbytesLen(h.Value)
	}
	buf := binary.AppendVarint(b.buf, int64(length))
	buf = append(buf, 0)              // attributes
	buf = binary.AppendVarint(buf, 0) // timestampDelta: every record has the batch's time
	buf = binary.AppendVarint(buf, offsetDelta)
	buf = appendVarbytes(buf, key)
	buf = appendVarbytes(buf, value)
	buf = binary.AppendVarint(buf, int64(len(headers)))
	for _, h := range headers {
		buf = binary.AppendVarint(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendVarbytes(buf, h.Value)
	}
	b.buf = buf
	b.n++
}

// finish fills in the batch's header and returns the buffer.
func (b *batchBuilder) finish() []byte {
	h := b.buf[b.start : b.start+batchHeaderSize]
	be := binary.BigEndian
	be.PutUint32(b.buf[b.start-4:], uint32(len(b.buf)-b.start))
	be.PutUint64(h[0:], 0)                             // baseOffset
	be.PutUint32(h[8:], uint32(len(b.buf)-b.start-12)) // batchLength
	be.PutUint32(h[12:], 0xffffffff)                   // partitionLeaderEpoch -1
	h[16] = 2                                          // magic
	be.PutUint16(h[21:], 0)                            // attributes
	be.PutUint32(h[23:], uint32(max(b.n-1, 0)))        // lastOffsetDelta
	be.PutUint64(h[27:], uint64(b.now))                // baseTimestamp
	be.PutUint64(h[35:], uint64(b.now))                // maxTimestamp
	be.PutUint64(h[43:], 0xffffffffffffffff)           // producerId -1
	be.PutUint16(h[51:], 0xffff)                       // producerEpoch -1
	be.PutUint32(h[53:], 0xffffffff)                   // baseSequence -1
	be.PutUint32(h[57:], uint32(b.n))                  // recordCount
	be.PutUint32(h[crcOffset:], crc32.Checksum(b.buf[b.start+attrOffset:], castagnoli))
	return b.buf
}

func varintLen(x int64) int {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	n := 1
	for ux >= 0x80 {
		ux >>= 7
		n++
	}
	return n
}

func varbytesLen(p []byte) int {
	if p == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(p))) + len(p)
}

func appendVarbytes(buf, p []byte) []byte {
	if p == nil {
		return binary.AppendVarint(buf, -1)
	}
	buf = binary.AppendVarint(buf, int64(len(p)))
	return append(buf, p...)
}

// A large write's encoded batches (WriteEncoded: a bulk request's offsets, ~75-135 bytes of
// JSON a record whose keys repeat) go to the broker compressed: snappy makes them about 7 times
// smaller for ~0.6 ms of CPU per MB (s2's snappy encoder, FasterCompression), which is less
// than the broker spends receiving, checking and storing the bytes it spares (measured on the
// embedded broker: a 14 MB write's broker CPU went from ~45 ms to ~12 ms). Each batch is
// compressed as its Produce request is built, so that one request is compressed while the one
// before it is on the wire, into the request's own buffer. The records are Connect's bytes
// either way: a reader inflates them (Kafka's consumers and this package's reader do), and the
// view of the writing Log takes them from the uncompressed batch (Acked.Batch). Xerial framing
// is what Kafka's Java producer writes. (Nil sends them uncompressed: BenchmarkWriteEncoded
// compares the two.)
var encodedCodec compress.Codec = &snappy.Codec{Compression: snappy.FasterCompression}

// compressEncodedMin is the least size of an encoded batch that is sent compressed: below it
// the broker's work per byte saved is too little to matter.
const compressEncodedMin = 16 << 10

// compressedSize is about what compressEncoded appends for b: a sixth of a batch it
// compresses (the JSON of offsets compresses 7-fold), nothing for one it does not.
func compressedSize(b encodedBatch) int {
	if len(b.buf) < compressEncodedMin {
		return 0
	}
	return len(b.buf)/6 + 4 + batchHeaderSize + 64
}

// compressEncoded appends b's record set to dst with its records compressed, when b is large
// enough, and returns dst and the set to send: the compressed one, or b's own.
func compressEncoded(dst []byte, b encodedBatch) ([]byte, []byte) {
	if len(b.buf) < compressEncodedMin || encodedCodec == nil {
		return dst, b.buf
	}
	from := len(dst)
	out, err := appendCompressedSet(dst, b.buf, encodedCodec)
	if err != nil || len(out)-from >= len(b.buf) {
		return dst[:from], b.buf // no smaller: sent as it is
	}
	return out, out[from:]
}

// appendCompressedSet appends to dst the record set set (a size prefix, then one
// uncompressed record batch as batchBuilder writes it) with its records compressed by codec:
// the same header, the codec in the attributes, the batch's length and CRC made anew.
func appendCompressedSet(dst, set []byte, codec compress.Codec) ([]byte, error) {
	from := len(dst)
	dst = append(dst, set[:4+batchHeaderSize]...)
	w := &appendWriter{b: dst}
	zw := codec.NewWriter(w)
	_, err := zw.Write(set[4+batchHeaderSize:])
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dst[:from], fmt.Errorf("compress a record batch: %w", err)
	}
	dst = w.b
	start := from + 4 // the batch, after the set's size prefix
	be := binary.BigEndian
	be.PutUint32(dst[from:], uint32(len(dst)-start))
	be.PutUint32(dst[start+batchLengthOffset:], uint32(len(dst)-start-batchLogOverhead))
	attrs := be.Uint16(dst[start+attrOffset:])
	be.PutUint16(dst[start+attrOffset:], attrs&^batchCompressionMask|uint16(codec.Code()))
	be.PutUint32(dst[start+crcOffset:], crc32.Checksum(dst[start+attrOffset:], castagnoli))
	return dst, nil
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
