package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Property
	}{
		{"separators", "a=1\nb:2\nc 3\nd\t=\t4\ne   :  5\n", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}, {"d", "4", 4}, {"e", "5", 5}}},
		{"comments and blanks", "# c\n  ! c2\n\n   \na=1\n", []Property{{"a", "1", 5}}},
		{"value keeps separators and trailing blanks", "a==b:c d \n", []Property{{"a", "=b:c d ", 1}}},
		{"empty value", "a=\nb\n", []Property{{"a", "", 1}, {"b", "", 2}}},
		{"continuation drops leading blanks", "a=one \\\n    two\\\n\tthree\nb=2", []Property{{"a", "one twothree", 1}, {"b", "2", 4}}},
		{"escaped backslash is not a continuation", "a=x\\\\\nb=2\n", []Property{{"a", "x\\", 1}, {"b", "2", 2}}},
		{"escapes", `k\ e\=y\:=\t\n\r\f\"\q\u00e9\ud83d\ude00`, []Property{{"k e=y:", "\t\n\r\f\"q\u00e9\U0001F600", 1}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"comment sign inside a value", "a=x#y!z\n", []Property{{"a", "x#y!z", 1}}},
		{"ISO 8859-1 bytes", "a=caf\xe9", []Property{{"a", "caf\u00e9", 1}}},
		{"duplicate keys kept in order", "a=1\na=2", []Property{{"a", "1", 1}, {"a", "2", 2}}},
		{"continuation at end of data", "a=1\\", []Property{{"a", "1", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := ParseProperties([]byte("password=s3cr3t\\u12G4"))
	require.ErrorContains(t, err, "malformed \\uxxxx escape")
	require.NotContains(t, err.Error(), "s3cr3t")
}

const jaasScram = `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pa\"ss;wo=rd";`

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name, in, user, pass string
	}{
		{"scram", jaasScram, "alice", `pa"ss;wo=rd`},
		{"plain, single quotes and words", `org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password='x y';`, "bob", "x y"},
		{"comments and newlines", "org.apache.kafka.common.security.plain.PlainLoginModule /* c */ required\n username=\"u\" // c\n password=\"p\\tq\\101\";", "u", "p\tqA"},
		{"tokenauth false", `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="" tokenauth="false";`, "u", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, p, err := parseJAAS(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.user, u)
			require.Equal(t, tt.pass, p)
		})
	}
	refusals := []struct{ name, in, want string }{
		{"kerberos", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;`, "login module \"com.sun.security.auth.module.Krb5LoginModule\" not supported"},
		{"no semicolon", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t"`, "not terminated by a semicolon"},
		{"two modules", jaasScram + jaasScram, "more than one login module"},
		{"numeric value", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=123456;`, `option "password": value not specified`},
		{"unterminated", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t;`, "the quoted value at character 88 has no closing quote"},
		{"unknown option", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t" serviceName="kafka";`, `option "serviceName" not supported`},
		{"no password", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`, "option password: missing"},
		{"bad flag", `org.apache.kafka.common.security.plain.PlainLoginModule mandatory username="u" password="s3cr3t";`, "control flag"},
		{"token auth", `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="s3cr3t" tokenauth=true;`, "delegation tokens"},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			_, _, err := parseJAAS(tt.in)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

func TestParseCommandConfig(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("x"), 0o600))
	jaas := "sasl.jaas.config=" + strings.ReplaceAll(jaasScram, `\`, `\\`) + "\n"
	tests := []struct {
		name  string
		in    string
		want  Security
		notes int
	}{
		{"empty is PLAINTEXT", "", Security{}, 0},
		{"SASL_SSL SCRAM with a PEM CA file", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + jaas +
			"ssl.truststore.type=PEM\nssl.truststore.location=" + ca + "\n",
			Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "alice", SASLPassword: `pa"ss;wo=rd`, TLSEnabled: true, TLSCAFile: ca}, 0},
		{"SASL_PLAINTEXT PLAIN over continued lines", "security.protocol=sasl_plaintext\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  username=\"u\" \\\n  password=\"p\";\n",
			Security{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPassword: "p"}, 0},
		{"SSL with inline PEM and no hostname check", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=-----BEGIN CERTIFICATE----- \\\n  abc \\\n  -----END CERTIFICATE-----\n" +
			"ssl.keystore.type=PEM\nssl.keystore.certificate.chain=CHAIN\nssl.keystore.key=KEY\nssl.key.password=kp\nssl.endpoint.identification.algorithm=\n",
			Security{TLSEnabled: true, TLSCAPEM: []byte("-----BEGIN CERTIFICATE----- abc -----END CERTIFICATE-----"), TLSCertPEM: []byte("CHAIN"), TLSKeyPEM: []byte("KEY"),
				TLSKeyPassword: "kp", TLSNoHostnameCheck: true}, 0},
		{"SSL keystore file, https check", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/k.pem\nssl.endpoint.identification.algorithm=HTTPS\n",
			Security{TLSEnabled: true, TLSCertFile: "/k.pem", TLSKeyFile: "/k.pem"}, 0},
		{"tuning keys noted", "client.id=x\nrequest.timeout.ms=1000\n", Security{}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := ParseCommandConfig([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Len(t, notes, tt.notes)
		})
	}
}

func TestParseCommandConfigRefusals(t *testing.T) {
	const secret = "s3cr3t"
	jaas := `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";` + "\n"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"unknown key", "bootstrap.servers=x\nfoo.bar=1\n", []string{"bootstrap.servers: not supported", "foo.bar: not supported"}},
		{"unknown protocol", "security.protocol=TLS\n", []string{`security.protocol: "TLS"`}},
		{"GSSAPI default", "security.protocol=SASL_SSL\n" + jaas, []string{"sasl.mechanism: not set", "GSSAPI"}},
		{"OAUTHBEARER", "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n" + jaas, []string{`sasl.mechanism: "OAUTHBEARER" not supported`}},
		{"no JAAS", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", []string{"sasl.jaas.config: not set"}},
		{"SASL keys under PLAINTEXT", "sasl.mechanism=PLAIN\n" + jaas, []string{"sasl.mechanism: set, but security.protocol is PLAINTEXT", "sasl.jaas.config: set, but"}},
		{"SSL keys under SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" + jaas + "ssl.truststore.type=PEM\n", []string{"ssl.truststore.type: set, but security.protocol is SASL_PLAINTEXT"}},
		{"other sasl key", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + jaas + "sasl.login.callback.handler.class=x\n", []string{"sasl.login.callback.handler.class: not supported"}},
		{"JKS truststore", "security.protocol=SSL\nssl.truststore.location=/t.jks\nssl.truststore.password=" + secret + "\n", []string{"ssl.truststore.type: not set", "keytool -list -rfc"}},
		{"PKCS12 truststore", "security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=/t.p12\n", []string{"ssl.truststore.type: PKCS12 not supported", "openssl pkcs12"}},
		{"JKS keystore", "security.protocol=SSL\nssl.keystore.type=JKS\nssl.keystore.location=/k.jks\nssl.keystore.password=" + secret + "\n", []string{"ssl.keystore.type: JKS not supported", "keytool -importkeystore"}},
		{"PEM truststore with password", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/t\nssl.truststore.password=" + secret + "\n", []string{"ssl.truststore.password: not used with a PEM truststore"}},
		{"PEM keystore with password", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/k\nssl.keystore.password=" + secret + "\n", []string{"ssl.keystore.password: not used with a PEM keystore"}},
		{"both truststores", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/t\nssl.truststore.certificates=x\n", []string{"set one, not both"}},
		{"key without chain", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.key=" + secret + "\n", []string{"set both or neither"}},
		{"key password without keystore", "security.protocol=SSL\nssl.key.password=" + secret + "\n", []string{"ssl.key.password: set without a keystore"}},
		{"other ssl key", "security.protocol=SSL\nssl.enabled.protocols=TLSv1.2\n", []string{"ssl.enabled.protocols: not supported"}},
		{"endpoint algorithm", "security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n", []string{"ssl.endpoint.identification.algorithm"}},
		{"bad JAAS", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"" + secret + "\"\n", []string{"sasl.jaas.config: entry not terminated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseCommandConfig([]byte(tt.in))
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestReadCommandConfigNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.properties")
	require.NoError(t, os.WriteFile(path, []byte("client.id=x\nfoo=1\n"), 0o600))
	_, _, err := ReadCommandConfig(path)
	require.ErrorContains(t, err, "client properties "+path+": foo: not supported")
	_, _, err = ReadCommandConfig(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "read client properties")
}

func TestParseConnectConfig(t *testing.T) {
	c, err := ParseConnectConfig([]byte("basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=admin:pa:ss\nssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n"))
	require.NoError(t, err)
	require.Equal(t, ConnectSecurity{Username: "admin", Password: "pa:ss", BasicAuth: true, TLS: Security{TLSEnabled: true, TLSCAFile: "/ca.pem"}}, c)

	c, err = ParseConnectConfig([]byte("basic.auth.credentials.source=URL\n"))
	require.NoError(t, err)
	require.False(t, c.BasicAuth)

	_, err = c.WithUserInfo("nocolon-s3cr3t", "OFFSETAGENT_TO_CONNECT_USER_INFO")
	require.ErrorContains(t, err, "OFFSETAGENT_TO_CONNECT_USER_INFO: want user:password")
	require.NotContains(t, err.Error(), "s3cr3t")
	c2, err := ParseConnectConfig([]byte("basic.auth.user.info=a:b\n"))
	require.NoError(t, err)
	_, err = c2.WithUserInfo("a:s3cr3t", "OFFSETAGENT_TO_CONNECT_USER_INFO")
	require.ErrorContains(t, err, "one way")

	for _, tt := range []struct{ name, in, want string }{
		{"unknown key", "url=http://x\n", "url: not supported"},
		{"source without info", "basic.auth.credentials.source=USER_INFO\n", "basic.auth.user.info: not set"},
		{"SASL_INHERIT", "basic.auth.credentials.source=SASL_INHERIT\nbasic.auth.user.info=a:s3cr3t\n", "SASL_INHERIT"},
		{"info without colon", "basic.auth.user.info=s3cr3t\n", "want user:password"},
		{"JKS", "ssl.truststore.location=/t.jks\n", "ssl.truststore.type: not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConnectConfig([]byte(tt.in))
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

// The basic.auth.* values are trimmed as Kafka's ConfigDef trims a STRING or PASSWORD value
// (Java's String.trim: every character up to U+0020 at both ends, no other), as the ssl.* ones
// are: a trailing blank in a properties file is part of the value there.
func TestParseConnectConfigTrimsBasicAuth(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		user     string
		password string
		err      string
	}{
		{name: "trailing blanks after the password", in: "basic.auth.user.info=admin:s3cr3t \t\n", user: "admin", password: "s3cr3t"},
		{name: "escaped leading blank", in: "basic.auth.user.info=\\ admin:s3cr3t\n", user: "admin", password: "s3cr3t"},
		{name: "control character at the end", in: "basic.auth.user.info=admin:s3cr3t\\u0001\n", user: "admin", password: "s3cr3t"},
		{name: "source with trailing blanks", in: "basic.auth.credentials.source=USER_INFO \t\nbasic.auth.user.info=admin:s3cr3t\n", user: "admin", password: "s3cr3t"},
		// Not a blank to Java's trim, unlike Go's strings.TrimSpace.
		{name: "source with a trailing no-break space", in: "basic.auth.credentials.source=USER_INFO\\u00a0\nbasic.auth.user.info=admin:s3cr3t\n",
			err: `basic.auth.credentials.source: "USER_INFO\u00a0" not supported`},
		{name: "blanks alone", in: "basic.auth.user.info= \t\n", err: "basic.auth.user.info: want user:password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConnectConfig([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			require.True(t, c.BasicAuth)
			require.Equal(t, tc.user, c.Username)
			require.Equal(t, tc.password, c.Password)
		})
	}
}

// The properties files docs/migration.md and docs/operations.md show are read as the docs
// say: the client files as client properties, the REST files (with basic.auth keys) as
// Connect REST properties.
func TestDocumentedPropertiesFilesParse(t *testing.T) {
	for _, file := range []string{"../../docs/migration.md", "../../docs/operations.md"} {
		doc, err := os.ReadFile(file)
		require.NoError(t, err)
		blocks := strings.Split(string(doc), "```properties\n")[1:]
		require.NotEmpty(t, blocks, file)
		for _, b := range blocks {
			text := b[:strings.Index(b, "```")]
			if strings.Contains(text, "basic.auth") {
				c, err := ParseConnectConfig([]byte(text))
				require.NoError(t, err, text)
				require.True(t, c.BasicAuth)
				continue
			}
			s, _, err := ParseCommandConfig([]byte(text))
			require.NoError(t, err, text)
			require.True(t, s.TLSEnabled)
			require.NotEmpty(t, s.SASLUsername)
		}
	}
}
