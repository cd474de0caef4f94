package clientconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// JAAS login modules whose options carry a username and password, as sasl.jaas.config names
// them. Kafka's SASL clients take the credentials from whichever of the two is configured, so
// either serves PLAIN and SCRAM.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// parseJAAS reads the value of sasl.jaas.config as Kafka's JaasConfig does (a StreamTokenizer
// with `//` and `/* */` comments): exactly one entry `<LoginModule> <flag> key=value ... ;`
// whose values are words or strings quoted with `"` or `'` (with Java's backslash escapes).
// Only the Plain and Scram login modules are accepted, with the options username and password
// (and ScramLoginModule's tokenauth=false).
//
// No error carries a part of the text, which holds a password, and a malformed one (a value
// with a blank not quoted, a forgotten option name) can put any part of it where a login
// module, a control flag or an option name is expected. Errors name the kind of problem and
// its position (the character, counted from 1 in the value), and name a word only when it is
// one of the login module classes or option names of jaasKnownWords, the repository's own
// text.
func parseJAAS(s string) (user, password string, err error) {
	tz := &jaasTokenizer{s: []rune(s)}
	mod, err := tz.next()
	if err != nil {
		return "", "", err
	}
	switch {
	case mod.kind == tokEOF:
		return "", "", errors.New("empty: give a login module, e.g. " + scramLoginModule + " required username=\"alice\" password=\"...\";")
	case mod.kind == tokWord && (mod.text == plainLoginModule || mod.text == scramLoginModule):
	case mod.kind == tokWord && slices.Contains(jaasKnownWords, mod.text):
		return "", "", fmt.Errorf("login module %q not supported: use %s or %s", mod.text, plainLoginModule, scramLoginModule)
	default:
		return "", "", fmt.Errorf("character %d: not a login module offsetagent supports: begin with %s or %s", mod.pos, plainLoginModule, scramLoginModule)
	}
	module := mod.text
	flag, err := tz.next()
	if err != nil {
		return "", "", err
	}
	switch {
	case flag.kind == tokEOF:
		return "", "", errors.New("no control flag after the login module: want required")
	case flag.kind == tokWord && slices.Contains([]string{"required", "requisite", "sufficient", "optional"}, strings.ToLower(flag.text)):
	default:
		return "", "", fmt.Errorf("character %d: not a control flag: want required", flag.pos)
	}
	opts := map[string]string{}
	for {
		t, err := tz.next()
		if err != nil {
			return "", "", err
		}
		if t.kind == tokEOF {
			return "", "", errors.New("entry not terminated by a semicolon")
		}
		if t.kind == tokChar && t.text == ";" {
			break
		}
		if t.kind != tokWord {
			return "", "", fmt.Errorf("character %d: expected an option name (key=value)", t.pos)
		}
		key := t.text
		if eq, err := tz.next(); err != nil || eq.kind != tokChar || eq.text != "=" {
			return "", "", fmt.Errorf("%s: value not specified (is a value with blanks or punctuation not quoted?)", jaasOption(t))
		}
		v, err := tz.next()
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", jaasOption(t), err)
		}
		if v.kind != tokWord && v.kind != tokQuoted {
			return "", "", fmt.Errorf("%s: value not specified (quote values: key=\"...\")", jaasOption(t))
		}
		opts[key] = v.text
		if key != "username" && key != "password" && !(key == "tokenauth" && module == scramLoginModule) {
			return "", "", fmt.Errorf("%s not supported: give username and password only", jaasOption(t))
		}
	}
	if t, err := tz.next(); err != nil || t.kind != tokEOF {
		return "", "", errors.New("more than one login module: give exactly one")
	}
	if v, ok := opts["tokenauth"]; ok && !strings.EqualFold(v, "false") {
		return "", "", errors.New("option tokenauth: delegation tokens are not supported: remove it")
	}
	user, ok := opts["username"]
	if !ok || user == "" {
		return "", "", errors.New("option username: missing")
	}
	password, ok = opts["password"]
	if !ok {
		return "", "", errors.New("option password: missing")
	}
	return user, password, nil
}

// jaasKnownWords are the login module classes and option names of Kafka's and Java's login
// modules that errors name: any other word of a JAAS text may be a part of a password.
var jaasKnownWords = []string{
	"com.sun.security.auth.module.Krb5LoginModule", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
	"username", "password", "tokenauth", "serviceName", "useKeyTab", "keyTab", "principal", "storeKey", "useTicketCache",
	"debug", "clientId", "clientSecret", "scope", "unsecuredLoginStringClaim_sub",
}

// jaasOption names the option whose name is t: by name when it is a known one, else by position.
func jaasOption(t jaasToken) string {
	if slices.Contains(jaasKnownWords, t.text) {
		return fmt.Sprintf("option %q", t.text)
	}
	return fmt.Sprintf("the option at character %d", t.pos)
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokChar
)

type jaasToken struct {
	kind tokKind
	text string
	// pos is the token's first character, counted from 1.
	pos int
}

// jaasTokenizer splits a JAAS entry as java.io.StreamTokenizer does with JaasConfig's
// settings: words of letters, digits, `.`, `-`, `_` and `$` that start with a letter, `_` or
// `$` (Java would read a leading digit, `.` or `-` as a number, which JaasConfig refuses as a
// value: quote it), quoted strings, comments (`//`, `/* */` and, StreamTokenizer's default,
// a lone `/` to the end of the line), and any other character on its own.
type jaasTokenizer struct {
	s []rune
	i int
}

func isJAASWordStart(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == '_' || r == '$' || (r >= 0xA0 && r <= 0xFF)
}

func isJAASWordPart(r rune) bool {
	return isJAASWordStart(r) || (r >= '0' && r <= '9') || r == '.' || r == '-'
}

func (tz *jaasTokenizer) next() (jaasToken, error) {
	for tz.i < len(tz.s) {
		r := tz.s[tz.i]
		switch {
		case r <= ' ':
			tz.i++
		case r == '/' && tz.i+1 < len(tz.s) && tz.s[tz.i+1] == '/':
			for tz.i < len(tz.s) && tz.s[tz.i] != '\n' && tz.s[tz.i] != '\r' {
				tz.i++
			}
		case r == '/' && tz.i+1 < len(tz.s) && tz.s[tz.i+1] == '*':
			end := strings.Index(string(tz.s[tz.i+2:]), "*/")
			if end < 0 {
				return jaasToken{}, fmt.Errorf("character %d: unterminated /* comment", tz.i+1)
			}
			tz.i += 2 + len([]rune(string(tz.s[tz.i+2:])[:end])) + 2
		case r == '/':
			// A lone slash is StreamTokenizer's default comment character: a comment to the
			// end of the line.
			for tz.i < len(tz.s) && tz.s[tz.i] != '\n' && tz.s[tz.i] != '\r' {
				tz.i++
			}
		case r == '"' || r == '\'':
			return tz.quoted(r)
		case isJAASWordStart(r):
			start := tz.i
			for tz.i < len(tz.s) && isJAASWordPart(tz.s[tz.i]) {
				tz.i++
			}
			return jaasToken{kind: tokWord, text: string(tz.s[start:tz.i]), pos: start + 1}, nil
		case (r >= '0' && r <= '9') || r == '.' || r == '-':
			// A number to StreamTokenizer, which JaasConfig does not take as a value.
			start := tz.i
			for tz.i < len(tz.s) && isJAASWordPart(tz.s[tz.i]) {
				tz.i++
			}
			return jaasToken{kind: tokChar, text: "number", pos: start + 1}, nil
		default:
			tz.i++
			return jaasToken{kind: tokChar, text: string(r), pos: tz.i}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a string quoted with q, with StreamTokenizer's escapes: \a \b \f \n \r \t \v,
// octal \0 to \377, and a backslash before any other character for that character. A string
// may not span lines.
func (tz *jaasTokenizer) quoted(q rune) (jaasToken, error) {
	pos := tz.i + 1
	tz.i++
	var b strings.Builder
	for tz.i < len(tz.s) {
		r := tz.s[tz.i]
		switch {
		case r == q:
			tz.i++
			return jaasToken{kind: tokQuoted, text: b.String(), pos: pos}, nil
		case r == '\n' || r == '\r':
			return jaasToken{}, fmt.Errorf("character %d: unterminated quoted value (a quoted value ends on its line)", pos)
		case r == '\\' && tz.i+1 < len(tz.s):
			tz.i++
			c := tz.s[tz.i]
			switch c {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			default:
				if c >= '0' && c <= '7' {
					n := c - '0'
					maxDigits := 2
					if c > '3' {
						maxDigits = 1
					}
					for d := 0; d < maxDigits && tz.i+1 < len(tz.s) && tz.s[tz.i+1] >= '0' && tz.s[tz.i+1] <= '7'; d++ {
						tz.i++
						n = n*8 + (tz.s[tz.i] - '0')
					}
					b.WriteRune(n)
				} else {
					b.WriteRune(c)
				}
			}
			tz.i++
		default:
			b.WriteRune(r)
			tz.i++
		}
	}
	return jaasToken{}, fmt.Errorf("character %d: unterminated quoted value", pos)
}
