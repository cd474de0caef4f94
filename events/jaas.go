package events

import (
	"strings"
	"unicode/utf8"
)

// The parts of a sasl.jaas.config value that hold secrets. Kafka's clients read the value with
// JaasConfig: a java.io.StreamTokenizer with its default syntax, "//" and "/* */" comments, and
// '-', '_' and '$' word characters. So a word starts with a letter, '_', '$' or a character
// from U+00A0 up, and goes on with those, digits, '.' and '-'; a digit, '.' or '-' starts a
// number instead (a '-' before no digit or '.' is a character of its own), which is no value;
// '"' and '\'' quote a string, with Java's backslash escapes, ending at its quote or at the
// end of its line; '/' starts a comment ("//" and a lone '/' to the end of the line, "/*" to the
// next "*/"); everything up to ' ' is a blank; any other character (';', '=', '!', ',', '@',
// U+007F to U+009F, ...) is a token of its own. The grammar is one or more entries
// `<LoginModule> <flag> (<option>=<value>)* ;`: the login module a word or a string, the flag
// one of required, requisite, sufficient and optional in any case, an option's name any token
// (a word's or string's text, else none), its value a word or a string. jaasParse reads the value
// the same way, proven against Kafka's own reading (TestSecretsReadAsKafkaReadsThem), and keeps
// where each option's value is, so that a secret can be found, moved or hidden without the
// rest.

// jaasOption is one option of a JAAS entry: its name (unquoted), where its value is in the
// text, the bytes [start, end) (inside the quotes of a quoted value), and the value as Kafka
// reads it (a quoted string's escapes read).
type jaasOption struct {
	name, read string
	start, end int
	quoted     bool
}

// jaasText is what jaasParse found: the entries, in order, and the comments (the bytes
// [start, end) of each, the comment's marks included), which Kafka skips but which may hold
// anything, an old password among them.
type jaasText struct {
	entries  []jaasEntry
	comments [][2]int
}

// jaasEntry is one entry: its login module, its control flag and its options, in order.
type jaasEntry struct {
	module, flag string
	options      []jaasOption
}

// jaasHarmless are the options whose values are no secrets: Kerberos' switches and its keytab's
// path (the file is the secret, not its name), the service name, and an OAuth token
// endpoint's address, scope and audience. Every other option, a username, a principal or a
// client id among them, is taken for a secret: Connect hides a PASSWORD value whole, and a
// name that signs in is half of a credential.
var jaasHarmless = map[string]bool{
	"useKeyTab": true, "keyTab": true, "storeKey": true, "useTicketCache": true, "ticketCache": true, "doNotPrompt": true,
	"renewTGT": true, "refreshKrb5Config": true, "isInitiator": true, "tryFirstPass": true, "useFirstPass": true,
	"storePass": true, "clearPass": true, "debug": true, "serviceName": true, "tokenauth": true, "scope": true,
	"oauth.token.endpoint.uri": true, "oauth.scope": true, "oauth.audience": true,
	"oauth.ssl.truststore.location": true, "oauth.ssl.truststore.type": true,
}

// jaasSecretOption reports whether the value of option name may hold a secret.
func jaasSecretOption(name string) bool {
	return !jaasHarmless[name] || IsSecretKey(name)
}

// isJAASKey reports whether a config key is a Kafka client's sasl.jaas.config, with any
// prefix (producer.override., consumer., database.history.producer., ...).
func isJAASKey(key string) bool {
	return strings.HasSuffix(strings.ToLower(key), "sasl.jaas.config")
}

// jaasTok is one token of the tokenizer: a word, a quoted string, a number, an ordinary
// character or the end. text is the word, the string with its escapes read, or the character.
type jaasTok struct {
	kind       byte // 'w' word, 'q' quoted, 'n' number, 'c' ordinary character, 0 end
	text       string
	start, end int // the token's bytes; for a quoted string, inside the quotes
}

// jaasTokenizer splits s as JaasConfig's StreamTokenizer does, keeping the comments it skips.
type jaasTokenizer struct {
	s        string
	i        int
	comments [][2]int
}

// jaasClass is the StreamTokenizer class of r under JaasConfig's settings, as it starts a
// token: ' ' blank, 'w' word, 'n' number, 'q' quote, '/' comment, 'c' ordinary.
func jaasClass(r rune) byte {
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

// jaasWordPart reports whether r goes on a word.
func jaasWordPart(r rune) bool {
	c := jaasClass(r)
	return c == 'w' || c == 'n'
}

func (tz *jaasTokenizer) peek() (rune, int) {
	if tz.i >= len(tz.s) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(tz.s[tz.i:])
}

// toEOL moves to the next '\n' or '\r' (not past it), or the end.
func (tz *jaasTokenizer) toEOL() {
	if n := strings.IndexAny(tz.s[tz.i:], "\n\r"); n >= 0 {
		tz.i += n
	} else {
		tz.i = len(tz.s)
	}
}

func (tz *jaasTokenizer) next() jaasTok {
	for {
		r, n := tz.peek()
		if r < 0 {
			return jaasTok{start: tz.i, end: tz.i}
		}
		switch jaasClass(r) {
		case ' ':
			tz.i += n
		case 'w':
			start := tz.i
			var b strings.Builder
			for r >= 0 && jaasWordPart(r) {
				b.WriteRune(r)
				tz.i += n
				r, n = tz.peek()
			}
			return jaasTok{kind: 'w', text: b.String(), start: start, end: tz.i}
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
			return jaasTok{kind: 'c', text: string(r), start: start, end: tz.i}
		}
	}
}

// number reads a number as StreamTokenizer does: a '-', then digits with at most one '.'; a
// '-' before anything else is an ordinary character. A number has no text: it is no value.
func (tz *jaasTokenizer) number() jaasTok {
	start := tz.i
	if tz.s[tz.i] == '-' {
		tz.i++
		if r, _ := tz.peek(); r != '.' && (r < '0' || r > '9') {
			return jaasTok{kind: 'c', text: "-", start: start, end: tz.i}
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
	return jaasTok{kind: 'n', start: start, end: tz.i}
}

// quoted reads a string quoted with q, as StreamTokenizer does: to the closing q, or to the end
// of the line or of the text (neither is consumed), a backslash taking the next character
// (octal escapes and \a \b \f \n \r \t \v read as Java reads them).
func (tz *jaasTokenizer) quoted(q rune) jaasTok {
	tz.i++ // the opening quote, one byte
	start := tz.i
	var b strings.Builder
	for {
		r, n := tz.peek()
		switch {
		case r < 0 || r == '\n' || r == '\r':
			return jaasTok{kind: 'q', text: b.String(), start: start, end: tz.i}
		case r == q:
			end := tz.i
			tz.i += n
			return jaasTok{kind: 'q', text: b.String(), start: start, end: end}
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
			if e, ok := javaEscapes[c]; ok {
				c = e
			}
			b.WriteRune(c)
		default:
			b.WriteRune(r)
			tz.i += n
		}
	}
}

// javaUnescape reads s, the inside of a quoted JAAS string (or a part of it), as
// StreamTokenizer does.
func javaUnescape(s string) string {
	tz := &jaasTokenizer{s: `"` + s}
	return tz.quoted(-1).text
}

// javaEscapes are StreamTokenizer's character escapes in a quoted string.
var javaEscapes = map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// jaasParse reads s as Kafka's JaasConfig does and reports whether Kafka would take it: one or
// more entries, each a login module, a control flag and options, ended by ';'.
func jaasParse(s string) (jaasText, bool) {
	tz := &jaasTokenizer{s: s}
	var out jaasText
	for {
		mod := tz.next()
		if mod.kind == 0 {
			break
		}
		if (mod.kind != 'w' && mod.kind != 'q') || mod.text == "" {
			return out, false
		}
		flag := tz.next()
		if flag.kind != 'w' && flag.kind != 'q' {
			return out, false
		}
		switch strings.ToUpper(flag.text) {
		case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		default:
			return out, false
		}
		e := jaasEntry{module: mod.text, flag: strings.ToLower(strings.ToUpper(flag.text))}
		for {
			t := tz.next()
			if t.kind == 'c' && t.text == ";" {
				break
			}
			if t.kind == 0 {
				return out, false // not ended by ';'
			}
			if t.kind != 'w' && t.kind != 'q' {
				t.text = "" // Kafka takes a character or a number for an option without a name
			}
			if eq := tz.next(); eq.kind != 'c' || eq.text != "=" {
				return out, false
			}
			v := tz.next()
			if v.kind != 'w' && v.kind != 'q' {
				return out, false
			}
			e.options = append(e.options, jaasOption{name: t.text, read: v.text, start: v.start, end: v.end, quoted: v.kind == 'q'})
		}
		out.entries = append(out.entries, e)
	}
	out.comments = tz.comments
	return out, len(out.entries) > 0
}
