// Package jaas reads a sasl.jaas.config value as Kafka's clients read it, for the two places
// that need Kafka's reading exactly: the client properties reader, which takes a username and
// password from it (internal/clientconfig), and the rules that find the secrets in a connector
// config (events), which must hide every option's value however the text is spelled.
//
// Kafka reads the value with JaasConfig: a java.io.StreamTokenizer with its default syntax,
// "//" and "/* */" comments, and '-', '_' and '$' word characters. So a word starts with a
// letter, '_', '$' or any character from U+00A0 up (StreamTokenizer's table covers U+0000 to
// U+00FF, with U+00A0 to U+00FF word characters, and it takes every character above it for a
// word character: Chinese, a snowman, an emoji's surrogates), and goes on with those, digits,
// '.' and '-'; a digit, '.' or '-' starts a number instead (a '-' before no digit or '.' is a
// character of its own), which is no value; '"' and '\” quote a string, with Java's backslash
// escapes, ending at its quote or at the end of its line or of the text (no error: the string
// is what was read); '/' starts a comment ("//" and a lone '/' to the end of the line, "/*" to
// the next "*/" or the end of the text); everything up to ' ' is a blank; any other character
// (';', '=', '!', ',', '@', U+007F to U+009F, ...) is a token of its own.
//
// The grammar is one or more entries `<LoginModule> <flag> (<option>=<value>)* ;`: the login
// module a word or a quoted string, the flag one of required, requisite, sufficient and
// optional in any case (a word or a quoted string), an option's name any token (a word's or
// string's text; a number or a character is an option without a name), its value a word or a
// quoted string. Parse keeps where each option's value is, so that a secret can be found,
// moved or hidden without the rest, and where the comments are, which Kafka skips but which
// may hold anything, an old password among them. Both are proven against Kafka's own reading
// by the golden tables of its two users (make goldens: props and secrets).
//
// The text holds passwords: no error of this package carries a part of it (Error says where
// and what was wanted, and its Option is for a caller that can tell a harmless name).
package jaas

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Config is what Parse read: the entries, in order, and the comments (the bytes [start, end)
// of each, the comment's marks included).
type Config struct {
	Entries  []Entry
	Comments [][2]int
}

// Entry is one login module entry: its login module, its control flag (in lower case) and its
// options, in order.
type Entry struct {
	Module string
	// ModuleAt is the byte where the login module's token starts.
	ModuleAt int
	Flag     string
	Options  []Option
}

// Option is one option of an entry.
type Option struct {
	// Name is the option's name: a word's or a quoted string's text, "" when Kafka took a
	// number or a character for it. NameAt is the byte where its token starts.
	Name   string
	NameAt int
	// Value is the value as Kafka reads it (a quoted string's escapes read); the bytes
	// [Start, End) are where it is in the text (inside the quotes of a quoted value).
	Value      string
	Start, End int
	Quoted     bool
}

// Want is what JaasConfig wanted where it refused a text.
type Want int

const (
	// WantModule is a login module: a word or a quoted string (also: a text with no entry).
	WantModule Want = iota + 1
	// WantFlag is a control flag: required, requisite, sufficient or optional.
	WantFlag
	// WantSemicolon is the ';' that ends an entry: the text ended among its options.
	WantSemicolon
	// WantEquals is the '=' after an option's name.
	WantEquals
	// WantValue is an option's value: a word or a quoted string, not a number or a character.
	WantValue
)

// Error is why Kafka's JaasConfig refuses a text. It quotes nothing of the text.
type Error struct {
	Want Want
	// At is the byte where the token that is not what was wanted starts; at the end of the
	// text it is the text's length, and End is set.
	At  int
	End bool
	// Char is At counted in characters from 1 (0 at the end).
	Char int
	// Option is the option whose '=' or value is missing (WantEquals, WantValue): its name
	// may be a part of a password that was not quoted, so Error() does not say it.
	Option Option
	// Unclosed is the byte of the opening quote of the entry's last quoted value that the
	// end of its line or of the text ended instead of its closing quote, or -1: often why the
	// ';' or what follows is missing.
	Unclosed int
}

func (e *Error) Error() string {
	what := map[Want]string{WantModule: "a login module", WantFlag: "a control flag (required, requisite, sufficient or optional)",
		WantSemicolon: "';' at the end of the entry", WantEquals: "'=' after an option's name", WantValue: "an option's value (a word or a quoted string)"}[e.Want]
	if e.End {
		return "the text ends where " + what + " is wanted"
	}
	return fmt.Sprintf("character %d: not %s", e.Char, what)
}

// Parse reads s as Kafka's JaasConfig does; an error (*Error) is a text Kafka refuses.
func Parse(s string) (Config, error) {
	tz := &tokenizer{s: s}
	var out Config
	unclosed := -1
	fail := func(want Want, t token, o Option) (Config, error) {
		e := &Error{Want: want, At: t.start, End: t.kind == kindEnd, Option: o, Unclosed: unclosed}
		if !e.End {
			e.Char = utf8.RuneCountInString(s[:t.start]) + 1
		}
		return out, e
	}
	for {
		mod := tz.next()
		if mod.kind == kindEnd {
			if len(out.Entries) == 0 {
				return fail(WantModule, mod, Option{})
			}
			break
		}
		if (mod.kind != kindWord && mod.kind != kindQuoted) || mod.text == "" {
			return fail(WantModule, mod, Option{})
		}
		flag := tz.next()
		if flag.kind != kindWord && flag.kind != kindQuoted {
			return fail(WantFlag, flag, Option{})
		}
		switch strings.ToUpper(flag.text) {
		case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		default:
			return fail(WantFlag, flag, Option{})
		}
		e := Entry{Module: mod.text, ModuleAt: mod.start, Flag: strings.ToLower(strings.ToUpper(flag.text))}
		for {
			t := tz.next()
			if t.kind == kindChar && t.text == ";" {
				break
			}
			if t.kind == kindEnd {
				return fail(WantSemicolon, t, Option{})
			}
			o := Option{NameAt: t.start}
			if t.kind == kindWord || t.kind == kindQuoted {
				o.Name = t.text
			}
			if eq := tz.next(); eq.kind != kindChar || eq.text != "=" {
				return fail(WantEquals, eq, o)
			}
			v := tz.next()
			if v.kind != kindWord && v.kind != kindQuoted {
				return fail(WantValue, v, o)
			}
			o.Value, o.Start, o.End, o.Quoted = v.text, v.start, v.end, v.kind == kindQuoted
			if v.unclosed {
				unclosed = v.start - 1
			}
			e.Options = append(e.Options, o)
		}
		out.Entries = append(out.Entries, e)
	}
	out.Comments = tz.comments
	return out, nil
}

// Unescape reads s, the inside of a quoted value (or a part of it), as StreamTokenizer does.
func Unescape(s string) string {
	tz := &tokenizer{s: `"` + s}
	return tz.quoted(-1).text
}

type kind byte

const (
	kindEnd kind = iota
	kindWord
	kindQuoted
	kindNumber
	kindChar
)

// token is one token: its kind, its text (the word, the string with its escapes read, or the
// character; none for a number) and its bytes (for a quoted string, inside the quotes).
type token struct {
	kind       kind
	text       string
	start, end int
	// unclosed is a quoted string that the end of its line or of the text ended.
	unclosed bool
}

// tokenizer splits s as JaasConfig's StreamTokenizer does, keeping the comments it skips.
type tokenizer struct {
	s        string
	i        int
	comments [][2]int
}

// class is the StreamTokenizer class of r under JaasConfig's settings, as it starts a token:
// ' ' blank, 'w' word, 'n' number, 'q' quote, '/' comment, 'c' ordinary.
func class(r rune) byte {
	switch {
	case r <= ' ':
		return ' '
	case r == '"' || r == '\'':
		return 'q'
	case r == '/':
		return '/'
	case (r >= '0' && r <= '9') || r == '.' || r == '-':
		return 'n'
	case (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == '_' || r == '$' || r >= 0xa0:
		return 'w'
	}
	return 'c'
}

// wordPart reports whether r goes on a word.
func wordPart(r rune) bool {
	c := class(r)
	return c == 'w' || c == 'n'
}

func (tz *tokenizer) peek() (rune, int) {
	if tz.i >= len(tz.s) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(tz.s[tz.i:])
}

// toEOL moves to the next '\n' or '\r' (not past it), or the end.
func (tz *tokenizer) toEOL() {
	if n := strings.IndexAny(tz.s[tz.i:], "\n\r"); n >= 0 {
		tz.i += n
	} else {
		tz.i = len(tz.s)
	}
}

func (tz *tokenizer) next() token {
	for {
		r, n := tz.peek()
		if r < 0 {
			return token{start: tz.i, end: tz.i}
		}
		switch class(r) {
		case ' ':
			tz.i += n
		case 'w':
			start := tz.i
			var b strings.Builder // a byte that is no UTF-8 reads as U+FFFD, as in Java
			for r >= 0 && wordPart(r) {
				b.WriteRune(r)
				tz.i += n
				r, n = tz.peek()
			}
			return token{kind: kindWord, text: b.String(), start: start, end: tz.i}
		case 'n':
			return tz.number()
		case 'q':
			return tz.quoted(r)
		case '/':
			start := tz.i
			tz.i++
			if strings.HasPrefix(tz.s[tz.i:], "*") {
				// "/*" to the next "*/"; an unterminated one runs to the end, which ends
				// the text.
				if end := strings.Index(tz.s[tz.i+1:], "*/"); end >= 0 {
					tz.i += 1 + end + 2
				} else {
					tz.i = len(tz.s)
				}
			} else {
				// "//", or a lone '/' (JaasConfig's comment character): to the end of the line.
				tz.toEOL()
			}
			tz.comments = append(tz.comments, [2]int{start, tz.i})
		default:
			start := tz.i
			tz.i += n
			return token{kind: kindChar, text: string(r), start: start, end: tz.i}
		}
	}
}

// number reads a number as StreamTokenizer does: a '-', then digits with at most one '.'; a
// '-' before anything else is an ordinary character. A number has no text: it is no value.
func (tz *tokenizer) number() token {
	start := tz.i
	if tz.s[tz.i] == '-' {
		tz.i++
		if r, _ := tz.peek(); r != '.' && (r < '0' || r > '9') {
			return token{kind: kindChar, text: "-", start: start, end: tz.i}
		}
	}
	dot := false
	for tz.i < len(tz.s) {
		c := tz.s[tz.i]
		if c == '.' && !dot {
			dot = true
		} else if c < '0' || c > '9' {
			break
		}
		tz.i++
	}
	return token{kind: kindNumber, start: start, end: tz.i}
}

// escapes are StreamTokenizer's character escapes in a quoted string.
var escapes = map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// quoted reads a string quoted with q, as StreamTokenizer does: to the closing q, or to the end
// of the line or of the text (neither is consumed), a backslash taking the next character
// (octal escapes and \a \b \f \n \r \t \v read as Java reads them).
func (tz *tokenizer) quoted(q rune) token {
	tz.i++ // the opening quote, one byte
	start := tz.i
	var b strings.Builder
	for {
		r, n := tz.peek()
		switch {
		case r < 0 || r == '\n' || r == '\r':
			return token{kind: kindQuoted, text: b.String(), start: start, end: tz.i, unclosed: true}
		case r == q:
			end := tz.i
			tz.i += n
			return token{kind: kindQuoted, text: b.String(), start: start, end: end}
		case r == '\\':
			tz.i += n
			c, m := tz.peek()
			if c < 0 {
				continue
			}
			tz.i += m
			if c >= '0' && c <= '7' {
				v, digits := c-'0', 1
				if c <= '3' {
					digits = 2
				}
				for ; digits > 0; digits-- {
					d, _ := tz.peek()
					if d < '0' || d > '7' {
						break
					}
					v = v*8 + d - '0'
					tz.i++
				}
				b.WriteRune(v)
				continue
			}
			if e, ok := escapes[c]; ok {
				c = e
			}
			b.WriteRune(c)
		default:
			b.WriteRune(r)
			tz.i += n
		}
	}
}
