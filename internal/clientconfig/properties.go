package clientconfig

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Property is one key and value of a properties file, with the line its key is on (1-based).
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties reads data in the format of java.util.Properties.load, the format of Kafka's
// client properties files (`kafka-*.sh --command-config`), Connect's worker configs and the
// Schema Registry client's: a line whose first non-blank character is `#` or `!` is a comment;
// a key ends at the first unescaped `=`, `:` or blank, and one `=` or `:` with the blanks
// around it separates it from the value; a line ending in an odd number of backslashes goes on
// on the next line, whose leading blanks are dropped; `\t`, `\n`, `\r`, `\f` and `\uXXXX` are
// escapes and a backslash before any other character stands for that character.
//
// The bytes are read as ISO 8859-1, as Kafka's Utils.loadProps reads them
// (Properties.load(InputStream)): a character outside ASCII is written as a \uXXXX escape.
// Properties are returned in file order; a key given twice is returned twice (the caller keeps
// the last, as Properties does). Values are returned as Properties holds them; a Kafka client
// then trims them (see configValues). A malformed \u escape is an error, as it is for Java; no error
// quotes a value, which may be a secret.
func ParseProperties(data []byte) ([]Property, error) {
	// ISO 8859-1: every byte is the code point of the same value.
	runes := make([]rune, len(data))
	for i, b := range data {
		runes[i] = rune(b)
	}
	var out []Property
	line := 1
	for i := 0; i < len(runes); {
		// One logical line: from its first natural line to the end of the last one it
		// continues onto.
		start := line
		i = skipPropBlanks(runes, i)
		if i < len(runes) && isPropEOL(runes[i]) {
			i, line = nextLine(runes, i, line)
			continue
		}
		if i >= len(runes) {
			break
		}
		if runes[i] == '#' || runes[i] == '!' {
			i = skipToEOL(runes, i)
			if i < len(runes) {
				i, line = nextLine(runes, i, line)
			}
			continue
		}
		var logical []rune
		logical, i, line = readLogicalLine(runes, i, line)
		if len(logical) == 0 {
			// Nothing but blanks and continuations, or a comment: no property.
			continue
		}
		p, err := parseProperty(logical, start)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// skipPropBlanks returns the index of the first rune at or after i that is not a blank.
func skipPropBlanks(runes []rune, i int) int {
	for i < len(runes) && isPropBlank(runes[i]) {
		i++
	}
	return i
}

// skipToEOL returns the index of the line terminator that ends the natural line at i, or the
// end of runes.
func skipToEOL(runes []rune, i int) int {
	for i < len(runes) && !isPropEOL(runes[i]) {
		i++
	}
	return i
}

// readLogicalLine gathers the characters of the logical line at i, resolving continuations,
// and returns them with the position and line number after it; escapes are kept (a backslash
// and its character) for the key/value split and decoded afterwards.
func readLogicalLine(runes []rune, i, line int) ([]rune, int, int) {
	var logical []rune
	for i < len(runes) && !isPropEOL(runes[i]) {
		if len(logical) == 0 && (runes[i] == '#' || runes[i] == '!') {
			// A logical line that has nothing yet when a natural line it continues onto
			// starts with a comment sign is a comment, as for Properties.load: the comment
			// ends with its natural line.
			i = skipToEOL(runes, i)
			break
		}
		if runes[i] == '\\' {
			if i+1 < len(runes) && !isPropEOL(runes[i+1]) {
				logical = append(logical, runes[i], runes[i+1])
				i += 2
				continue
			}
			// A backslash at the end of a natural line: the line goes on on the next one
			// (or ends at the end of the data).
			i++
			if i < len(runes) {
				i, line = nextLine(runes, i, line)
			}
			i = skipPropBlanks(runes, i)
			continue
		}
		logical = append(logical, runes[i])
		i++
	}
	if i < len(runes) {
		i, line = nextLine(runes, i, line)
	}
	return logical, i, line
}

// parseProperty splits the logical line that starts on line start into its key and value and
// decodes their escapes.
func parseProperty(logical []rune, start int) (Property, error) {
	key, value := splitProperty(logical)
	k, err := unescapeProperty(key)
	if err != nil {
		return Property{}, fmt.Errorf("line %d: key: %w", start, err)
	}
	v, err := unescapeProperty(value)
	if err != nil {
		return Property{}, fmt.Errorf("line %d: value of %q: %w", start, k, err)
	}
	return Property{Key: k, Value: v, Line: start}, nil
}

// nextLine steps over the line terminator at i (\n, \r or \r\n) and counts the line.
func nextLine(runes []rune, i, line int) (int, int) {
	if runes[i] == '\r' && i+1 < len(runes) && runes[i+1] == '\n' {
		i++
	}
	return i + 1, line + 1
}

func isPropBlank(r rune) bool { return r == ' ' || r == '\t' || r == '\f' }
func isPropEOL(r rune) bool   { return r == '\n' || r == '\r' }

// splitProperty splits a logical line (escapes still in it) into its key and value texts.
func splitProperty(l []rune) (key, value []rune) {
	i := 0
	for i < len(l) {
		if l[i] == '\\' {
			i += 2
			continue
		}
		if l[i] == '=' || l[i] == ':' || isPropBlank(l[i]) {
			break
		}
		i++
	}
	if i > len(l) {
		i = len(l)
	}
	key = l[:i]
	j := i
	for j < len(l) && isPropBlank(l[j]) {
		j++
	}
	if j < len(l) && (l[j] == '=' || l[j] == ':') {
		j++
		for j < len(l) && isPropBlank(l[j]) {
			j++
		}
	}
	return key, l[j:]
}

// unescapeProperty decodes the escapes of a key or value text.
func unescapeProperty(s []rune) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteRune(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", fmt.Errorf("malformed \\uxxxx escape at character %d", i)
			}
			i += 4
			// Java strings are UTF-16: a character past U+FFFF is two escapes.
			if utf16.IsSurrogate(r) && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s, i+3); ok {
					if c := utf16.DecodeRune(r, lo); c != unicode.ReplacementChar {
						r = c
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteRune(s[i])
		}
	}
	return b.String(), nil
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s []rune, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
	return rune(n), err == nil
}
