package strimzi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Planted secrets: config values of every shape a secret takes (the sasl.jaas.config of each
// login module, quoted, unquoted, beside placeholders, in comments, in several entries; a
// secret key's value beside placeholders; a password inside a URL or a JDBC URL), with a secret
// planted in each place that holds one. Every planted secret carries a canary, a character
// that no other part of the value, of a manifest or of a message has, so that no part of it, of
// any length, can be missed. A planted secret holds no '$', '{' or '}': with them it could be,
// or end, a placeholder, which Connect resolves and which is no secret in clear text.

// canaries mark the planted secrets. Each starts a JAAS word (>= U+00A0) and is no blank.
const canaries = "ЖΩΨ¤"

// secretPlace is where a planted secret goes; each takes its own characters.
type secretPlace int

const (
	inDoubleQuotes secretPlace = iota // a JAAS "string", escaped as Java reads it
	inSingleQuotes                    // a JAAS 'string'
	asJAASWord                        // an unquoted JAAS value
	inBlockComment                    // /* ... */
	inLineComment                     // // ... to the end of the line
	asValue                           // (part of) a secret key's value
	inURL                             // a URL's password, a JDBC URL's password parameter
)

// fits reports whether the planted secret s can stand in place p as itself.
func fits(p secretPlace, s string) bool {
	if s == "" || !utf8.ValidString(s) || !strings.ContainsAny(s, canaries) || strings.ContainsAny(s, "${}") {
		return false
	}
	switch p {
	case asJAASWord:
		// Kafka's JAAS word: a letter, '_', '$' or a character from U+00A0 up, then those,
		// digits, '.' and '-'.
		for i, r := range s {
			word := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == '_' || r >= 0xa0
			if !word && (i == 0 || !strings.ContainsRune("0123456789.-", r)) {
				return false
			}
		}
	case inBlockComment:
		return !strings.Contains(s, "*/") && !strings.HasSuffix(s, "*")
	case inLineComment:
		return !strings.ContainsAny(s, "\n\r")
	case inURL:
		for _, r := range s {
			if r <= ' ' || strings.ContainsRune("/?#@&;:", r) || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xa0 {
				return false
			}
		}
	}
	return true
}

// writtenAt is s as place p writes it: escaped inside JAAS quotes (a backslash, the quote, and the
// ends of lines, which would end the string), as it is elsewhere.
func writtenAt(p secretPlace, s string) string {
	if p != inDoubleQuotes && p != inSingleQuotes {
		return s
	}
	q := `"`
	if p == inSingleQuotes {
		q = `'`
	}
	return strings.NewReplacer(`\`, `\\`, q, `\`+q, "\n", `\n`, "\r", `\r`).Replace(s)
}

// planter builds a planted case from its choices and secrets.
type planter struct {
	choose  func(n int) int
	secret  func(p secretPlace) (string, bool)
	planted []planted
}

// planted is a secret planted: as it is read, as the value holds it, where, and the JAAS
// option it is the value of.
type planted struct {
	read, written string
	place         secretPlace
	option        string
}

func (p *planter) pick(options ...string) string { return options[p.choose(len(options))] }

// plant returns a secret for place pl, written, or "" when none fits.
func (p *planter) plant(pl secretPlace) string {
	s, ok := p.secret(pl)
	if !ok || !fits(pl, s) {
		return ""
	}
	p.planted = append(p.planted, planted{read: s, written: writtenAt(pl, s), place: pl})
	return writtenAt(pl, s)
}

// placeholders are Connect placeholders with a path: ${provider:path:key}.
var placeholders = []string{"${secrets:kafka/creds:%s}", "${file:/opt/kafka/credentials.properties:%s}", "${vault:secret/data/kafka:%s}"}

func (p *planter) placeholder(name string) string {
	return fmt.Sprintf(placeholders[p.choose(len(placeholders))], name)
}

// jaasModules are login modules as Kafka's clients, Strimzi's OAuth library, Kerberos and AWS's
// MSK library write them: "" marks an option that holds a secret, any other value is written as
// it is.
var jaasModules = []struct {
	class   string
	options [][2]string
}{
	{"org.apache.kafka.common.security.plain.PlainLoginModule", [][2]string{{"username", ""}, {"password", ""}}},
	{"org.apache.kafka.common.security.scram.ScramLoginModule", [][2]string{{"username", ""}, {"password", ""}, {"tokenauth", "true"}}},
	{"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", [][2]string{{"clientId", ""}, {"clientSecret", ""}, {"scope", `"kafka connect"`}}},
	{"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", [][2]string{{"oauth.client.id", ""}, {"oauth.client.secret", ""},
		{"oauth.token.endpoint.uri", `"https://sso.example/realms/kafka/protocol/openid-connect/token"`}, {"oauth.refresh.token", ""}}},
	{"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", [][2]string{{"unsecuredLoginStringClaim_sub", ""}}},
	{"com.sun.security.auth.module.Krb5LoginModule", [][2]string{{"useKeyTab", "true"}, {"storeKey", "true"},
		{"keyTab", `"/etc/security/keytabs/connect.keytab"`}, {"principal", ""}, {"serviceName", "kafka"}}},
	{"software.amazon.msk.auth.iam.IAMLoginModule", [][2]string{{"awsProfileName", ""}, {"awsRoleArn", ""}}},
}

// jaasKeys are the keys a connector config holds a JAAS config under.
var jaasKeys = []string{"sasl.jaas.config", "producer.override.sasl.jaas.config", "consumer.override.sasl.jaas.config",
	"admin.override.sasl.jaas.config", "schema.history.internal.producer.sasl.jaas.config"}

// option writes a secret option's value: a planted secret (quoted either way, or a word), a
// placeholder (quoted or not), or a placeholder and planted secrets inside one string.
func (p *planter) option(name string) string {
	from := len(p.planted)
	defer func() {
		for i := from; i < len(p.planted); i++ {
			p.planted[i].option = name
		}
	}()
	switch p.choose(8) {
	case 0:
		return `"` + p.plant(inDoubleQuotes) + `"`
	case 1:
		return `'` + p.plant(inSingleQuotes) + `'`
	case 2:
		if w := p.plant(asJAASWord); w != "" {
			return w
		}
		return `""`
	case 3:
		return `"` + p.placeholder(name) + `"`
	case 4:
		return p.placeholder(name)
	case 5:
		return `"` + p.placeholder(name) + p.plant(inDoubleQuotes) + `"`
	case 6:
		return `"` + p.plant(inDoubleQuotes) + p.placeholder(name) + `"`
	default:
		return `'` + p.plant(inSingleQuotes) + p.placeholder(name) + p.plant(inSingleQuotes) + `'`
	}
}

// comment is nothing, or a comment holding a planted secret.
func (p *planter) comment() string {
	switch p.choose(4) {
	case 0:
		return "/* was: " + p.plant(inBlockComment) + " */"
	case 1:
		return "// " + p.plant(inLineComment) + "\n"
	default:
		return ""
	}
}

// jaas writes one or two entries.
func (p *planter) jaas() string {
	blank := func() string { return p.pick(" ", "\n  ", "\t", "  ") }
	var b strings.Builder
	for range 1 + p.choose(2) {
		m := jaasModules[p.choose(len(jaasModules))]
		b.WriteString(p.comment())
		b.WriteString(m.class + " " + p.pick("required", "REQUIRED", "optional", "Sufficient", "requisite"))
		for _, o := range m.options {
			b.WriteString(blank())
			b.WriteString(p.comment())
			v := o[1]
			if v == "" {
				v = p.option(o[0])
			}
			b.WriteString(o[0] + p.pick("=", " = ") + v)
		}
		b.WriteString(p.pick(";", ";\n", "; ", " ;"))
	}
	b.WriteString(p.comment())
	return b.String()
}

// plantedCase is a config key and its value, with the secrets planted in it.
type plantedCase struct {
	key, value string
	planted    []planted
}

// plantCase builds a case from p's choices: a JAAS config, a secret key's value, or a URL.
func plantCase(p *planter) plantedCase {
	var key, value string
	switch p.choose(4) {
	case 0, 1:
		key, value = jaasKeys[p.choose(len(jaasKeys))], p.jaas()
	case 2:
		key = p.pick("database.password", "ssl.key.password", "connection.password", "aws.secret.access.key", "value.converter.basic.auth.user.info")
		ph := p.placeholder("pw")
		switch p.choose(5) {
		case 0:
			value = p.plant(asValue)
		case 1:
			value = ph + p.plant(asValue)
		case 2:
			value = p.plant(asValue) + ":" + ph
		case 3:
			value = ph + ":" + p.plant(asValue)
		default:
			value = ph + ":" + p.placeholder("user")
		}
	default:
		key = p.pick("connection.url", "mongodb.connection.string", "store.url")
		host := p.pick("db:27017", p.placeholder("host"))
		switch p.choose(4) {
		case 0:
			value = "mongodb://" + p.pick("app", p.placeholder("user")) + ":" + p.plant(inURL) + "@" + host + "/orders"
		case 1:
			value = "jdbc:mysql://" + host + "/shop?user=app&password=" + p.plant(inURL) + "&useSSL=true"
		case 2:
			value = "jdbc:sqlserver://" + host + ";databaseName=shop;password=" + p.plant(inURL)
		default:
			value = "jdbc:oracle:thin:app/" + p.plant(inURL) + "@" + host + "/ORCL"
		}
	}
	return plantedCase{key: key, value: value, planted: p.planted}
}

// resolve is Connect's ConfigTransformer with the Secret's provider alone: each
// ${secrets:<secret>:KEY} replaced by the Secret's value once, left to right, as Connect reads
// them (events.ConfigVariables), the other placeholders left as they are.
func resolve(value, secret string, data map[string]string) string {
	var b strings.Builder
	at := 0
	for _, v := range events.ConfigVariables(value) {
		b.WriteString(value[at:v.Start])
		at = v.End
		if d, ok := data[v.Key]; ok && v.Provider == "secrets" && v.Path == secret {
			b.WriteString(d)
			continue
		}
		b.WriteString(value[v.Start:v.End])
	}
	b.WriteString(value[at:])
	return b.String()
}

// requireNoCanary fails when text holds any character of a planted secret.
func requireNoCanary(t testing.TB, what, text string) {
	t.Helper()
	if i := strings.IndexAny(text, canaries); i >= 0 {
		t.Fatalf("%s carries a character of a planted secret at byte %d: %q", what, i, text)
	}
}

// checkPlanted holds one case to the rules: with a Secret no planted secret is in the manifest
// and the value Connect resolves is A's; without one, the key is warned of; no planted secret is
// in a warning or an error; a message quoting one, as it is, JSON-escaped or Go-quoted, has it
// scrubbed.
func checkPlanted(t testing.TB, c plantedCase) {
	t.Helper()
	body := jaasSinkBody("")
	body.Config[2] = events.ConfigEntry{Key: c.key, Value: c.value}
	reg := connectors.Builtin()

	st := &Target{Cluster: "connect-b", APIVersion: StrimziV1, Secret: "kafka/connect-b-secrets"}
	data, warnings, values, err := st.manifest(strimziOf(body, "orders-sink"), "m-1", reg, nil)
	require.NoError(t, err, "%s=%q", c.key, c.value)
	requireNoCanary(t, "the manifest", string(data))
	requireNoCanary(t, "the warnings", fleet.Join(warnings, "\n").String())
	got := specConfig(t, data)[c.key]
	require.Equal(t, c.value, resolve(got, st.Secret, values), "the value Connect resolves on B is A's")

	st.Secret = ""
	_, warnings, _, err = st.manifest(strimziOf(body, "orders-sink"), "m-1", reg, nil)
	require.NoError(t, err)
	requireNoCanary(t, "the warnings", fleet.Join(warnings, "\n").String())
	if len(c.planted) > 0 {
		require.Len(t, warnings, 1, "%s=%q", c.key, c.value)
		require.Contains(t, warnings[0].String(), fmt.Sprintf("config %q holds a secret in clear text", c.key))
	}

	// A message quotes a value, not a comment: Kafka skips comments, and no error shows one.
	// A JAAS username or principal stays in messages, which name them (Config.Scrub).
	for _, pl := range c.planted {
		if pl.place == inBlockComment || pl.place == inLineComment || (pl.option != "" && !events.IsSecretKey(pl.option)) {
			continue
		}
		for _, s := range []string{pl.read, pl.written} {
			j, err := json.Marshal(s)
			require.NoError(t, err)
			msg := fmt.Sprintf("refused %q; Connect answered {\"error\":%s}; in '%s'; the config: %s", s, j, s, c.value)
			requireNoCanary(t, fmt.Sprintf("the scrubbed message (%s=%q)", c.key, c.value), body.Config.Scrub(msg, classSecret(reg, body.Config)))
		}
	}
}

// secretRunes are the characters of generated secrets besides the canaries.
const secretRunes = "abcXYZ019 !#%&()*+,-./:;<=>?@[]^_|~\"'\\\t\n"

// randomSecret is a secret of 1 to 12 characters with at least one canary, fitting place p.
func randomSecret(r *rand.Rand, p secretPlace) string {
	runes := []rune(secretRunes)
	can := []rune(canaries)
	for range 50 {
		var b strings.Builder
		n := 1 + r.IntN(12)
		at := r.IntN(n)
		for i := range n {
			if i == at || r.IntN(4) == 0 {
				b.WriteRune(can[r.IntN(len(can))])
			} else {
				b.WriteRune(runes[r.IntN(len(runes))])
			}
		}
		if s := b.String(); fits(p, s) {
			return s
		}
	}
	return string(can[r.IntN(len(can))]) + "pw"
}

// Hundreds of planted cases, the same on every run (FuzzPlantedSecrets explores further): none
// leaks.
func TestPlantedSecretsNeverLeak(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 9))
	for range 600 {
		p := &planter{choose: r.IntN, secret: func(pl secretPlace) (string, bool) { return randomSecret(r, pl), true }}
		checkPlanted(t, plantCase(p))
	}
}

// FuzzPlantedSecrets: the fuzzer chooses the shape (choices) and the secret, planted in every
// place of the value that holds one and that it fits, with a canary in its middle and without
// '$', '{' and '}'. Its seed corpus is in testdata/fuzz/FuzzPlantedSecrets.
func FuzzPlantedSecrets(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, "Cl3ar-PasswЖrd")
	f.Add([]byte{1, 1, 2, 5, 1, 6, 7, 3, 2, 0, 1}, `a"b\cЖ`)
	f.Add([]byte{2, 0, 1, 3, 2, 1}, "Ж")
	f.Add([]byte{3, 0, 0, 2}, "s3crΨt")
	f.Add([]byte{0, 5, 2, 0, 4, 0, 2, 2, 2, 2}, "word¤")
	f.Fuzz(func(t *testing.T, choices []byte, secret string) {
		i := 0
		p := &planter{
			choose: func(n int) int {
				if i >= len(choices) {
					return 0
				}
				i++
				return int(choices[i-1]) % n
			},
			secret: func(secretPlace) (string, bool) {
				s := strings.Map(func(r rune) rune {
					if strings.ContainsRune("${}", r) {
						return 'x'
					}
					return r
				}, secret)
				mid := len(s) / 2
				for mid > 0 && !utf8.RuneStart(s[mid]) {
					mid--
				}
				return s[:mid] + canaries[:2] + s[mid:], true
			},
		}
		checkPlanted(t, plantCase(p))
	})
}
