package events

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// How Config.Scrub finds a secret in a message. A message quotes a value as it was written,
// or trimmed, or inside a JSON document (Connect's REST answers, a connector's error that
// quotes its config), escaped once or, a JSON document quoted in a JSON string, twice, or
// Go-quoted (%q). Each secret, and each secret trimmed, is looked for in the message and in the
// message with its backslash escapes read once and twice (escapeView: JSON's \" \\ \/ \b \f \n
// \r \t \uXXXX with surrogate pairs, Go's \a \v \xHH \UXXXXXXXX and \'); what is found is cut
// from the message as it was written, escapes included.
//
// A secret of at least minScrubLen characters is hidden wherever it is. A shorter one cannot
// be: a password "1" would take every digit 1 of the message with it. It is hidden where it
// stands as a value token: not inside a longer word, number, name or host (letters, digits,
// '-', '_' and '.' on either side make it part of one; a '.' that ends a sentence does not),
// and not where it is the value of a key of the config that is no secret and has that very
// value ("tasks.max=1", "\"tasks.max\":\"1\"" with a password "1": showing that key's value
// shows nothing more than the config does).

// escapeView is a message, or a message with its backslash escapes read, and where each of its
// bytes comes from in the message: the bytes [from[i], to[i]).
type escapeView struct {
	text     string
	from, to []int
}

// rawView is the message as it is.
func rawView(text string) escapeView {
	v := escapeView{text: text, from: make([]int, len(text)), to: make([]int, len(text))}
	for i := range len(text) {
		v.from[i], v.to[i] = i, i+1
	}
	return v
}

// unescape returns v with its backslash escapes read, and whether it read any.
func (v escapeView) unescape() (escapeView, bool) {
	t := v.text
	if !strings.Contains(t, `\`) {
		return v, false
	}
	var b strings.Builder
	out := escapeView{from: make([]int, 0, len(t)), to: make([]int, 0, len(t))}
	emit := func(s string, from, to int) {
		b.WriteString(s)
		for range len(s) {
			out.from, out.to = append(out.from, from), append(out.to, to)
		}
	}
	read := false
	for i := 0; i < len(t); {
		if t[i] == '\\' {
			if s, n := readEscape(t[i:]); n > 0 {
				emit(s, v.from[i], v.to[i+n-1])
				read = true
				i += n
				continue
			}
		}
		emit(t[i:i+1], v.from[i], v.to[i])
		i++
	}
	out.text = b.String()
	return out, read
}

// readEscape reads the escape at the start of s (a backslash): what it stands for and its
// length; 0 when it is none of JSON's or Go's.
func readEscape(s string) (string, int) {
	if len(s) < 2 {
		return "", 0
	}
	switch c := s[1]; c {
	case '"', '\\', '/', '\'':
		return string(c), 2
	case 'b':
		return "\b", 2
	case 'f':
		return "\f", 2
	case 'n':
		return "\n", 2
	case 'r':
		return "\r", 2
	case 't':
		return "\t", 2
	case 'a':
		return "\a", 2
	case 'v':
		return "\v", 2
	case 'x':
		if n, ok := hexAt(s, 2, 2); ok {
			return string([]byte{byte(n)}), 4
		}
	case 'u':
		r, ok := hexAt(s, 2, 4)
		if !ok {
			return "", 0
		}
		if utf16.IsSurrogate(rune(r)) {
			if r2, ok := hexAt(s, 8, 4); ok && strings.HasPrefix(s[6:], `\u`) {
				if d := utf16.DecodeRune(rune(r), rune(r2)); d != utf8.RuneError {
					return string(d), 12
				}
			}
			return string(utf8.RuneError), 6
		}
		return string(rune(r)), 6
	case 'U':
		if r, ok := hexAt(s, 2, 8); ok && utf8.ValidRune(rune(r)) {
			return string(rune(r)), 10
		}
	}
	return "", 0
}

// hexAt reads the n hexadecimal digits of s at i.
func hexAt(s string, i, n int) (uint64, bool) {
	if len(s) < i+n {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+n], 16, 32)
	return v, err == nil
}

// scrubText cuts every secret of hide, and each trimmed, from text (see the top of this file);
// owners are the config's keys that are no secret, by their value.
func scrubText(text string, hide []string, owners map[string][]string) string {
	views := []escapeView{rawView(text)}
	for len(views) < 3 {
		next, ok := views[len(views)-1].unescape()
		if !ok {
			break
		}
		views = append(views, next)
	}
	var cuts [][2]int
	seen := map[string]bool{}
	for _, h := range hide {
		for _, s := range []string{h, trimBlanks(h)} {
			if s == "" || seen[s] {
				continue
			}
			seen[s] = true
			short := utf8.RuneCountInString(s) < minScrubLen
			for _, v := range views {
				for i := 0; i < len(v.text); {
					n := strings.Index(v.text[i:], s)
					if n < 0 {
						break
					}
					at, end := i+n, i+n+len(s)
					if !short || v.valueToken(at, end, owners[s]) {
						cuts = append(cuts, [2]int{v.from[at], v.to[end-1]})
					}
					i = at + 1
				}
			}
		}
	}
	if len(cuts) == 0 {
		return text
	}
	slices.SortFunc(cuts, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	at := 0
	for _, c := range cuts {
		if c[1] <= at {
			continue
		}
		if c[0] >= at {
			b.WriteString(text[at:c[0]])
			b.WriteString(HiddenValue)
		}
		at = c[1]
	}
	b.WriteString(text[at:])
	return b.String()
}

// trimBlanks trims s of the blanks around it: what Java's String.trim takes (every character
// up to ' ') and Unicode's white space.
func trimBlanks(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' || unicode.IsSpace(r) })
}

// tokenRune reports whether r belongs to a word, a number, a name or a host.
func tokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.'
}

// valueToken reports whether the bytes [at, end) of v stand as a value token: no token
// character on either side (a '.' after them that ends a sentence aside), and not the value
// of one of owners, keys of the config that are no secret, written key=value or "key": "value".
func (v escapeView) valueToken(at, end int, owners []string) bool {
	t := v.text
	if r, _ := utf8.DecodeLastRuneInString(t[:at]); at > 0 && tokenRune(r) {
		return false
	}
	if r, n := utf8.DecodeRuneInString(t[end:]); end < len(t) && tokenRune(r) {
		next, _ := utf8.DecodeRuneInString(t[end+n:])
		if r != '.' || (end+n < len(t) && !unicode.IsSpace(next)) {
			return false
		}
	}
	return !ownedBy(t[:at], owners)
}

// ownedBy reports whether before, the text before a value, ends with one of keys and '=' or
// ':', quotes (escaped or not) and blanks around them.
func ownedBy(before string, keys []string) bool {
	if len(keys) == 0 {
		return false
	}
	k := skipQuote(before)
	k = strings.TrimRightFunc(k, unicode.IsSpace)
	if !strings.HasSuffix(k, "=") && !strings.HasSuffix(k, ":") {
		return false
	}
	k = skipQuote(strings.TrimRightFunc(k[:len(k)-1], unicode.IsSpace))
	for _, key := range keys {
		if rest, ok := strings.CutSuffix(k, key); ok {
			if r, _ := utf8.DecodeLastRuneInString(rest); rest == "" || !tokenRune(r) {
				return true
			}
		}
	}
	return false
}

// skipQuote returns s without one quote at its end and the backslashes that escape it.
func skipQuote(s string) string {
	if t, ok := strings.CutSuffix(s, `"`); ok {
		return strings.TrimRight(t, `\`)
	}
	if t, ok := strings.CutSuffix(s, `'`); ok {
		return strings.TrimRight(t, `\`)
	}
	return s
}
