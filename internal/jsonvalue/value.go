package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Number is a JSON number kept as the literal text it arrived with, so that an integer such as
// 9007199254740993 is never rounded through float64 on its way to the offsets topic.
type Number string

// Field is one member of a JSON object.
type Field struct {
	Key string
	// Value is nil (JSON null), bool, string, Number, Map (nested object) or []any (array).
	Value any
}

// Map is a JSON object with its members in order. The order is the input order after
// decoding and the output order when encoding: callers that need Connect's byte layout reorder
// it first (JavaHashMapOrder). A nil Map stands for JSON null or an absent object; an empty
// object decodes to a non-nil Map of length 0.
type Map []Field

// Get returns the value of key and whether the key is present.
func (m Map) Get(key string) (any, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].Key == key {
			return m[i].Value, true
		}
	}
	return nil, false
}

// SortedText is m's compact JSON text with its members sorted by key (the top level's; nested
// objects keep their order), for comparing two maps that need not list their keys in one order:
// two Connect REST APIs, a partition read back and the one placed. A map Append rejects is
// written as fmt prints it.
func SortedText(m Map) string {
	sorted := slices.Clone(m)
	slices.SortFunc(sorted, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	b, err := Append(nil, sorted)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}

// DecodeValue reads one JSON value from dec, which must have UseNumber set. Objects become
// Map in input order (a repeated key keeps its first position and takes its last value, as
// Jackson does when it fills a map), arrays []any, numbers Number.
func DecodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return decodeFrom(dec, tok, 0)
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 64

func decodeFrom(dec *json.Decoder, tok json.Token, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("json nested too deeply")
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := Map{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				vt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeFrom(dec, vt, depth+1)
				if err != nil {
					return nil, err
				}
				m = m.set(key, v)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return m, nil
		case '[':
			arr := []any{}
			for dec.More() {
				vt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeFrom(dec, vt, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		default:
			return nil, fmt.Errorf("unexpected %v", t)
		}
	case json.Number:
		return Number(t), nil
	case string, bool, nil:
		return t, nil
	default:
		return nil, fmt.Errorf("unexpected token %T", tok)
	}
}

// set replaces the value of an existing key in place or appends a new member.
func (m Map) set(key string, v any) Map {
	for i := range m {
		if m[i].Key == key {
			m[i].Value = v
			return m
		}
	}
	return append(m, Field{Key: key, Value: v})
}

// DecodeMap decodes data, which must hold one JSON object (or null, giving a nil Map).
func DecodeMap(data []byte) (Map, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := DecodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case Map:
		return t, nil
	default:
		return nil, fmt.Errorf("expected a JSON object, got %s", KindOf(v))
	}
}

// KindOf names the JSON kind of a decoded value for error messages.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case Number:
		return "number"
	case Map:
		return "object"
	case []any:
		return "array"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON whitespace.
func SkipSpace[T string | []byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
