package kafkaio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// Kafka 4 writes only record batches (magic 2), but a topic created by an old cluster can still
// hold segments in the message formats before it (magic 0 and 1: a Connect offsets topic that
// has lived since 0.10 keeps its oldest live keys in them until compaction rewrites them). Both
// share the batch's first fields, so a fetch response mixes them freely:
//
//	offset int64, size int32, crc int32 (IEEE, over magic to the end), magic int8,
//	attributes int8, timestamp int64 (magic 1 only), key bytes, value bytes (int32 length,
//	-1 for null)
//
// A compressed message (attributes' low three bits) carries a message set as its value: with
// magic 1 its inner offsets are relative and the wrapper holds the last one's absolute offset;
// with magic 0 they are absolute.

const (
	legacyCRCOffset   = 12
	legacyAttrOffset  = 17
	legacyMinSize     = 26 // magic 0, null key and value
	legacyLogAppendTS = 0x08
)

// legacyMessage is one decoded magic 0/1 message; key and value alias its bytes.
type legacyMessage struct {
	offset     int64
	magic      byte
	attrs      byte
	ts         int64
	key, value []byte
}

// decodeLegacy decodes the whole message b (offset and size included) and checks its CRC.
func decodeLegacy(b []byte) (legacyMessage, error) {
	m := legacyMessage{offset: int64(binary.BigEndian.Uint64(b)), magic: b[batchMagicOffset], attrs: b[legacyAttrOffset]}
	if len(b) < legacyMinSize || m.magic > 1 {
		return m, fmt.Errorf("%w: message of %d bytes, magic %d", errCorruptBatch, len(b), m.magic)
	}
	if crc32.ChecksumIEEE(b[batchMagicOffset:]) != binary.BigEndian.Uint32(b[legacyCRCOffset:]) {
		return m, fmt.Errorf("%w: CRC mismatch", errCorruptBatch)
	}
	i := legacyAttrOffset + 1
	if m.magic == 1 {
		if len(b) < i+8+8 {
			return m, fmt.Errorf("%w: timestamp", errCorruptBatch)
		}
		m.ts = int64(binary.BigEndian.Uint64(b[i:]))
		i += 8
	}
	var ok bool
	if m.key, i, ok = legacyBytes(b, i); !ok {
		return m, fmt.Errorf("%w: key", errCorruptBatch)
	}
	if m.value, _, ok = legacyBytes(b, i); !ok {
		return m, fmt.Errorf("%w: value", errCorruptBatch)
	}
	return m, nil
}

// legacyBytes reads an int32 length and that many bytes at b[i] (nil for a negative length).
func legacyBytes(b []byte, i int) ([]byte, int, bool) {
	if i+4 > len(b) {
		return nil, i, false
	}
	n := int(int32(binary.BigEndian.Uint32(b[i:])))
	i += 4
	switch {
	case n < 0:
		return nil, i, true
	case n > len(b)-i:
		return nil, i, false
	}
	return b[i : i+n : i+n], i + n, true
}

// readLegacy appends the records of the magic 0/1 message b at or after next to out, like
// readBatch does for a record batch.
func (rr *recordReader) readLegacy(b []byte, topic string, p int, next int64, out []kafka.Message,
	flush func([]kafka.Message), own ownFunc) ([]kafka.Message, int64, error) {
	m, err := decodeLegacy(b)
	if err != nil {
		return out, next, err
	}
	codec := compress.Compression(m.attrs & batchCompressionMask)
	if codec == compress.None {
		if m.offset >= next && !rr.take(int64(len(b))) {
			return out, next, errReadFull
		}
		return rr.appendLegacy(m, m.ts, topic, p, next, out, flush, own)
	}
	if m.offset < next {
		return out, next, nil // the wrapper's offset is its last inner message's
	}
	limit, room := rr.inflateLimit()
	if room && limit == 0 {
		return out, next, errReadFull
	}
	if out, err = rr.handOverBorrowed(out, flush); err != nil {
		return out, next, err
	}
	set, err := rr.inflate(codec, m.value, limit)
	if errors.Is(err, errInflateLimit) && room {
		return out, next, errReadFull
	}
	if errors.Is(err, errInflateLimit) && m.offset-next < maxTooLarge {
		// Not read, as a record batch beyond inflateMax: each offset it holds from next on
		// (the wrapper's offset is its last inner message's) is a message that says so.
		for o := next; o <= m.offset; o++ {
			out = append(out, kafka.Message{Topic: topic, Partition: p, Offset: o, Headers: tooLargeHeaders})
		}
		return out, m.offset + 1, nil
	}
	if err != nil {
		return out, next, err
	}
	rr.take(int64(len(set)))
	inner, err := decodeInnerMessages(set)
	if err != nil {
		return out, next, err
	}
	if len(inner) == 0 {
		return out, next, nil
	}
	shift := int64(0)
	if m.magic == 1 {
		shift = m.offset - inner[len(inner)-1].offset
	}
	for _, im := range inner {
		im.offset += shift
		ts := im.ts
		if m.magic == 1 && m.attrs&legacyLogAppendTS != 0 {
			ts = m.ts
		}
		if out, next, err = rr.appendLegacy(im, ts, topic, p, next, out, flush, own); err != nil {
			return out, next, err
		}
	}
	return out, next, nil
}

// decodeInnerMessages decodes the uncompressed messages of the inflated message set of a
// compressed magic 0/1 message.
func decodeInnerMessages(set []byte) ([]legacyMessage, error) {
	var inner []legacyMessage
	for len(set) > 0 {
		if len(set) < batchLogOverhead {
			return nil, fmt.Errorf("%w: inner message set", errCorruptBatch)
		}
		size := batchLogOverhead + int(int32(binary.BigEndian.Uint32(set[batchLengthOffset:])))
		if size < legacyMinSize || size > len(set) {
			return nil, fmt.Errorf("%w: inner message of %d bytes", errCorruptBatch, size)
		}
		im, err := decodeLegacy(set[:size])
		if err != nil {
			return nil, err
		}
		if im.attrs&batchCompressionMask != 0 {
			return nil, fmt.Errorf("%w: nested compression", errCorruptBatch)
		}
		inner = append(inner, im)
		set = set[size:]
	}
	return inner, nil
}

// appendLegacy appends one uncompressed message as a record at its offset, unless it is before
// next.
func (rr *recordReader) appendLegacy(m legacyMessage, ts int64, topic string, p int, next int64, out []kafka.Message,
	flush func([]kafka.Message), own ownFunc) ([]kafka.Message, int64, error) {
	at := m.offset
	if own != nil && at >= next {
		out, next = own(at, next, out)
	}
	if at < next {
		return out, next, nil
	}
	r := kafka.Message{Topic: topic, Partition: p, Offset: at, Key: m.key, Value: m.value}
	if m.magic == 1 && ts >= 0 {
		r.Time = time.UnixMilli(ts)
	}
	if !rr.borrow {
		r.Key, r.Value = copyKeyValue(r.Key, r.Value)
	}
	out = append(out, r)
	if flush != nil && len(out) == logApplyChunk {
		flush(out)
		out = out[:0]
	}
	return out, at + 1, nil
}
