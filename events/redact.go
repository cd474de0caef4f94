package events

import (
	"regexp"
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

// minScrubLen is the shortest secret Scrub looks for: shorter ones would mask unrelated text
// (a password "1" in "tasks.max=1").
const minScrubLen = 4

// Scrub replaces every secret of the config that text quotes (a value RedactedBy hides or
// masks) by its redacted form. It is for messages built from the config by someone else: a
// connector's or Connect's own validation error, which may quote the value it refused.
func (c Config) Scrub(text string, secret func(key string) bool) string {
	for _, e := range c {
		if e.Null || len(e.Value) < minScrubLen || !strings.Contains(text, e.Value) {
			continue
		}
		if r := redactValue(e.Key, e.Value, secret); r != e.Value {
			text = strings.ReplaceAll(text, e.Value, r)
		}
	}
	return text
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
	for _, s := range secretWords {
		if strings.Contains(k, s) {
			return true
		}
	}
	// ".key" catches ssl.keystore.key, s3.sse.customer.key and the like.
	return strings.HasSuffix(k, ".key")
}

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
	if strings.Contains(s, "@") {
		s = userInfoPassword.ReplaceAllString(s, "${1}"+HiddenValue+"@")
		s = oraclePassword.ReplaceAllString(s, "${1}"+HiddenValue+"@")
	}
	if strings.Contains(s, "=") {
		s = uriParam.ReplaceAllStringFunc(s, func(m string) string {
			sub := uriParam.FindStringSubmatch(m)
			if !IsSecretKey(sub[2]) {
				return m
			}
			return sub[1] + sub[2] + "=" + HiddenValue
		})
		s = quotedPassword.ReplaceAllString(s, "${1}"+HiddenValue+"${3}")
	}
	return s
}
