package offsetstore

import (
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// DecodeKey parses an offsets-topic key the way Connect's KafkaOffsetBackingStore lists
// partitions (OffsetUtils.processPartitionKey): ok is false unless the key is a JSON array of
// exactly two elements, a string and an object or null; Connect skips any other key when it
// lists or resets a connector's partitions (its bytes still hold a value). partition keeps the
// stored member order, numbers their stored literal; a repeated member keeps its first position
// and takes its last value, as Jackson's tree does. A null partition gives a nil Map with ok.
//
// Like Connect's reader (Jackson readTree with ALLOW_LEADING_ZEROS_FOR_NUMBERS), it accepts
// numbers with leading zeros and ignores anything after the array. A lone UTF-16 surrogate
// escape, which Java keeps but Go strings cannot, decodes as U+FFFD.
//
// It is on the view's hot path (every record of the offsets topic), hence a hand-rolled
// scanner: one allocation for the key text, which all unescaped strings share, one for the
// Map and one per boxed string or number value.
func DecodeKey(key []byte) (connector string, partition jsonvalue.Map, ok bool) {
	if !utf8.Valid(key) {
		return "", nil, false
	}
	sc := jsonvalue.NewStringScanner(string(key))
	sc.AllowLeadingZeros()
	if !sc.Consume('[') {
		return "", nil, false
	}
	connector, ok = sc.ReadString()
	if !ok || !sc.Consume(',') {
		return "", nil, false
	}
	switch sc.NextByte() {
	case '{':
		m, err := sc.Object()
		if err != nil {
			return "", nil, false
		}
		partition = m
	case 'n':
		if v, err := sc.Value(); err != nil || v != nil {
			return "", nil, false
		}
	default:
		return "", nil, false
	}
	if !sc.Consume(']') {
		return "", nil, false
	}
	return connector, partition, true
}
