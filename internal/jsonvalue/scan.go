package jsonvalue

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// errTooDeep is DecodeValue's error for nesting deeper than maxDepth.
var errTooDeep = errors.New("json nested too deeply")

// ScanValue decodes the JSON value at the start of data (after optional whitespace) into the
// values DecodeValue produces: Map (input order; a repeated key keeps its first position and
// takes its last value), []any, Number, string, bool or nil, with the same nesting limit. n is
// the number of bytes read, up to the end of the value; what follows is the caller's.
//
// It is strict RFC 8259, as encoding/json is: no leading zeros, no trailing commas, only JSON's
// escapes, no unescaped control characters. Unlike encoding/json it rejects invalid UTF-8
// instead of replacing it; a lone surrogate escape becomes U+FFFD, as in encoding/json.
//
// It is a hand-rolled scanner with a fraction of the allocations of DecodeValue: unescaped
// strings and numbers are not copied but share data's memory, so data must not be modified
// while the value is in use.
func ScanValue(data []byte) (v any, n int, err error) {
	sc := NewScanner(data)
	v, err = sc.Value()
	return v, sc.Pos(), err
}

// Scanner reads JSON values one at a time from a document, for callers that walk its outer
// structure themselves (events.ParseCreateRequest) and hand the values inside to the scanner.
// It shares ScanValue's rules and its memory sharing: data must not be modified while values
// read from it are in use. The zero Scanner reads an empty document.
//
// Every method skips whitespace first. After a failure the position is where scanning stopped;
// the scanner is not meant to be used further.
type Scanner struct {
	p scanner
}

// NewScanner returns a Scanner over data.
func NewScanner(data []byte) *Scanner {
	// The strings handed out alias data, as documented; unsafe.String spares a copy of a
	// request that can be megabytes long.
	return &Scanner{p: scanner{s: unsafe.String(unsafe.SliceData(data), len(data))}}
}

// NewStringScanner returns a Scanner over s; values read from it share s's memory.
func NewStringScanner(s string) *Scanner {
	return &Scanner{p: scanner{s: s}}
}

// AllowLeadingZeros makes the scanner accept numbers such as 007, as Jackson does with
// ALLOW_LEADING_ZEROS_FOR_NUMBERS (Connect's reader of offsets-topic keys).
func (s *Scanner) AllowLeadingZeros() { s.p.leadingZeros = true }

// Pos returns the byte offset of the next unread byte.
func (s *Scanner) Pos() int { return s.p.i }

// Seek moves the scanner to byte offset pos, where scanning goes on; a position from Pos
// rewinds it.
func (s *Scanner) Seek(pos int) { s.p.i = min(max(pos, 0), len(s.p.s)) }

// Sub returns a new Scanner over the bytes from from to to (byte offsets of this scanner's
// document), sharing its memory: values read from it alias the same data.
func (s *Scanner) Sub(from, to int) *Scanner {
	return &Scanner{p: scanner{s: s.p.s[from:to], own: s.p.own}}
}

// CopyStrings makes the values read from here on independent of data: their strings are copied
// (short ones that repeat are shared), so data can be released while they are in use. It
// suits a large document whose values are kept long after it is read.
func (s *Scanner) CopyStrings() { s.p.own = true }

// GuessCuts guesses where the JSON array of objects starting at the scanner's position ('['
// after optional whitespace) can be cut into parts runs of elements of about equal length, for
// parsing the runs in parallel. It returns the byte offsets of up to parts-1 cut commas, in
// increasing order, and moves the scanner only past whitespace.
//
// A guess is a comma between a '}' and a '{' (whitespace aside) found from an evenly spaced
// starting point: between two elements, or inside a string or a nested array, where it is not a
// cut at all. The guesses are cheap (no pass over the whole array) and the caller checks them:
// a run that is not a complete sequence of elements fails to parse, and the caller then parses
// the array from the start in one pass. If every run parses, the cuts were between elements,
// since each run is a complete sequence of values on its own.
func (s *Scanner) GuessCuts(parts int) []int {
	s.p.space()
	start := s.p.i
	text := s.p.s
	if parts < 2 || start >= len(text) || text[start] != '[' {
		return nil
	}
	span := len(text) - start
	var cuts []int
	from := start + 1
	for j := 1; j < parts; j++ {
		at := max(from, start+span*j/parts)
		c := nextObjectComma(text, at)
		if c < 0 {
			break
		}
		cuts = append(cuts, c)
		from = c + 1
	}
	return cuts
}

// nextObjectComma is the offset of the first comma at or after from that follows a '}' and is
// followed by a '{', whitespace aside; -1 if there is none.
func nextObjectComma(text string, from int) int {
	for i := from; i < len(text); {
		k := strings.IndexByte(text[i:], '}')
		if k < 0 {
			return -1
		}
		i += k + 1
		if c := SkipSpace(text, i); c < len(text) && text[c] == ',' {
			if j := SkipSpace(text, c+1); j < len(text) && text[j] == '{' {
				return c
			}
		}
	}
	return -1
}

// Remaining returns the number of bytes not yet read.
func (s *Scanner) Remaining() int { return len(s.p.s) - s.p.i }

// NextByte returns the next byte that is not whitespace without consuming it, or 0 at the end.
func (s *Scanner) NextByte() byte {
	s.p.space()
	return s.p.peek()
}

// Consume consumes c if it is the next byte that is not whitespace.
func (s *Scanner) Consume(c byte) bool {
	s.p.space()
	return s.p.eat(c)
}

// AtEnd reports whether only whitespace is left.
func (s *Scanner) AtEnd() bool {
	s.p.space()
	return s.p.i == len(s.p.s)
}

// ReadString reads a JSON string (an object key, say); ok is false if the next value is not one.
func (s *Scanner) ReadString() (str string, ok bool) {
	s.p.space()
	return s.p.str()
}

// Value reads one JSON value, at the top level of nesting (as DecodeValue counts it).
func (s *Scanner) Value() (any, error) {
	s.p.space()
	v, ok := s.p.value(0)
	if !ok {
		return nil, s.err()
	}
	return v, nil
}

// Object reads a JSON object as a Map, at the top level of nesting. Unlike Value it does not box
// the Map into an interface, which would cost an allocation.
func (s *Scanner) Object() (Map, error) {
	s.p.space()
	m, ok := s.p.object(0)
	if !ok {
		return nil, s.err()
	}
	return m, nil
}

// Skip steps over one JSON value, at the top level of nesting, without building it: it
// accepts exactly what Value accepts (and fails where Value fails) and allocates nothing for a
// value without escaped strings.
func (s *Scanner) Skip() error {
	s.p.space()
	if !s.p.skip(0) {
		return s.err()
	}
	return nil
}

func (s *Scanner) err() error {
	if s.p.tooDeep {
		return errTooDeep
	}
	if s.p.i >= len(s.p.s) {
		return errors.New("invalid JSON: it ends early")
	}
	return fmt.Errorf("invalid JSON at byte %d", s.p.i)
}
