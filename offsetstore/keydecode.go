package offsetstore

import (
	"unicode/utf16"
	"unicode/utf8"
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
func DecodeKey(key []byte) (connector string, partition Map, ok bool) {
	if !utf8.Valid(key) {
		return "", nil, false
	}
	p := keyScanner{s: string(key)}
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

// keyScanner reads JSON from s; every method reports false on malformed input.
type keyScanner struct {
	s string
	i int
}

func (p *keyScanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *keyScanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *keyScanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *keyScanner) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// value reads one element of a container at depth; like DecodeValue it refuses elements nested
// deeper than maxDepth.
func (p *keyScanner) value(depth int) (any, bool) {
	if depth+1 > maxDepth {
		return nil, false
	}
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '{':
		m, ok := p.object(depth + 1)
		return m, ok
	case c == '[':
		return p.array(depth + 1)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

func (p *keyScanner) object(depth int) (Map, bool) {
	if depth > maxDepth || !p.eat('{') {
		return nil, false
	}
	m := make(Map, 0, 4)
	p.space()
	if p.eat('}') {
		return m, true
	}
	for {
		p.space()
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if !p.eat(':') {
			return nil, false
		}
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m = m.set(k, v)
		p.space()
		if p.eat('}') {
			return m, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

func (p *keyScanner) array(depth int) ([]any, bool) {
	if depth > maxDepth || !p.eat('[') {
		return nil, false
	}
	arr := []any{}
	p.space()
	if p.eat(']') {
		return arr, true
	}
	for {
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.space()
		if p.eat(']') {
			return arr, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// number scans -?digits(.digits)?([eE][+-]?digits)?; leading zeros are allowed, as in
// Connect's reader.
func (p *keyScanner) number() (Number, bool) {
	start := p.i
	p.eat('-')
	if !p.digits() {
		return "", false
	}
	if p.eat('.') && !p.digits() {
		return "", false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if !p.digits() {
			return "", false
		}
	}
	return Number(p.s[start:p.i]), true
}

func (p *keyScanner) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// str reads a string; without escapes it is a substring of the key text (no allocation).
func (p *keyScanner) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.s[start : p.i-1], true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return "", false // Jackson rejects unescaped control characters
		}
		p.i++
	}
	return "", false
}

// escapedStr finishes a string that contains escapes, from its first escape on.
func (p *keyScanner) escapedStr(start int) (string, bool) {
	buf := make([]byte, 0, p.i-start+16)
	buf = append(buf, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++ // backslash
		if p.i >= len(p.s) {
			return "", false
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				r = p.lowSurrogate(r)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
	}
	return "", false
}

// lowSurrogate combines high surrogate r with a following \uDC00-\uDFFF escape; without one
// the result is U+FFFD and the input after r is left for the caller.
func (p *keyScanner) lowSurrogate(r rune) rune {
	if r < 0xDC00 && len(p.s)-p.i >= 6 && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
		save := p.i
		p.i += 2
		if r2, ok := p.hex4(); ok {
			if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
				return c
			}
		}
		p.i = save
	}
	return utf8.RuneError
}

func (p *keyScanner) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}
