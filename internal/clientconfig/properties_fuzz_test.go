package clientconfig

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// escapeProperty writes s so that ParseProperties reads it back as s: as a key when key, else
// as a value (java.util.Properties.store's escaping, with \uXXXX for every non-ASCII rune).
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case strings.ContainsRune("=:#!", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16Units(r) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))}
}

// FuzzParseProperties: ParseProperties never panics, and what it reads, written back with
// Properties.store's escaping, reads back the same.
func FuzzParseProperties(f *testing.F) {
	f.Add([]byte("a=1\nb : 2\n# c\n  d\\\n   e\n"))
	f.Add([]byte(`k\ e\=y=\u00e9\ud83d\ude00\t`))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range props {
			if strings.ContainsRune(p.Key+p.Value, '\uFFFD') {
				return // a lone surrogate escape: not representable back
			}
			b.WriteString(escapeProperty(p.Key, true) + "=" + escapeProperty(p.Value, false) + "\n")
		}
		again, err := ParseProperties([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-read %q: %v", b.String(), err)
		}
		if len(again) != len(props) {
			t.Fatalf("re-read %d properties, want %d", len(again), len(props))
		}
		for i := range props {
			if again[i].Key != props[i].Key || again[i].Value != props[i].Value {
				t.Fatalf("property %d: re-read %q=%q, want %q=%q", i, again[i].Key, again[i].Value, props[i].Key, props[i].Value)
			}
		}
	})
}

// FuzzParseCommandConfig: the client properties reader never panics and never quotes the
// JAAS password in an error. The check is sound where it runs: the password is a part of the
// value of sasl.jaas.config and of no key or other value (the fuzzer may as well put it in a
// key, which an error names), and it is one word of letters and digits with one outside
// ASCII, so no text of the readers' own (ASCII) nor a key next to it can spell it. The file is
// ISO 8859-1: one byte per character. FuzzSecretsNotInErrors plants secrets of any characters.
func FuzzParseCommandConfig(f *testing.F) {
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="`, "P4ssw\u00f6rd", `";`)
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=", `org.apache.kafka.common.security.scram.ScramLoginModule required username='u' password=`, "P4ssw\u00f6rd", ` /* x`)
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=my `, "P4ssw\u00f6rd", `;`)
	f.Fuzz(func(t *testing.T, head, jaas, password, tail string) {
		nonASCII := false
		for _, r := range password {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > 0xFF {
				return
			}
			nonASCII = nonASCII || r > 0x7F
		}
		if utf8.RuneCountInString(password) < 6 || !nonASCII || strings.Contains(head+jaas+tail, password) {
			return
		}
		var file []byte
		for _, r := range head + jaas + password + tail {
			if r > 0xFF {
				return
			}
			file = append(file, byte(r))
		}
		props, err := ParseProperties(file)
		if err != nil {
			return
		}
		inJAAS := false
		for _, p := range props {
			if strings.Contains(p.Key, password) || p.Key != "sasl.jaas.config" && strings.Contains(p.Value, password) {
				return
			}
			inJAAS = inJAAS || p.Key == "sasl.jaas.config" && strings.Contains(p.Value, password)
		}
		if !inJAAS {
			return
		}
		_, _, err = ParseCommandConfig(file)
		if err != nil && strings.Contains(err.Error(), password) {
			t.Fatalf("error quotes the password: %v", err)
		}
	})
}
