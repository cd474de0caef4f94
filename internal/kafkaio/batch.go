package kafkaio

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/segmentio/kafka-go"
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
