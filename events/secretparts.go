package events

import (
	"cmp"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/offsetagent/offsetagent/internal/jaas"
)

// Which parts of a config value are secrets in clear text. Config provider placeholders
// (ConfigVariables) are not: Connect replaces them with what a provider holds when it starts the
// connector, and the text around them is what the config itself holds. Secret keys' values
// are secrets; inside a JAAS config only the values of its options (jaas.go), and inside
// another value the passwords MaskCredentials masks.

// A ConfigVariable is a config provider placeholder, ${provider:[path:]key}, at the bytes
// [Start, End) of a value.
type ConfigVariable struct {
	Start, End          int
	Provider, Path, Key string
}

// configVariable is Connect's ConfigTransformer's DEFAULT_PATTERN,
// \$\{([^}]*?):(([^}]*?):)?([^}]*?)\}: no part of a placeholder holds a '}', and a '$' or a
// line break is a character like any other. Among the leftmost matches, Go's regexp picks the
// one a backtracking engine such as Java's picks; TestSecretsReadAsKafkaReadsThem holds the two
// to the same reading.
var configVariable = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// ConfigVariables returns the placeholders of value as Connect finds them, in order: each from a
// "${" to the first '}' after it that has a ':' before it. Connect replaces each once, left to
// right, and never reads a replacement again: a placeholder inside a provider's value reaches
// the connector as it is written.
func ConfigVariables(value string) []ConfigVariable {
	var out []ConfigVariable
	for _, m := range configVariable.FindAllStringSubmatchIndex(value, -1) {
		v := ConfigVariable{Start: m[0], End: m[1], Provider: value[m[2]:m[3]], Key: value[m[8]:m[9]]}
		if m[6] >= 0 {
			v.Path = value[m[6]:m[7]]
		}
		out = append(out, v)
	}
	return out
}

// A SecretSpan is a part of a config value that holds a secret in clear text: the bytes
// [Start, End) of the value. Name names the part within the value: the JAAS option whose value
// it is in; "" for a password inside a URL or a connection string, a JAAS comment, or a secret
// key's value.
type SecretSpan struct {
	Start, End int
	Name       string
}

// SecretSpans returns the parts of value, the value of config key, that hold a secret in clear
// text, in order and apart, none empty, none in a placeholder (ConfigVariables):
//   - for a sasl.jaas.config that Kafka's JaasConfig would read, secret by name: the value of
//     each option that may hold a secret (every option but a few known to hold none, such as
//     Kerberos' keyTab path and switches), and each comment, which Kafka skips but which may
//     hold an old password;
//   - for another key that is secret by name (IsSecretKey) or by secret (its PASSWORD keys),
//     a JAAS config Kafka would refuse among them: the value; what joins a part to a
//     placeholder beside it (blanks, and one ':', ',' or ';') is no part of it;
//   - for any other key, the passwords that MaskCredentials masks.
//
// A part that holds placeholders is the text around and between them. Placeholders are read as
// what they stand for: a word of their length where the value is parsed (a JAAS config, a URL).
func SecretSpans(key, value string, secret func(string) bool) []SecretSpan {
	parts := secretParts(key, value, secret)
	out := make([]SecretSpan, len(parts))
	for i, p := range parts {
		out[i] = p.SecretSpan
	}
	return out
}

// secretPart is a SecretSpan with the secret as the program reading the value sees it: a JAAS
// quoted string with its escapes read, a URL's password percent-decoded.
type secretPart struct {
	SecretSpan
	read string
}

func secretParts(key, value string, secret func(string) bool) []secretPart {
	if value == "" {
		return nil
	}
	vars := ConfigVariables(value)
	masked := value
	if len(vars) > 0 {
		b := []byte(value)
		for _, v := range vars {
			for i := v.Start; i < v.End; i++ {
				b[i] = 'x'
			}
		}
		masked = string(b)
	}
	// Each span found in the masked value, less the placeholders in it.
	var out []secretPart
	bounds := append(slices.Clone(vars), ConfigVariable{Start: len(value), End: len(value)})
	add := func(sp SecretSpan, joins bool, read func(string) string) {
		at := sp.Start
		for i, v := range bounds {
			if v.End <= at {
				continue
			}
			start, end := at, min(v.Start, sp.End)
			if joins {
				// What joins the run to a placeholder on either side is no part of it.
				if i > 0 && start == bounds[i-1].End {
					start = end - len(trimJoin(value[start:end], strings.TrimLeftFunc, strings.TrimPrefix))
				}
				if i < len(vars) && end == v.Start {
					end = start + len(trimJoin(value[start:end], strings.TrimRightFunc, strings.TrimSuffix))
				}
			}
			if end > start {
				out = append(out, secretPart{SecretSpan: SecretSpan{Start: start, End: end, Name: sp.Name}, read: read(value[start:end])})
			}
			if v.Start >= sp.End {
				return
			}
			at = v.End
		}
	}
	same := func(s string) string { return s }
	if IsSecretKey(key) || (secret != nil && secret(key)) {
		var cfg jaas.Config
		err := errors.New("not a sasl.jaas.config")
		if isJAASKey(key) {
			cfg, err = jaas.Parse(masked)
		}
		if err != nil {
			add(SecretSpan{End: len(value)}, true, same)
			return out
		}
		for _, e := range cfg.Entries {
			for _, o := range e.Options {
				if jaasSecretOption(o.Name) {
					read := same
					if o.Quoted {
						read = jaas.Unescape
					}
					add(SecretSpan{Start: o.Start, End: o.End, Name: o.Name}, false, read)
				}
			}
		}
		for _, c := range cfg.Comments {
			add(SecretSpan{Start: c[0], End: c[1]}, false, same)
		}
		slices.SortFunc(out, func(a, b secretPart) int { return cmp.Compare(a.Start, b.Start) })
		return out
	}
	for _, sp := range credentialSpans(masked) {
		add(sp, false, func(s string) string {
			if u, err := url.PathUnescape(s); err == nil {
				return u
			}
			return s
		})
	}
	return out
}

// trimJoin trims s, by trim and cut, of what joins it to a placeholder: blanks, and one of
// ':', ',' and ';' with the blanks beyond it.
func trimJoin(s string, trim func(string, func(rune) bool) string, cut func(string, string) string) string {
	t := trim(s, unicode.IsSpace)
	for _, sep := range []string{":", ",", ";"} {
		if u := cut(t, sep); u != t {
			return trim(u, unicode.IsSpace)
		}
	}
	return t
}
