package events

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// HiddenValue replaces secret config values in Redacted.
const HiddenValue = "[hidden]"

// Redacted returns a copy for result events, plans and logs: the value of every key the name
// rule (IsSecretKey) calls secret is HiddenValue, and passwords inside the other values are
// masked (MaskCredentials). Null entries stay null: there is nothing to hide.
func (c Config) Redacted() Config {
	return c.RedactedBy(nil)
}

// RedactedBy is Redacted with the connector family's own secret keys too: secret, when not
// nil, reports the keys whose ConfigDef type is PASSWORD (Connect's rule, which the agent
// cannot ask a plugin for). The name rule still applies on top, since a config also carries
// keys outside the family's ConfigDef (converters, transforms, client overrides).
func (c Config) RedactedBy(secret func(key string) bool) Config {
	if c == nil {
		return nil
	}
	out := make(Config, len(c))
	for i, e := range c {
		if !e.Null {
			e.Value = redactValue(e.Key, e.Value, secret)
		}
		out[i] = e
	}
	return out
}

func redactValue(key, value string, secret func(string) bool) string {
	if IsSecretKey(key) || (secret != nil && secret(key)) {
		return HiddenValue
	}
	return MaskCredentials(value)
}

// minScrubLen is the shortest secret, in characters, that Scrub hides wherever it stands in a
// message. A shorter one (a password "1") would hide unrelated text ("partition 10",
// "tasks.max=1"): it is hidden only where it stands as a value token (scrub.go).
const minScrubLen = 4

// Scrub replaces every secret of the config that text quotes by HiddenValue: the value of each
// key RedactedBy hides, and each part of a value that holds a secret (SecretSpans: a password
// inside a URL, the text around a placeholder, the options of a JAAS config that are secret by
// name, such as password and clientSecret), each also trimmed of the blanks around it and as
// the program reading it sees it (a JAAS string's escapes read). It is for messages built from
// the config by someone else: a connector's or Connect's own validation error, which may quote
// the value it refused, and may quote it JSON-escaped or Go-quoted; see scrub.go for how each
// spelling is found.
func (c Config) Scrub(text string, secret func(key string) bool) string {
	var hide []string
	for _, e := range c {
		if e.Null || e.Value == "" {
			continue
		}
		if IsSecretKey(e.Key) || (secret != nil && secret(e.Key)) {
			hide = append(hide, e.Value)
		}
		for _, p := range secretParts(e.Key, e.Value, secret) {
			// Of a JAAS config's options, those secret by name: a username or a principal
			// is what messages about access name (the brokers' own, and ours).
			if p.Name == "" || IsSecretKey(p.Name) {
				hide = append(hide, e.Value[p.Start:p.End], p.read)
			}
		}
	}
	if len(hide) == 0 {
		return text
	}
	return scrubText(text, hide, c.tokenOwners(secret))
}

// tokenOwners returns the values of the keys that are no secret, by value: a short secret
// that is also such a key's value is left where it stands as that key's value ("tasks.max=1"
// with a password "1").
func (c Config) tokenOwners(secret func(key string) bool) map[string][]string {
	out := map[string][]string{}
	for _, e := range c {
		if e.Null || IsSecretKey(e.Key) || (secret != nil && secret(e.Key)) {
			continue
		}
		v := trimBlanks(e.Value)
		out[v] = append(out[v], e.Key)
	}
	return out
}

// secretWords are the parts of a key that make it secret wherever they appear: Connect's
// PASSWORD-typed settings are named with them throughout the ecosystem, and key material
// (private keys, API and access keys) goes by these names.
var secretWords = []string{
	"password", "passwd", "pwd", "secret", "token", "credential", "passphrase", "jaas",
	"private.key", "private_key", "privatekey", "api.key", "api_key", "apikey",
	"access.key", "access_key", "accesskey", "basic.auth.user.info",
}

// IsSecretKey reports whether a config key looks like it holds a secret. Connect knows which
// properties are PASSWORD-typed from each plugin's ConfigDef; the agent does not load plugins,
// so without the connector family it goes by name and errs on the side of hiding.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	// Contains of each word, in one pass: a word can start only where its first byte is
	// (eighteen scans of every config key were a few percent of a small request's CPU).
	for i := 0; i < len(k); i++ {
		for _, s := range secretWordsBy[k[i]] {
			if len(k)-i >= len(s) && k[i+1] == s[1] && k[i:i+len(s)] == s {
				return true
			}
		}
	}
	// ".key" catches ssl.keystore.key, s3.sse.customer.key and the like.
	return strings.HasSuffix(k, ".key")
}

// secretWordsBy are secretWords by their first byte.
var secretWordsBy = func() (by [256][]string) {
	for _, s := range secretWords {
		if len(s) < 2 { // IsSecretKey compares a word's second byte before the rest
			panic("events: secret word " + strconv.Quote(s) + " is shorter than two bytes")
		}
		by[s[0]] = append(by[s[0]], s)
	}
	return by
}()

var (
	// userInfoPassword is the password of a URI with user info: scheme://user:password@host.
	// The password runs to the last '@' before the path, so an unescaped '@' in it is hidden
	// too.
	userInfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*:)([^/?#\s]*)@`)
	// oraclePassword is the password of an Oracle thin URL: jdbc:oracle:thin:user/password@host.
	oraclePassword = regexp.MustCompile(`(jdbc:oracle:[A-Za-z]+:[^/@:\s]*/)([^@\s]*)@`)
	// uriParam is a query parameter or JDBC property: ?name=value, &name=value, ;name=value.
	uriParam = regexp.MustCompile(`([?&;])([A-Za-z0-9_.\-]+)=([^&;#\s]*)`)
	// quotedPassword is a JAAS-style option: password="...".
	quotedPassword = regexp.MustCompile(`(?i)\b([A-Za-z_.]*(?:password|secret|token)\s*=\s*")([^"]*)(")`)
)

// MaskCredentials replaces with HiddenValue the passwords that s carries inside: that of any
// URI with user info (mongodb://app:[hidden]@db:27017), of an Oracle thin URL, of query
// parameters and JDBC properties whose names IsSecretKey calls secret
// (;password=[hidden]), and of JAAS-style password="..." options.
func MaskCredentials(s string) string {
	spans := credentialSpans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp.Start])
		b.WriteString(HiddenValue)
		at = sp.End
	}
	b.WriteString(s[at:])
	return b.String()
}

// credentialSpans returns where the passwords MaskCredentials masks are in s, in order and
// apart (overlapping ones merged), empty ones included (";password=;" is masked too).
func credentialSpans(s string) []SecretSpan {
	var spans []SecretSpan
	add := func(re *regexp.Regexp, group int, keep func(m []int) bool) {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if keep == nil || keep(m) {
				spans = append(spans, SecretSpan{Start: m[2*group], End: m[2*group+1]})
			}
		}
	}
	if strings.Contains(s, "@") {
		add(userInfoPassword, 2, nil)
		add(oraclePassword, 2, nil)
	}
	if strings.Contains(s, "=") {
		add(uriParam, 3, func(m []int) bool { return IsSecretKey(s[m[4]:m[5]]) })
		add(quotedPassword, 2, nil)
	}
	return mergeSpans(spans)
}

// mergeSpans sorts spans by start and merges those that overlap.
func mergeSpans(spans []SecretSpan) []SecretSpan {
	slices.SortFunc(spans, func(a, b SecretSpan) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	var out []SecretSpan
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.Start < out[n-1].End {
			out[n-1].End = max(out[n-1].End, sp.End)
			continue
		}
		out = append(out, sp)
	}
	return out
}
