package clientconfig

import (
	"testing"
	"unicode/utf8"
)

// minSecretPart is the shortest part of a secret the leak checks look for: shorter runs of
// characters occur in any message by chance.
const minSecretPart = 4

// leakedPart returns the first part of secret, minSecretPart characters long, that text
// contains, or "" when there is none. A secret shorter than that is looked for whole.
func leakedPart(text, secret string) string {
	runes := []rune(secret)
	if len(runes) < minSecretPart {
		if secret != "" && containsString(text, secret) {
			return secret
		}
		return ""
	}
	for i := 0; i+minSecretPart <= len(runes); i++ {
		if w := string(runes[i : i+minSecretPart]); containsString(text, w) {
			return w
		}
	}
	return ""
}

func containsString(text, part string) bool {
	for i := 0; i+len(part) <= len(text); i++ {
		if text[i:i+len(part)] == part {
			return true
		}
	}
	return false
}

// requireNoSecret fails t when text carries a part of secret.
func requireNoSecret(t *testing.T, text, secret string) {
	t.Helper()
	if p := leakedPart(text, secret); p != "" {
		t.Fatalf("%q carries %q, a part of the secret (%d characters)", text, p, utf8.RuneCountInString(p))
	}
}
