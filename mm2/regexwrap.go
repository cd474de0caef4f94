package mm2

import (
	"fmt"
	"regexp"
	"strings"
)

// A sink's `topics.regex` is a Java regex that Connect matches against a whole topic name
// (Pattern.matcher(topic).matches()). Across a policy that renames "orders" to "A.orders", the
// regex that subscribes to the renamed topics is the quoted prefix followed by the old regex
// in a non-capturing group: "A\.(?:orders-.*)". That is exact, in Java's dialect, for every
// construct that does not look at what comes before the start of the name or changes how the
// rest of the pattern is read. The scan below finds those, as Java's Pattern parses them, and
// refuses the pattern when one is there; nothing is compiled here, and a pattern the scan lets
// through means in the group what it meant alone:
//
//   - "^" outside a character class: an anchor at the start of the input. A leading one is a
//     no-op under matches() and is dropped; anywhere else it would now fail after the prefix.
//   - \A and \G: the start of the input, and the end of the previous match.
//   - lookbehind, (?<= and (?<!: it would see the prefix.
//   - \b and \B when the prefix ends in a word character: the start of the name is a word
//     boundary (or not) against the prefix's last character instead of the input's start.
//     A prefix ending in a non-word character ("." and "-" do) gives the same answer.
//   - the COMMENTS flag (?x): a "#" comment then runs to the end of the line, over the group's
//     closing parenthesis.
//   - \Q without \E: the quote runs to the end of the pattern, over the closing parenthesis.
//   - a trailing backslash or an unclosed class: A's Connect would not have compiled it.
//
// Group numbers stay as they were (the group is non-capturing), so back references keep their
// meaning, and inline flags set inside the group end with it, as they would at the end of the
// pattern.

// errWrap says why a regex cannot be wrapped exactly.
type errWrap struct {
	pattern, why string
}

func (e *errWrap) Error() string {
	return fmt.Sprintf("Java regex %q cannot be moved behind a prefix with certainty: %s", e.pattern, e.why)
}

// wrapJavaRegex returns the Java regex that matches, whole, prefix followed by a name re
// matches whole, or an error saying which construct of re prevents it (see above).
func wrapJavaRegex(prefix, re string) (string, error) {
	inner := re
	if strings.HasPrefix(inner, "^") && (len(inner) == 1 || !strings.ContainsRune("*+?{", rune(inner[1]))) {
		inner = inner[1:] // a leading anchor is a no-op under matches()
	}
	lastWord := prefix != "" && isWordByte(prefix[len(prefix)-1])
	if why := scanJavaRegex(inner, lastWord); why != "" {
		return "", &errWrap{pattern: re, why: why}
	}
	// QuoteMeta escapes only punctuation, which Java reads as the literal character too.
	return regexp.QuoteMeta(prefix) + "(?:" + inner + ")", nil
}

// isWordByte reports whether b is a word character of \w in Java's default (ASCII) mode.
func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// scanJavaRegex walks re as java.util.regex.Pattern parses it (escapes, \Q...\E quotes,
// nested classes, group openings) and returns why it cannot be put behind a prefix, or "".
// lastWord says whether the prefix ends in a word character.
func scanJavaRegex(re string, lastWord bool) string {
	depth := 0 // character class nesting: Java reads "[" inside a class as a nested class
	for i := 0; i < len(re); {
		c := re[i]
		if c == '\\' {
			if i+1 >= len(re) {
				return "it ends with a backslash"
			}
			n := re[i+1]
			switch {
			case n == 'Q':
				end := strings.Index(re[i+2:], `\E`)
				if end < 0 {
					return `\Q quotes to the end of the pattern (no \E)`
				}
				i += 2 + end + 2
				continue
			case depth == 0 && (n == 'A' || n == 'G'):
				return fmt.Sprintf(`\%c anchors at the start of the input`, n)
			case depth == 0 && (n == 'b' || n == 'B') && lastWord:
				return fmt.Sprintf(`\%c at the start of the name would see the prefix's last character, a word character`, n)
			case n == 'c': // \cX: a control character, X any character
				i += 3
				continue
			case strings.IndexByte("pPxN", n) >= 0 && i+2 < len(re) && re[i+2] == '{':
				end := strings.IndexByte(re[i+2:], '}')
				if end < 0 {
					return fmt.Sprintf(`\%c{ is not closed`, n)
				}
				i += 2 + end + 1
				continue
			case n == 'k' && i+2 < len(re) && re[i+2] == '<':
				end := strings.IndexByte(re[i+2:], '>')
				if end < 0 {
					return `\k< is not closed`
				}
				i += 2 + end + 1
				continue
			}
			i += 2
			continue
		}
		if depth > 0 {
			switch c {
			case '[':
				depth++
				i = afterClassOpen(re, i)
				continue
			case ']':
				depth--
			}
			i++
			continue
		}
		switch c {
		case '[':
			depth = 1
			i = afterClassOpen(re, i)
			continue
		case '^':
			return "^ anchors at the start of the input (only a leading one is dropped)"
		case '(':
			if why := groupOpening(re[i:]); why != "" {
				return why
			}
		}
		i++
	}
	if depth > 0 {
		return "a character class is not closed"
	}
	return ""
}

// afterClassOpen is the index after the "[" at i, its "^" and a "]" right after them, which
// Java reads as a literal "]".
func afterClassOpen(re string, i int) int {
	i++
	if i < len(re) && re[i] == '^' {
		i++
	}
	if i < len(re) && re[i] == ']' {
		i++
	}
	return i
}

// groupOpening judges a group that begins s: lookbehind and the COMMENTS flag cannot be put
// behind a prefix (see above); every other opening can.
func groupOpening(s string) string {
	switch {
	case strings.HasPrefix(s, "(?<=") || strings.HasPrefix(s, "(?<!"):
		return "a lookbehind would see the prefix"
	case strings.HasPrefix(s, "(?"):
		// Inline flags: (?idmsux-idmsux) or (?idmsux-idmsux:X).
		flags := s[2:]
		if end := strings.IndexAny(flags, ":)"); end >= 0 {
			flags = flags[:end]
		}
		if strings.Trim(flags, "idmsuxU-") == "" && strings.ContainsRune(flags, 'x') {
			return "the COMMENTS flag (?x) would read the group's closing parenthesis as part of a comment or ignore it"
		}
	}
	return ""
}
