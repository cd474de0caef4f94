package clientconfig

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
)

// readerErrors returns every error the readers give for file: as a Kafka client properties
// file, as a Connect REST properties file, and, when the client file is accepted and names no
// file to read, building its connections.
func readerErrors(file []byte) []string {
	var out []string
	s, notes, err := ParseCommandConfig(file)
	if err != nil {
		out = append(out, err.Error())
	} else {
		out = append(out, notes...)
		if s.TLSCAFile == "" && s.TLSCertFile == "" {
			if _, err := NewConnections(s); err != nil {
				out = append(out, err.Error())
			}
		}
	}
	if _, err := ParseConnectConfig(file); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// No error of the readers carries a part of a secret: the values of the password keys
// (ssl.key.password, ssl.keystore.password, ssl.truststore.password, the inline key and
// certificates, basic.auth.user.info) and sasl.jaas.config, however malformed. They name the
// key and the position or kind of the problem.
func TestReaderErrorsCarryNoSecret(t *testing.T) {
	const secret = "Zebra7Quartz"
	const plain = "sasl.jaas.config=" + plainLoginModule + " required "
	sasl := "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
	tests := []struct {
		name, file string
	}{
		{"unquoted password with a blank", sasl + plain + `username="u" password=my ` + secret + ";\n"},
		{"unquoted password with punctuation", sasl + plain + `username="u" password=my+` + secret + ";\n"},
		{"password without its option name", sasl + plain + `username="u" ` + secret + ";\n"},
		{"password after the value", sasl + plain + `username="u" password="p" ` + secret + ";\n"},
		{"option with a secret value", sasl + plain + `username="u" password="p" ` + secret + `="x";` + "\n"},
		{"password as the login module", sasl + "sasl.jaas.config=" + secret + " required username=\"u\" password=\"p\";\n"},
		{"password as the control flag", sasl + plain[:len(plain)-len("required ")] + secret + ` username="u" password="p";` + "\n"},
		{"password after a quote", sasl + plain + `username="u" password=x"` + secret + `";` + "\n"},
		{"no semicolon", sasl + plain + `username="u" password="` + secret + `"` + "\n"},
		{"unterminated quote", sasl + plain + `username="u" password="` + secret + ";\n"},
		{"unterminated comment", sasl + plain + `username="u" password="p"; /* ` + secret + "\n"},
		{"two entries", sasl + plain + `username="u" password="` + secret + `"; ` + plainLoginModule + ` required username="u" password="` + secret + `";` + "\n"},
		{"token auth set to the password", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=" + scramLoginModule + ` required username="u" password="p" tokenauth=` + secret + ";\n"},
		{"JAAS under PLAINTEXT", plain + `username="u" password="` + secret + `";` + "\n"},
		{"JAAS with an unknown mechanism", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n" + plain + `username="u" password="` + secret + `";` + "\n"},
		{"malformed escape in a password", "security.protocol=SSL\nssl.key.password=" + secret + "\\u12G4\n"},
		{"malformed escape in JAAS", sasl + plain + `username="u" password="` + secret + `\u00";` + "\n"},
		{"key password without a keystore", "security.protocol=SSL\nssl.key.password=" + secret + "\n"},
		{"key password for a key that is not encrypted", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=x\nssl.keystore.key=" + secret + "\nssl.key.password=" + secret + "\n"},
		{"inline key that is no PEM", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=" + secret + "\nssl.keystore.key=-----BEGIN PRIVATE KEY----- " + secret + " -----END PRIVATE KEY-----\n"},
		{"inline truststore that is no PEM", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=" + secret + "\n"},
		{"store passwords with PEM", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=x\nssl.truststore.password=" + secret + "\nssl.keystore.type=PEM\nssl.keystore.location=/k\nssl.keystore.password=" + secret + "\n"},
		{"user info without a colon", "basic.auth.user.info=" + secret + "\n"},
		{"user info with URL credentials", "basic.auth.credentials.source=URL\nbasic.auth.user.info=u:" + secret + "\n"},
		{"SCRAM password outside SASLprep", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=" + scramLoginModule + ` required username="u" password="` + secret + `\u0007";` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := readerErrors([]byte(tt.file))
			if len(errs) == 0 {
				t.Fatalf("no error for %q", tt.file)
			}
			for _, e := range errs {
				requireNoSecret(t, e, secret)
			}
		})
	}
}

// canaries are the characters every window of a planted secret holds one of: Latin-1 letters,
// which the readers take as ordinary characters (JAAS reads them as word characters) and
// which no text of the readers' own holds.
var canaries = []rune("\u00e9\u00df\u00d8\u00fe\u00f1\u00c5\u00e6\u00ff\u00d0\u00b5")

// secretAlphabet is what the rest of a planted secret is made of: characters that matter to
// the properties and JAAS syntax, and plain ones.
var secretAlphabet = []rune(" \t\"'\\=;:/*#!,$-._aZ09{}()+?")

// plantedSecret turns the fuzzer's bytes into a secret of at least six characters in which
// every run of minSecretPart characters holds a canary (every third character is one).
// Since the rest of the input is ASCII and holds no escape, a canary in an error can only
// come from the secret: the check that no part of the secret is in an error is sound.
func plantedSecret(seed []byte) string {
	for len(seed) < 6 {
		seed = append(seed, byte(len(seed)*7))
	}
	var b strings.Builder
	for i, c := range seed {
		if i%3 == 0 {
			b.WriteRune(canaries[int(c)%len(canaries)])
		} else {
			b.WriteRune(secretAlphabet[int(c)%len(secretAlphabet)])
		}
	}
	return b.String()
}

// jaasShapes are sasl.jaas.config values with %s where the secret goes: well formed and
// malformed.
var jaasShapes = []string{
	`M required username="u" password="%s";`,
	`M required username="u" password='%s';`,
	`M required username="u" password=%s;`,
	`M required username="u" password="%s"`,
	`M required username="u" password="%s`,
	`M required username="u" %s;`,
	`%s required username="u" password="p";`,
	`M %s username="u" password="p";`,
	`M required username="u" password="p" %s;`,
	`M required username="u" password="p" %s="x";`,
	`M required username="u" password=x"%s";`,
	`M required username="u" password="p" tokenauth=%s;`,
	`M required username="u" password="p"; /* %s`,
	`M required username="u" password="p"; // %s`,
	`M required username="u" password="%s"; M required username="u" password="%s";`,
	`M required /* %s */ username="u" password="p" x=%s;`,
}

// secretKeys are the keys whose value is a secret, besides sasl.jaas.config.
var secretKeys = []string{"ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
	"ssl.keystore.certificate.chain", "ssl.truststore.certificates", "basic.auth.user.info"}

// FuzzSecretsNotInErrors: whatever the file around it, a secret planted in the value of a
// password key or in sasl.jaas.config (written raw, with the properties file's escapes, or
// continued over lines) never appears, whole or in part, in an error of the readers.
func FuzzSecretsNotInErrors(f *testing.F) {
	for i := range jaasShapes {
		f.Add(uint8(i), uint8(0), []byte("s3cr3t-pw"), "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", "")
		f.Add(uint8(i), uint8(1), []byte("a b=c;d\"e'f"), "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n", "client.id=x\n")
	}
	for i := range jaasShapes {
		// Letters and digits only: the secret is one JAAS word.
		f.Add(uint8(i), uint8(0), []byte{1, 17, 18, 2, 17, 19, 3, 18, 17, 4, 20, 17}, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", "")
	}
	for i := range secretKeys {
		f.Add(uint8(len(jaasShapes)+i), uint8(2), []byte("kp  \\u12"), "security.protocol=SSL\nssl.keystore.type=PEM\n", "ssl.keystore.location=/k\n")
	}
	f.Fuzz(func(t *testing.T, shape, encoding uint8, seed []byte, head, tail string) {
		for _, r := range head + tail {
			if r > 0x7e || r == '\\' {
				return // the rest of the file is ASCII without escapes: see plantedSecret
			}
		}
		secret := plantedSecret(seed)
		encode := func(s string) string {
			switch encoding % 4 {
			case 0: // raw, one byte per character (ISO 8859-1)
				b := make([]byte, 0, len(s))
				for _, r := range s {
					b = append(b, byte(r))
				}
				return string(b)
			case 1:
				return escapeProperty(s, false)
			case 2: // continued over lines after every character
				var b strings.Builder
				for _, r := range escapeProperty(s, false) {
					b.WriteRune(r)
					if r != '\\' {
						b.WriteString("\\\n  ")
					}
				}
				return b.String()
			default:
				var b strings.Builder
				for _, u := range utf16.Encode([]rune(s)) {
					fmt.Fprintf(&b, `\u%04x`, u)
				}
				return b.String()
			}
		}
		var line string
		if n := int(shape) % (len(jaasShapes) + len(secretKeys)); n < len(jaasShapes) {
			module := plainLoginModule
			if shape&0x80 != 0 {
				module = scramLoginModule
			}
			v := strings.ReplaceAll(strings.ReplaceAll(jaasShapes[n], "%s", secret), "M ", module+" ")
			line = "sasl.jaas.config=" + encode(v)
		} else {
			line = secretKeys[n-len(jaasShapes)] + "=" + encode(secret)
		}
		file := head + "\n" + line + "\n" + tail
		for _, e := range readerErrors([]byte(file)) {
			requireNoSecret(t, e, secret)
			// Stronger, and as sound: no canary at all, so no part of any length.
			if i := strings.IndexAny(e, string(canaries)); i >= 0 {
				t.Fatalf("%q carries a character of the secret at byte %d", e, i)
			}
		}
	})
}
