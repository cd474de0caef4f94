package jsonvalue

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner's strings: read in place when they have no escapes, decoded when they have.

// str reads a string; without escapes it is a substring of s (no allocation). Unescaped control
// characters and invalid UTF-8 are errors.
func (p *scanner) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		// Runs of plain bytes (printable ASCII but '"' and '\\') take one table lookup each.
		for p.i < len(p.s) && plainString[p.s[p.i]] {
			p.i++
		}
		if p.i >= len(p.s) {
			break
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.keep(p.s[start : p.i-1]), true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return "", false // RFC 8259 and Jackson reject unescaped control characters
		case c >= utf8.RuneSelf:
			if !p.rune() {
				return "", false
			}
			continue
		}
		p.i++
	}
	return "", false
}

// plainString marks the bytes a string holds as they are, with nothing to check: printable
// ASCII but '"' and '\\'.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rune steps over one multi-byte UTF-8 sequence; it reports false if it is not valid.
func (p *scanner) rune() bool {
	r, size := utf8.DecodeRuneInString(p.s[p.i:])
	if r == utf8.RuneError && size <= 1 {
		return false
	}
	p.i += size
	return true
}

// escapedStr finishes a string that contains escapes, from its first escape on.
func (p *scanner) escapedStr(start int) (string, bool) {
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
		case c >= utf8.RuneSelf:
			from := p.i
			if !p.rune() {
				return "", false
			}
			buf = append(buf, p.s[from:p.i]...)
			continue
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
// the result is U+FFFD and the input after r is left for the caller. Java keeps a lone
// surrogate, which a Go string cannot; encoding/json makes it U+FFFD too.
func (p *scanner) lowSurrogate(r rune) rune {
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

func (p *scanner) hex4() (rune, bool) {
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
