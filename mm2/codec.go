package mm2

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// checkpointVersion is Checkpoint.VERSION, the only value version MirrorMaker 2 writes
// (docs/mirrormaker2.md, "Checkpoint records").
const checkpointVersion = 0

// maxStringBytes is the longest STRING the Kafka protocol types write (an INT16 length).
const maxStringBytes = math.MaxInt16

// Checkpoint is one record of MirrorMaker 2's checkpoints topic (`<source>.checkpoints.internal`
// on the target cluster): group's committed offset UpstreamOffset on the source cluster,
// translated to Offset on the target cluster (docs/mirrormaker2.md, "Checkpoint records").
type Checkpoint struct {
	// Group is the consumer group, named as on the source cluster.
	Group string `json:"group"`
	// Topic is the downstream (target-cluster) topic, already renamed by the replication policy.
	Topic string `json:"topic"`
	// Partition is the partition, the same on both clusters.
	Partition int32 `json:"partition"`
	// UpstreamOffset is the group's committed offset on the source when the checkpoint was made.
	UpstreamOffset int64 `json:"upstream_offset"`
	// Offset is the translated offset to commit on the target: a lower bound of the exact one.
	Offset int64 `json:"offset"`
	// Metadata is the source commit's metadata, "" when there was none.
	Metadata string `json:"metadata"`
}

// OffsetSync is one record of MirrorMaker 2's offset-syncs topic: the source record at
// UpstreamOffset of Topic/Partition landed at Offset on the target (docs/mirrormaker2.md,
// "Offset-sync records"). Topic is the upstream (source-cluster) name, not renamed.
type OffsetSync struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	UpstreamOffset int64  `json:"upstream_offset"`
	Offset         int64  `json:"offset"`
}

// Reason is the bounded reason of a FormatError.
type Reason string

// The reasons a record of an MM2 topic is refused.
const (
	// ReasonNull: the key or value is null (a tombstone has no checkpoint).
	ReasonNull Reason = "null"
	// ReasonTruncated: the bytes end inside a field.
	ReasonTruncated Reason = "truncated"
	// ReasonNegativeLength: a STRING length below zero (Java's SchemaException).
	ReasonNegativeLength Reason = "negative_length"
	// ReasonOversizedLength: a STRING length beyond the bytes left (Java's SchemaException).
	ReasonOversizedLength Reason = "oversized_length"
	// ReasonTrailingBytes: bytes after the last field of a key (values tolerate them).
	ReasonTrailingBytes Reason = "trailing_bytes"
	// ReasonVersion: a checkpoint value whose version is not 0; Java would misread it.
	ReasonVersion Reason = "unsupported_version"
	// ReasonWrapped: a Connect converter wrapped the bytes (first byte '{' or '"'), as when MM2
	// runs as connectors without ByteArrayConverter.
	ReasonWrapped Reason = "converter_wrapped"
	// ReasonStringTooLong: a string to encode is longer than 32767 bytes.
	ReasonStringTooLong Reason = "string_too_long"
)

// FormatError says why bytes are not a valid checkpoint or offset-sync record, or why a value
// cannot be encoded as one.
type FormatError struct {
	// Record is "checkpoint" or "offset sync".
	Record string
	// Part is "key" or "value".
	Part string
	// Field is the field being read or written when the problem was found, if any.
	Field string
	// Reason is bounded, for branching and counting.
	Reason Reason
	// Detail is a human sentence with the numbers.
	Detail string
}

// Error returns a one-line description.
func (e *FormatError) Error() string {
	s := e.Record + " " + e.Part
	if e.Field != "" {
		s += " field " + e.Field
	}
	s += ": " + string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Key returns the key bytes MirrorMaker 2 writes for c: group, topic, partition
// (docs/mirrormaker2.md, "Checkpoint records").
func (c Checkpoint) Key() ([]byte, error) {
	w := writer{record: "checkpoint", part: "key"}
	w.str("group", c.Group)
	w.str("topic", c.Topic)
	w.int32(c.Partition)
	return w.buf, w.err
}

// Value returns the value bytes MirrorMaker 2 writes for c: version 0, upstreamOffset, offset,
// metadata (docs/mirrormaker2.md, "Checkpoint records").
func (c Checkpoint) Value() ([]byte, error) {
	w := writer{record: "checkpoint", part: "value"}
	w.int16(checkpointVersion)
	w.int64(c.UpstreamOffset)
	w.int64(c.Offset)
	w.str("metadata", c.Metadata)
	return w.buf, w.err
}

// Key returns the key bytes MirrorMaker 2 writes for s: topic, partition
// (docs/mirrormaker2.md, "Offset-sync records").
func (s OffsetSync) Key() ([]byte, error) {
	w := writer{record: "offset sync", part: "key"}
	w.str("topic", s.Topic)
	w.int32(s.Partition)
	return w.buf, w.err
}

// Value returns the value bytes MirrorMaker 2 writes for s: upstreamOffset, offset
// (docs/mirrormaker2.md, "Offset-sync records").
func (s OffsetSync) Value() ([]byte, error) {
	w := writer{record: "offset sync", part: "value"}
	w.int64(s.UpstreamOffset)
	w.int64(s.Offset)
	return w.buf, w.err
}

// DecodeCheckpointKey decodes a checkpoint key strictly: trailing bytes are refused. Errors are
// *FormatError.
func DecodeCheckpointKey(key []byte) (group, topic string, partition int32, err error) {
	return decodeCheckpointKey(key, true)
}

// decodeCheckpointKey decodes a key; strict refuses trailing bytes, as the Go reader does, and
// lenient ignores them, as Java does (only to name the group of a refused record).
func decodeCheckpointKey(key []byte, strict bool) (group, topic string, partition int32, err error) {
	r := reader{record: "checkpoint", part: "key", b: key}
	r.notWrappedOrNull()
	group = r.str("group")
	topic = r.str("topic")
	partition = r.int32("partition")
	if strict {
		r.end()
	}
	return group, topic, partition, r.errOrNil()
}

// DecodeCheckpoint decodes a checkpoint record: the key strictly, the value as Java's
// Schema.read does (trailing bytes ignored) except that a version other than 0 is refused.
// Errors are *FormatError.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	group, topic, partition, err := DecodeCheckpointKey(key)
	if err != nil {
		return Checkpoint{}, err
	}
	r := reader{record: "checkpoint", part: "value", b: value}
	r.notWrappedOrNull()
	if v := r.int16("version"); r.err == nil && v != checkpointVersion {
		r.fail("version", ReasonVersion, fmt.Sprintf("version %d, only 0 is known", v))
	}
	c := Checkpoint{Group: group, Topic: topic, Partition: partition}
	c.UpstreamOffset = r.int64("upstreamOffset")
	c.Offset = r.int64("offset")
	c.Metadata = r.str("metadata")
	if err := r.errOrNil(); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// DecodeOffsetSync decodes an offset-sync record: the key strictly, the value tolerating
// trailing bytes as Java does. Errors are *FormatError.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	r := reader{record: "offset sync", part: "key", b: key}
	r.notWrappedOrNull()
	s := OffsetSync{Topic: r.str("topic"), Partition: r.int32("partition")}
	r.end()
	if err := r.errOrNil(); err != nil {
		return OffsetSync{}, err
	}
	r = reader{record: "offset sync", part: "value", b: value}
	r.notWrappedOrNull()
	s.UpstreamOffset = r.int64("upstreamOffset")
	s.Offset = r.int64("offset")
	if err := r.errOrNil(); err != nil {
		return OffsetSync{}, err
	}
	return s, nil
}

// writer appends big-endian protocol types; the first error sticks.
type writer struct {
	record, part string
	buf          []byte
	err          error
}

func (w *writer) int16(v int16) { w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(v)) }
func (w *writer) int32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *writer) int64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }

// str writes a STRING: INT16 length, then the UTF-8 bytes. Like Java's Type.STRING it refuses
// more than 32767 bytes; Go strings have no null, so "not nullable" needs no check.
func (w *writer) str(field, s string) {
	if len(s) > maxStringBytes {
		if w.err == nil {
			w.err = &FormatError{Record: w.record, Part: w.part, Field: field, Reason: ReasonStringTooLong,
				Detail: fmt.Sprintf("%d bytes, at most %d", len(s), maxStringBytes)}
		}
		return
	}
	w.int16(int16(len(s)))
	w.buf = append(w.buf, s...)
}

// reader reads big-endian protocol types; after the first error every read returns zero.
type reader struct {
	record, part string
	b            []byte
	err          *FormatError
}

func (r *reader) fail(field string, reason Reason, detail string) {
	if r.err == nil {
		r.err = &FormatError{Record: r.record, Part: r.part, Field: field, Reason: reason, Detail: detail}
	}
}

func (r *reader) errOrNil() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

// notWrappedOrNull refuses a null part and sniffs a converter's wrapping (docs/mirrormaker2.md, "The
// checkpoints topic"): a JSON
// string or object where raw bytes were expected. The raw encodings start with an INT16 length
// or version or the high byte of an offset, which is never '{' (0x7b) or '"' (0x22) for
// lengths under 8704 and offsets under 2^61.
func (r *reader) notWrappedOrNull() {
	switch {
	case r.b == nil:
		r.fail("", ReasonNull, "")
	case len(r.b) > 0 && (r.b[0] == '{' || r.b[0] == '"'):
		r.fail("", ReasonWrapped, fmt.Sprintf("starts with %q: a Connect converter wrapped the bytes; MM2 needs ByteArrayConverter", r.b[0]))
	}
}

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail(field, ReasonTruncated, fmt.Sprintf("needs %d bytes, %d left", n, len(r.b)))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16(field string) int16 {
	if b := r.take(field, 2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32(field string) int32 {
	if b := r.take(field, 4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64(field string) int64 {
	if b := r.take(field, 8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) str(field string) string {
	n := r.int16(field)
	if r.err != nil {
		return ""
	}
	switch {
	case n < 0:
		r.fail(field, ReasonNegativeLength, fmt.Sprintf("length %d", n))
		return ""
	case int(n) > len(r.b):
		r.fail(field, ReasonOversizedLength, fmt.Sprintf("length %d, %d bytes left", n, len(r.b)))
		return ""
	}
	return string(r.take(field, int(n)))
}

// end refuses trailing bytes (keys only: Java ignores them, a strict reader should not).
func (r *reader) end() {
	if r.err == nil && len(r.b) > 0 {
		r.fail("", ReasonTrailingBytes, fmt.Sprintf("%d bytes after the last field", len(r.b)))
	}
}

// unwrapConverted returns the bytes inside a JsonConverter-wrapped BYTES record: a base64 JSON
// string (schemas.enable=false) or an envelope {"schema":…,"payload":"<base64>"}. It serves
// only to name the group a wrapped checkpoint belongs to in reports; wrapped values are never
// used as offsets.
func unwrapConverted(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	var s string
	switch b[0] {
	case '"':
		if json.Unmarshal(b, &s) != nil {
			return nil, false
		}
	case '{':
		var env struct {
			Payload *string `json:"payload"`
		}
		if json.Unmarshal(b, &env) != nil || env.Payload == nil {
			return nil, false
		}
		s = *env.Payload
	default:
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return raw, true
}
