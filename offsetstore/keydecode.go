package offsetstore

import "unicode/utf8"

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
func DecodeKey(key []byte) (connector string, partition Map, ok bool) {
	if !utf8.Valid(key) {
		return "", nil, false
	}
	p := scanner{s: string(key), leadingZeros: true}
	p.space()
	if !p.eat('[') {
		return "", nil, false
	}
	p.space()
	connector, ok = p.str()
	if !ok {
		return "", nil, false
	}
	p.space()
	if !p.eat(',') {
		return "", nil, false
	}
	p.space()
	switch {
	case p.peek() == '{':
		partition, ok = p.object(1)
	case p.literal("null"):
		partition, ok = nil, true
	default:
		ok = false
	}
	if !ok {
		return "", nil, false
	}
	p.space()
	if !p.eat(']') {
		return "", nil, false
	}
	return connector, partition, true
}
