package jsonvalue

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Append appends v, a value as DecodeValue returns it (nil, bool, string, Number, Map or
// []any), as compact JSON: map members in the Map's order, numbers as their literal text,
// strings as encoding/json writes them without HTML escaping. It is the writer for our own
// documents (result events, messages); Connect's records are written Jackson's way by
// offsetstore.AppendJSON.
//
// It fails on a Number that is not a JSON number, on a type DecodeValue does not produce and
// on nesting deeper than DecodeValue accepts.
func Append(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

// String is Append into a string, for messages: values from DecodeValue always encode; a
// value Append rejects is written as far as it went.
func String(v any) string {
	b, _ := Append(nil, v)
	return string(b)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, errors.New("encode JSON value: nested too deeply")
	}
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case string:
		return AppendString(dst, t), nil
	case Number:
		if t == "" || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') || !json.Valid([]byte(t)) {
			return dst, fmt.Errorf("encode JSON value: %q is not a JSON number", string(t))
		}
		return append(dst, t...), nil
	case Map:
		if t == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '{')
		for i, f := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, f.Key)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, f.Value, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	default:
		return dst, fmt.Errorf("encode JSON value: unsupported type %T", v)
	}
}

// AppendString appends s as a JSON string the way encoding/json writes it with HTML
// escaping off: invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are escaped.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// AppendStringHTML appends s as a JSON string exactly as encoding/json's Marshal writes a
// string: as AppendString, and <, > and & escaped for HTML.
func AppendStringHTML(dst []byte, s string) []byte { return appendString(dst, s, true) }

func appendString(dst []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// MarshalJSON writes m with Append, in its order.
func (m Map) MarshalJSON() ([]byte, error) {
	return Append(nil, m)
}

// UnmarshalJSON decodes a JSON object into m in input order (DecodeMap). A JSON null leaves m
// unchanged, as encoding/json expects of an Unmarshaler.
func (m *Map) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := DecodeMap(data)
	if err != nil {
		return fmt.Errorf("decode map: %w", err)
	}
	*m = v
	return nil
}
