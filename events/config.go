package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
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
// each string as encoding/json writes it (jsonvalue.AppendStringHTML). Every result carries its
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
		buf = jsonvalue.AppendStringHTML(buf, e.Key)
		buf = append(buf, ':')
		if e.Null {
			buf = append(buf, "null"...)
			continue
		}
		buf = jsonvalue.AppendStringHTML(buf, e.Value)
	}
	return append(buf, '}'), nil
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
