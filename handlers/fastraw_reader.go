package handlers

import (
	"encoding/binary"
	"unsafe"
)

// rawReader reads the fast path's shape of JSON text; every method reports false on anything
// else (which may be valid JSON the general path reads).
type rawReader struct {
	s string
	i int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (r *rawReader) ws() {
	// Bulk requests seldom have whitespace between tokens: one comparison tells (every
	// whitespace byte is at most ' ').
	if r.i < len(r.s) && r.s[r.i] > ' ' {
		return
	}
	for r.i < len(r.s) && isSpace(r.s[r.i]) {
		r.i++
	}
}

func (r *rawReader) eat(c byte) bool {
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

// entry reads {"partition": {...}, "offset": {...}} (either order) into p and o.
func (r *rawReader) entry(p, o *[]rawField) bool {
	r.ws()
	if !r.eat('{') {
		return false
	}
	gotP, gotO := false, false
	for {
		r.ws()
		k, ok := r.known("partition")
		if !ok {
			k, ok = r.known("offset")
		}
		if !ok {
			k, ok = r.str()
		}
		if !ok {
			return false
		}
		r.ws()
		if !r.eat(':') {
			return false
		}
		r.ws()
		switch {
		case k == "partition" && !gotP:
			gotP = true
			*p, ok = r.flat((*p)[:0])
		case k == "offset" && !gotO:
			gotO = true
			*o, ok = r.flat((*o)[:0])
		default:
			return false
		}
		if !ok {
			return false
		}
		r.ws()
		if r.eat('}') {
			return gotP && gotO
		}
		if !r.eat(',') {
			return false
		}
	}
}

// flat reads a non-empty object of string and long members. dst's array holds the previous
// entry's members past its length: each key is first looked for as the previous entry's key
// in the same place, and each string value as one of the same length as there (entries of the
// common shape repeat their keys and the lengths of most values).
func (r *rawReader) flat(dst []rawField) ([]rawField, bool) {
	if !r.eat('{') {
		return nil, false
	}
	prev := dst[:cap(dst)]
	for {
		r.ws()
		var like rawField
		if n := len(dst); n < len(prev) {
			like = prev[n]
		}
		k, ok := r.known(like.Key)
		if !ok {
			k, ok = r.str()
		}
		if !ok {
			return nil, false
		}
		r.ws()
		if !r.eat(':') {
			return nil, false
		}
		r.ws()
		f := rawField{Key: k}
		if r.i < len(r.s) && r.s[r.i] == '"' {
			if f.Text, ok = r.strOfLen(len(like.Text)); !ok {
				f.Text, ok = r.str()
			}
		} else {
			f.Text, ok = r.long()
			f.Long = true
		}
		if !ok {
			return nil, false
		}
		dst = append(dst, f)
		r.ws()
		if r.eat('}') {
			return dst, true
		}
		if !r.eat(',') {
			return nil, false
		}
	}
}

// str reads a string without escapes or characters beyond U+FFFF and returns its text.
func (r *rawReader) str() (string, bool) {
	if !r.eat('"') {
		return "", false
	}
	// Local copies: the loop's index stays in a register.
	s, start := r.s, r.i
	i := start
	for i < len(s) && rawPlain[s[i]] {
		i++
	}
	r.i = i
	if i < len(s) && s[i] == '"' {
		r.i++
		return s[start:i], true
	}
	return "", false
}

// known reads the string k next, if the text has it there (k is plain: read by str before);
// str would read the same. Its result is k itself: compared with the keys of the first entry,
// which it often is, it is equal at once (same bytes, same place).
func (r *rawReader) known(k string) (string, bool) {
	i := r.i
	if end := i + 1 + len(k); end < len(r.s) && r.s[i] == '"' && r.s[end] == '"' && r.s[i+1:end] == k {
		r.i = end + 1
		return k, true
	}
	return "", false
}

// strOfLen is str for a string of n bytes, which it looks for where str would end it: it
// reads n plain bytes, a count known ahead rather than an end found byte by byte.
func (r *rawReader) strOfLen(n int) (string, bool) {
	s, i := r.s, r.i
	end := i + 1 + n
	if end >= len(s) || s[i] != '"' || s[end] != '"' {
		return "", false
	}
	t := s[i+1 : end]
	if len(t) >= 8 {
		// 8 bytes at a time, the last 8 overlapping the others.
		b := unsafe.Slice(unsafe.StringData(t), len(t))
		le := binary.LittleEndian
		m := notPlain(le.Uint64(b[len(b)-8:]))
		for j := 0; j+8 <= len(b); j += 8 {
			m |= notPlain(le.Uint64(b[j:]))
		}
		if m != 0 {
			return "", false
		}
	} else {
		for j := 0; j < len(t); j++ {
			if !rawPlain[t[j]] {
				return "", false
			}
		}
	}
	r.i = end + 1
	return t, true
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// notPlain is not zero when one of the 8 bytes of x is one rawPlain does not mark: '"', '\\',
// below 0x20, or 0xF0 and above. (It marks such bytes with their high bit; a borrow may mark
// bytes above a marked one too, never when none is.)
func notPlain(x uint64) uint64 {
	quote := x ^ ('"' * ones)
	backslash := x ^ ('\\' * ones)
	zeroQuote := (quote - ones) &^ quote
	zeroBackslash := (backslash - ones) &^ backslash
	control := (x - 0x20*ones) &^ x
	// Bytes of 0xF0 and above have their four high bits set (the shifts stay within a byte
	// where the high bit is looked at).
	four := x & (x << 1) & (x << 2) & (x << 3)
	return (zeroQuote | zeroBackslash | control | four) & highs
}

// rawPlain marks the bytes a string of the single pass holds: not '"', and no escape (the
// general path decodes them) nor the lead byte of a character beyond U+FFFF (written as an
// escaped surrogate pair), nor a control character (not JSON unescaped). Anything else is
// written back as it came: the text is valid UTF-8 (the decoder checks the whole record).
var rawPlain = func() (t [256]bool) {
	for c := 0x20; c < 0xF0; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// long reads an integer written as Java prints a long (canonicalLong).
func (r *rawReader) long() (string, bool) {
	start := r.i
	r.eat('-')
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	if r.i < len(r.s) {
		switch r.s[r.i] {
		case '.', 'e', 'E':
			return "", false
		}
	}
	t := r.s[start:r.i]
	return t, canonicalLong(t)
}
