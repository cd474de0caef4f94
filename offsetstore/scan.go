package offsetstore

import (
	"errors"
	"fmt"
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

// Pos returns the byte offset of the next unread byte.
func (s *Scanner) Pos() int { return s.p.i }

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

func (s *Scanner) err() error {
	if s.p.tooDeep {
		return errTooDeep
	}
	if s.p.i >= len(s.p.s) {
		return errors.New("invalid JSON: it ends early")
	}
	return fmt.Errorf("invalid JSON at byte %d", s.p.i)
}
