package kafkaio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record batches (magic 2, the only format Kafka 4 writes; the older formats in records_legacy.go) are decoded here straight from the
// fetch response's bytes: the fixed 61-byte batch header, then each record's varints read off
// the byte slice. kafka-go's decoder reads the same bytes through an io.Reader call per field
// and copies every key and value out of its pooled pages; on a view's load of a million small
// records that was the largest part of the CPU.

// Offsets of the fields of a record batch header that batch.go does not name (the layout is
// described there).
const (
	batchLengthOffset    = 8  // int32: the bytes after this field
	batchMagicOffset     = 16 // int8
	batchLastDeltaOffset = 23 // int32: last offset delta
	batchFirstTSOffset   = 27 // int64: base timestamp
	batchCountOffset     = 57 // int32: record count
	batchLogOverhead     = 12 // base offset and length: what the length does not count

	batchProducerOffset  = 43 // int64: producer id
	batchCompressionMask = 0x07
	batchTxnFlag         = 0x10
	batchControlFlag     = 0x20
)

// errCorruptBatch is wrapped by the errors of a batch or record that does not decode.
var errCorruptBatch = errors.New("corrupt record batch")

// recordReader reads the record batches of fetch responses into kafka.Messages. With borrow
// set, a message's Key, Value and header values alias the response (or the reader's
// decompression buffer) and are valid until the next flush; otherwise each record's key and
// value are copied into one allocation of their own.
type recordReader struct {
	borrow bool
	// keepMin, when not 0, says that the caller gives read data of its own that nothing
	// reuses: an uncompressed record whose key and value have keepMin bytes or more together
	// keeps them where they lie in data instead of copying them (see FetchPartition).
	keepMin int
	// inflateMax, when not 0, bounds what a compressed batch may inflate to: the records of
	// one that inflates beyond it are not read but stand as TooLarge messages.
	inflateMax int64
	// readMax, when not 0, bounds the record bytes one call of read takes in, compressed
	// batches counted inflated: the first batch is read whatever its size (within inflateMax,
	// as a broker sends a first batch larger than asked for, KIP-74), though of its records
	// beyond readMax only the read's first is returned (the read stops at the next), a later
	// batch only if the total stays within readMax. read stops before the first that does not fit (a compressed
	// one is inflated no further than the room left), and the offset it returns is that batch's
	// base: the caller's next read starts there and gets it first.
	readMax int64
	// taken is what the current call of read took in, against readMax.
	taken int64
	// aborted, set by the caller before a call of read, are the aborted transactions the
	// fetch response lists for the partition read (read_committed, see aborts.go); read
	// drops their batches and clears it.
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	aborts  abortFilter
	// kept and keptBytes count the messages the current call of read returns and their keys'
	// and values' bytes: with readMax, a record of the first batch beyond readMax is not
	// returned (nor copied) unless it is the read's first (see readBatch).
	kept      int
	keptBytes int64
	// inflated holds a compressed batch's records; reused across batches.
	inflated bytes.Buffer
	// headerKeys are the header keys the reader met last (decodeHeaders).
	headerKeys headerKeys
}

// ownFunc applies, at record offset at, the caller's own records that start there or before,
// from position pos, after flushing out; it returns out for reuse and the new position.
type ownFunc func(at, pos int64, out []kafka.Message) ([]kafka.Message, int64)

// read appends the records at or after offset of the record batches in data to out, passing
// every logApplyChunk of them to flush (when not nil), and returns the rest and the offset after
// the last record seen, control records included. Before each record, own (when not nil) may
// apply records the log's owner wrote (log_own.go) that start at or before it; records below
// the position it returns are skipped. A truncated batch at the end of data (a broker fills a
// response up to its byte limit) is ignored, as is, with readMax, every batch from the first
// that does not fit it.
func (rr *recordReader) read(data []byte, topic string, p int, offset int64, out []kafka.Message,
	flush func([]kafka.Message), own ownFunc) ([]kafka.Message, int64, error) {
	next := offset
	rr.taken, rr.kept, rr.keptBytes = 0, 0, 0
	rr.aborts.reset(rr.aborted)
	rr.aborted = nil
	for len(data) >= batchLogOverhead {
		size := batchLogOverhead + int(int32(binary.BigEndian.Uint32(data[batchLengthOffset:])))
		if size <= batchMagicOffset {
			return out, next, fmt.Errorf("read records of partition %d at offset %d: %w: length %d",
				p, next, errCorruptBatch, size-batchLogOverhead)
		}
		if size > len(data) {
			break // cut at the response's byte limit
		}
		b := data[:size]
		data = data[size:]
		var err error
		if b[batchMagicOffset] < 2 { // a message of the formats before record batches
			out, next, err = rr.readLegacy(b, topic, p, next, out, flush, own)
			if err != nil && !errors.Is(err, errReadFull) {
				err = fmt.Errorf("read records of partition %d at offset %d: %w", p, int64(binary.BigEndian.Uint64(b)), err)
			}
		} else {
			out, next, err = rr.readRecordBatch(b, topic, p, next, out, flush, own)
		}
		if errors.Is(err, errReadFull) {
			return out, next, nil
		}
		if err != nil {
			return out, next, err
		}
	}
	return out, next, nil
}

// readRecordBatch reads the record batch b (magic 2) for read and returns out and next as read
// continues after it. It returns errReadFull, with the offset the next read starts at, when
// read stops at this batch.
func (rr *recordReader) readRecordBatch(b []byte, topic string, p int, next int64, out []kafka.Message,
	flush func([]kafka.Message), own ownFunc) ([]kafka.Message, int64, error) {
	if len(b) < batchHeaderSize {
		return out, next, fmt.Errorf("read records of partition %d at offset %d: %w: length %d",
			p, next, errCorruptBatch, len(b)-batchLogOverhead)
	}
	base := int64(binary.BigEndian.Uint64(b))
	last := base + int64(int32(binary.BigEndian.Uint32(b[batchLastDeltaOffset:])))
	// Before the offset check: the batches before the offset asked for still close the
	// aborted transactions they end.
	if b[batchMagicOffset] == 2 && rr.aborts.drop(b, last) {
		return out, max(next, last+1), nil // an aborted transaction's batch or its marker
	}
	if last < next {
		return out, next, nil // wholly before the offset asked for: a batch may start before it
	}
	if magic := b[batchMagicOffset]; magic > 2 {
		return out, next, fmt.Errorf("read records of partition %d at offset %d: record batch magic %d not supported", p, base, magic)
	}
	if crc32.Checksum(b[attrOffset:], castagnoli) != binary.BigEndian.Uint32(b[crcOffset:]) {
		return out, next, fmt.Errorf("read records of partition %d at offset %d: %w: CRC mismatch", p, base, errCorruptBatch)
	}
	attrs := binary.BigEndian.Uint16(b[attrOffset:])
	records := b[batchHeaderSize:]
	count := int(int32(binary.BigEndian.Uint32(b[batchCountOffset:])))
	inData := true
	if codec := compress.Compression(attrs & batchCompressionMask); codec != compress.None {
		var err error
		if out, err = rr.handOverBorrowed(out, flush); err != nil {
			return out, next, err
		}
		limit, room := rr.inflateLimit()
		if room && limit == 0 {
			return out, max(next, base), errReadFull // readMax is used up
		}
		records, inData, err = rr.inflateRecords(codec, records, count, limit)
		if errors.Is(err, errInflateLimit) && room {
			// Beyond what is left of readMax (perhaps not beyond inflateMax): the next read
			// starts at this batch and takes it first.
			return out, max(next, base), errReadFull
		}
		if errors.Is(err, errInflateLimit) && last-max(base, next) < maxTooLarge {
			// Not read: each of its records is a message that says so (TooLarge).
			for o := max(base, next); o <= last; o++ {
				out = append(out, kafka.Message{Topic: topic, Partition: p, Offset: o, Headers: tooLargeHeaders})
			}
			return out, last + 1, nil
		}
		if err != nil {
			return out, next, fmt.Errorf("read records of partition %d at offset %d: %w", p, base, err)
		}
	}
	if !rr.take(int64(len(records))) {
		return out, max(next, base), errReadFull // an uncompressed batch beyond readMax
	}
	bt := batch{base: base, firstTS: int64(binary.BigEndian.Uint64(b[batchFirstTSOffset:])),
		count: count, control: attrs&batchControlFlag != 0, inData: inData}
	out, next, err := rr.readBatch(bt, records, topic, p, next, out, flush, own)
	if err != nil && !errors.Is(err, errReadFull) {
		err = fmt.Errorf("read records of partition %d at offset %d: %w", p, base, err)
	}
	return out, next, err
}

// handOverBorrowed passes the records of out to flush before a compressed batch is inflated:
// with borrow, the buffer they alias is about to be reused.
func (rr *recordReader) handOverBorrowed(out []kafka.Message, flush func([]kafka.Message)) ([]kafka.Message, error) {
	if !rr.borrow || len(out) == 0 {
		return out, nil
	}
	if flush == nil {
		return out, errors.New("read records: borrowed records need a flush")
	}
	flush(out)
	return out[:0], nil
}

// inflateRecords inflates the count compressed records of a batch, up to limit bytes; inData
// is false when they were inflated into the reader's buffer.
func (rr *recordReader) inflateRecords(codec compress.Compression, records []byte, count int, limit int64) (_ []byte, inData bool, err error) {
	if rr.keepMin > 0 && !rr.borrow && count == 1 && len(records) >= inflateOwnMin {
		// One large record (a large request, published compressed): inflated into a
		// buffer of its own, exactly sized, that its message keeps (see keepMin).
		records, err = inflateOwn(codec, records, limit)
		return records, true, err
	}
	if rr.readMax > 0 && !rr.borrow && len(records) >= inflateExactMin {
		// Several large records (requests published at once): an exactly sized buffer
		// too, not one grown by doubling, and garbage once the records this read
		// returns are copied out of it. (Smaller batches, of many small requests, keep
		// the one pass into the reader's buffer.)
		records, err = inflateOwn(codec, records, limit)
		return records, false, err
	}
	records, err = rr.inflate(codec, records, limit)
	return records, false, err
}

// batch is what readBatch needs of a record batch header.
type batch struct {
	base, firstTS int64
	count         int
	// inData is true when the batch's records lie in the data given to read (not inflated
	// into the reader's buffer).
	inData  bool
	control bool
}

// readBatch decodes the count records of bt from data; see read.
func (rr *recordReader) readBatch(bt batch, data []byte, topic string, p int, next int64, out []kafka.Message,
	flush func([]kafka.Message), own ownFunc) ([]kafka.Message, int64, error) {
	var r rawRecord
	for range bt.count {
		length, n := varint2(data, 0) // records of up to 8191 bytes
		if n < 0 {
			var ok bool
			if length, n, ok = varint(data, 0); !ok {
				return out, next, fmt.Errorf("%w: record length", errCorruptBatch)
			}
		}
		if length < 0 || length > int64(len(data)-n) {
			return out, next, fmt.Errorf("%w: record length", errCorruptBatch)
		}
		rec := data[n : n+int(length)]
		data = data[n+int(length):]
		if err := decodeRecord(rec, &r); err != nil {
			return out, next, err
		}
		at := bt.base + r.offsetDelta
		if own != nil && at >= next {
			out, next = own(at, next, out)
		}
		if at < next || bt.control {
			// Control records only move the position; own records were applied from the
			// writer's bytes.
			next = max(next, at+1)
			continue
		}
		if rr.readMax > 0 {
			// The first batch may hold more than readMax (several large records published
			// at once): the records beyond it, the read's first aside, are left for the next
			// read, which starts at them, instead of being copied here to be dropped by the
			// caller. Several partitions' fetches may get such a batch at once.
			n := int64(len(r.key) + len(r.value))
			if rr.kept > 0 && rr.keptBytes+n > rr.readMax {
				return out, next, errReadFull
			}
			rr.kept++
			rr.keptBytes += n
		}
		// The message is written where it goes, field by field: a kafka.Message is 150 bytes,
		// and a composite literal was built on the stack and copied (its wide loads stalled
		// on the narrow stores just made).
		out = slices.Grow(out, 1)[:len(out)+1]
		m := &out[len(out)-1]
		*m = kafka.Message{}
		m.Topic, m.Partition, m.Offset, m.Key, m.Value = topic, p, at, r.key, r.value
		m.Time = time.UnixMilli(bt.firstTS + r.tsDelta)
		if r.headers > 0 {
			var err error
			if m.Headers, err = decodeHeaders(r.headerBytes, r.headers, rr.borrow, &rr.headerKeys); err != nil {
				out = out[:len(out)-1]
				return out, next, err
			}
		}
		if !rr.borrow && !(bt.inData && rr.keepMin > 0 && len(m.Key)+len(m.Value) >= rr.keepMin) {
			m.Key, m.Value = copyKeyValue(m.Key, m.Value)
		}
		next = at + 1
		if flush != nil && len(out) == logApplyChunk {
			flush(out)
			out = out[:0]
		}
	}
	return out, next, nil
}

// rawRecord is one decoded record; key, value and headerBytes alias the batch.
type rawRecord struct {
	tsDelta, offsetDelta int64
	key, value           []byte
	headers              int
	headerBytes          []byte
}

// decodeRecord decodes one record (without its length prefix) into r: attributes, timestamp
// and offset deltas, key, value, then the header count; the headers are left in headerBytes. A
// negative key or value length is null.
func decodeRecord(b []byte, r *rawRecord) error {
	if decodeSmallRecord(b, r) {
		return nil
	}
	return decodeAnyRecord(b, r)
}

// decodeAnyRecord is decodeRecord for any record, its varints read by varint.
func decodeAnyRecord(b []byte, r *rawRecord) error {
	i := 1 // attributes: unused
	var ok bool
	if r.tsDelta, i, ok = varint(b, i); !ok {
		return fmt.Errorf("%w: timestamp delta", errCorruptBatch)
	}
	if r.offsetDelta, i, ok = varint(b, i); !ok {
		return fmt.Errorf("%w: offset delta", errCorruptBatch)
	}
	if r.key, i, ok = varBytes(b, i); !ok {
		return fmt.Errorf("%w: key", errCorruptBatch)
	}
	if r.value, i, ok = varBytes(b, i); !ok {
		return fmt.Errorf("%w: value", errCorruptBatch)
	}
	var headers int64
	if headers, i, ok = varint(b, i); !ok || headers < 0 || headers > int64(len(b)-i) {
		return fmt.Errorf("%w: header count", errCorruptBatch)
	}
	r.headers, r.headerBytes = int(headers), b[i:]
	return nil
}

// decodeSmallRecord is decodeRecord for records whose varints are one or two bytes each
// (deltas and lengths up to 8191: the records of a view's load), read inline (a call per
// varint was most of the decoding). It returns false, r undefined, for any other record,
// which decodeRecord then decodes from the start.
func decodeSmallRecord(b []byte, r *rawRecord) bool {
	ts, i := varint2(b, 1) // after the attributes (unused)
	if i < 0 {
		return false
	}
	offset, i := varint2(b, i)
	if i < 0 {
		return false
	}
	var kv [2][]byte
	for f := range kv { // a negative length is null
		n, j := varint2(b, i)
		if j < 0 || n > int64(len(b)-j) {
			return false
		}
		if i = j; n >= 0 {
			i += int(n)
			kv[f] = b[j:i:i]
		}
	}
	headers, i := varint2(b, i)
	if i < 0 || headers < 0 || headers > int64(len(b)-i) {
		return false
	}
	r.tsDelta, r.offsetDelta, r.key, r.value, r.headers, r.headerBytes = ts, offset, kv[0], kv[1], int(headers), b[i:]
	return true
}

// varint2 reads a zig-zag varint of one or two bytes at b[i] and returns it and the index
// after it, or -1 for any other (none, or longer). It is inlined.
func varint2(b []byte, i int) (v int64, j int) {
	j = -1
	if i < len(b) {
		u := uint64(b[i])
		j = i + 1
		if u >= 0x80 {
			j = -1
			if i+1 < len(b) && b[i+1] < 0x80 {
				u, j = u&0x7f|uint64(b[i+1])<<7, i+2
			}
		}
		v = zigzag(u)
	}
	return v, j
}

// zigzag decodes a zig-zag encoded number.
func zigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// decodeHeaders decodes n record headers from b; values alias b when borrow is set, and
// otherwise share one copy of b (one allocation per record, not one per value). Keys come
// from keys, which the records of one read share: a topic's records carry the same few keys
// (a CloudEvent's ce_id, ce_source, ...), each then a string once per read, not per record.
func decodeHeaders(b []byte, n int, borrow bool, keys *headerKeys) ([]kafka.Header, error) {
	hs := make([]kafka.Header, n)
	var copied []byte // b's values, copied when the first is met
	i := 0
	for k := range hs {
		var key, value []byte
		var ok bool
		if key, i, ok = varBytes(b, i); !ok || key == nil {
			return nil, fmt.Errorf("%w: header key", errCorruptBatch)
		}
		if value, i, ok = varBytes(b, i); !ok {
			return nil, fmt.Errorf("%w: header value", errCorruptBatch)
		}
		if !borrow && value != nil {
			if copied == nil {
				copied = make([]byte, 0, len(b)) // holds every value of b: never regrown
			}
			start := len(copied)
			copied = append(copied, value...)
			// Capped at its length: an append to one value never writes into the next.
			value = copied[start:len(copied):len(copied)]
		}
		hs[k] = kafka.Header{Key: keys.intern(key), Value: value}
	}
	return hs, nil
}

// headerKeys are the header keys met last by one reader, most recent first.
type headerKeys [8]string

// intern returns key as a string: one met before, or a new one (then kept, in place of the
// least recent).
func (h *headerKeys) intern(key []byte) string {
	for _, s := range h {
		if s == string(key) { // compared without a conversion's allocation
			return s
		}
	}
	s := string(key)
	copy(h[1:], h[:len(h)-1])
	h[0] = s
	return s
}

// varint reads the zig-zag varint at b[i] and returns it and the index after it. It is small
// enough to be inlined: one byte holds most deltas and the lengths of small records.
func varint(b []byte, i int) (int64, int, bool) {
	if i < len(b) && b[i] < 0x80 {
		u := int64(b[i])
		return (u >> 1) ^ -(u & 1), i + 1, true
	}
	return varintLong(b, i)
}

// varintLong is varint for more than one byte (or none).
func varintLong(b []byte, i int) (int64, int, bool) {
	if i+1 < len(b) && b[i+1] < 0x80 { // two bytes: lengths of 64 to 8191
		u := int64(b[i]&0x7f) | int64(b[i+1])<<7
		return (u >> 1) ^ -(u & 1), i + 2, true
	}
	if i > len(b) {
		return 0, i, false
	}
	v, n := binary.Varint(b[i:])
	if n <= 0 {
		return 0, i, false
	}
	return v, i + n, true
}

// varBytes reads a varint length and that many bytes at b[i] (nil for a negative length); the
// slice aliases b, its capacity capped at its length.
func varBytes(b []byte, i int) ([]byte, int, bool) {
	n, i, ok := varint(b, i)
	switch {
	case !ok:
		return nil, i, false
	case n < 0:
		return nil, i, true
	case n > int64(len(b)-i):
		return nil, i, false
	}
	end := i + int(n)
	return b[i:end:end], end, true
}

// copyKeyValue copies key and value into one allocation (one malloc per record instead of two
// keeps loads fast and small); a nil one stays nil, an empty one stays empty.
func copyKeyValue(k, v []byte) (key, value []byte) {
	if len(k)+len(v) == 0 {
		if k != nil {
			key = []byte{}
		}
		if v != nil {
			value = []byte{}
		}
		return key, value
	}
	buf := make([]byte, len(k)+len(v))
	if k != nil {
		key = buf[:copy(buf, k):len(k)]
	}
	if v != nil {
		value = buf[len(k):]
		copy(value, v)
	}
	return key, value
}
