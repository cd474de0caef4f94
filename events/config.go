package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// Get returns the value of key and whether it is present. A null entry is present with "".
func (c Config) Get(key string) (string, bool) {
	for _, e := range c {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// Map returns the config as a map; null entries map to "" (check ConfigEntry.Null when the
// difference matters).
func (c Config) Map() map[string]string {
	m := make(map[string]string, len(c))
	for _, e := range c {
		m[e.Key] = e.Value
	}
	return m
}

// MarshalJSON writes the config as a JSON object in its order, with null for Null entries,
// each string as encoding/json writes it (appendJSONString). Every result carries its
// request's config: the object is written in one buffer, with no value of its own per entry.
func (c Config) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	size := 2
	for _, e := range c {
		size += len(e.Key) + len(e.Value) + 6
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	for i, e := range c {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, e.Key)
		buf = append(buf, ':')
		if e.Null {
			buf = append(buf, "null"...)
			continue
		}
		buf = appendJSONString(buf, e.Value)
	}
	return append(buf, '}'), nil
}

// appendJSONString appends s as a JSON string exactly as encoding/json's Marshal writes a
// string: <, > and & escaped for HTML, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
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

// UnmarshalJSON reads a JSON object (or null) with the same rules as a request's config:
// numbers and booleans become their text, null values become Null entries, nested values are
// an error.
func (c *Config) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	cfg, err := decodeConfig(dec)
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("config has more data after the JSON value")
	}
	*c = cfg
	return nil
}

// String lists the config as key=value pairs with secrets hidden, so that a Config passed to a
// logger or a %v verb never prints a password.
func (c Config) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range c.Redacted() {
		if i > 0 {
			b.WriteString(", ")
		}
		if e.Null {
			fmt.Fprintf(&b, "%s=null", e.Key)
		} else {
			fmt.Fprintf(&b, "%s=%s", e.Key, e.Value)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// LogValue makes slog print the redacted String form, including with a JSON handler, which
// would otherwise call MarshalJSON and print secrets.
func (c Config) LogValue() slog.Value {
	return slog.StringValue(c.String())
}
