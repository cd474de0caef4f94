package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// MarshalJSON writes the config as a JSON object in its order, with null for Null entries.
func (c Config) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	// encoding/json escapes <, > and & in a Marshaler's output whatever the Marshaler writes,
	// so there is no point in writing them unescaped here.
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, e := range c {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(e.Key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		if e.Null {
			buf.WriteString("null")
			continue
		}
		v, err := json.Marshal(e.Value)
		if err != nil {
			return nil, err
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
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
