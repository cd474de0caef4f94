package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The broad name rule, used where the connector family is not known.
func TestIsSecretKey(t *testing.T) {
	tests := []struct {
		key    string
		secret bool
	}{
		{"database.password", true},
		{"connection.passwd", true},
		{"db.pwd", true},
		{"aws.secret.access.key", true},
		{"snowflake.oauth.refresh.token", true},
		{"gcs.credentials.json", true},
		{"snowflake.private.key.passphrase", true},
		{"snowflake.private.key", true},
		{"producer.override.sasl.jaas.config", true},
		{"datadog.api.key", true},
		{"aws.access.key.id", true},
		{"value.converter.basic.auth.user.info", true},
		{"PASSWORD", true},
		{"connector.class", false},
		{"connection.url", false},
		{"connection.user", false},
		{"message.key.columns", false},
		{"key.converter", false},
		{"topic.prefix", false},
		{"tasks.max", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			require.Equal(t, tt.secret, IsSecretKey(tt.key))
		})
	}
}

// Passwords inside URIs with user info, and secret parameters of connection strings, are masked
// whatever the key.
func TestMaskCredentials(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "mongodb", in: "mongodb://app:s3cr3t@db:27017", want: "mongodb://app:[hidden]@db:27017"},
		{name: "mongodb+srv with options", in: "mongodb+srv://app:s3cr3t@cluster0.example.net/?retryWrites=true", want: "mongodb+srv://app:[hidden]@cluster0.example.net/?retryWrites=true"},
		{name: "mongodb several hosts", in: "mongodb://app:s3cr3t@h1:27017,h2:27017/db?replicaSet=rs0", want: "mongodb://app:[hidden]@h1:27017,h2:27017/db?replicaSet=rs0"},
		{name: "password with an at sign", in: "https://elastic:p@ss@es:9200", want: "https://elastic:[hidden]@es:9200"},
		{name: "jdbc postgres user info", in: "jdbc:postgresql://app:s3cr3t@pg:5432/shop", want: "jdbc:postgresql://app:[hidden]@pg:5432/shop"},
		{name: "jdbc query password", in: "jdbc:mysql://db:3306/shop?user=app&password=s3cr3t&useSSL=true", want: "jdbc:mysql://db:3306/shop?user=app&password=[hidden]&useSSL=true"},
		{name: "jdbc sqlserver properties", in: "jdbc:sqlserver://db:1433;databaseName=shop;user=app;password=s3cr3t", want: "jdbc:sqlserver://db:1433;databaseName=shop;user=app;password=[hidden]"},
		{name: "jdbc oracle thin", in: "jdbc:oracle:thin:app/s3cr3t@db:1521/ORCL", want: "jdbc:oracle:thin:app/[hidden]@db:1521/ORCL"},
		{name: "embedded jaas password", in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t";`, want: `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="[hidden]";`},
		{name: "user without password", in: "mongodb://app@db:27017", want: "mongodb://app@db:27017"},
		{name: "plain url", in: "http://es:9200", want: "http://es:9200"},
		{name: "not a url", in: "orders,payments", want: "orders,payments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, MaskCredentials(tt.in))
		})
	}
}

// A family's own PASSWORD keys are hidden in addition to the broad rule; URIs are masked; text
// that quotes a secret value has it replaced.
func TestRedactedByAndScrub(t *testing.T) {
	cfg := Config{
		{Key: "connector.class", Value: "X"},
		{Key: "mongodb.connection.string", Value: "mongodb://app:s3cr3t-1@db:27017"},
		{Key: "vendor.signing.material", Value: "s3cr3t-2"},
		{Key: "database.password", Value: "s3cr3t-3"},
		{Key: "nothing", Null: true},
	}
	family := func(key string) bool { return key == "vendor.signing.material" }
	got := cfg.RedactedBy(family)
	require.Equal(t, Config{
		{Key: "connector.class", Value: "X"},
		{Key: "mongodb.connection.string", Value: "mongodb://app:[hidden]@db:27017"},
		{Key: "vendor.signing.material", Value: HiddenValue},
		{Key: "database.password", Value: HiddenValue},
		{Key: "nothing", Null: true},
	}, got)
	require.Equal(t, "s3cr3t-1", MaskCredentials("s3cr3t-1"), "the input is untouched")
	require.Equal(t, "s3cr3t-2", cfg.Redacted()[2].Value, "without the family the name rule does not know the key")

	msg := "Invalid value s3cr3t-2 for vendor.signing.material; could not reach mongodb://app:s3cr3t-1@db:27017 with s3cr3t-3"
	require.Equal(t, "Invalid value [hidden] for vendor.signing.material; could not reach mongodb://app:[hidden]@db:27017 with [hidden]",
		cfg.Scrub(msg, family))
}

// A secret is hidden however a message spells it: trimmed of the blanks around it in the
// config, JSON-escaped (once, or twice when a JSON document quotes another), quoted by Go's
// %q, and when it is shorter than 4 characters wherever it stands as a value token, which
// leaves the rest of the message (numbers, names, other keys' values) as it was.
func TestScrubSpellings(t *testing.T) {
	family := func(key string) bool { return key == "vendor.signing.material" }
	tests := []struct {
		name   string
		config Config
		text   string
		want   string
	}{
		{name: "trimmed in the message",
			config: Config{{Key: "database.password", Value: "  s3cr3t-pw \n"}},
			text:   "login failed for s3cr3t-pw on db",
			want:   "login failed for [hidden] on db"},
		{name: "JSON-escaped quote and backslash",
			config: Config{{Key: "database.password", Value: `pa"ss\word`}},
			text:   `Connect answered 400: {"message":"invalid \"pa\"ss\\word\""}`,
			want:   `Connect answered 400: {"message":"invalid \"[hidden]\""}`},
		{name: "JSON \\u escapes, lowercase and uppercase",
			config: Config{{Key: "database.password", Value: "pässwörd<1>"}},
			text:   `{"a":"p\u00e4ssw\u00f6rd\u003c1\u003e","b":"p\u00E4ssw\u00F6rd<1>"}`,
			want:   `{"a":"[hidden]","b":"[hidden]"}`},
		{name: "escaped twice: a JSON document quoted in a JSON string",
			config: Config{{Key: "vendor.signing.material", Value: `k"ey\1`}},
			text:   `{"error":"{\"config\":{\"vendor.signing.material\":\"k\\\"ey\\\\1\"}}"}`,
			want:   `{"error":"{\"config\":{\"vendor.signing.material\":\"[hidden]\"}}"}`},
		{name: "Go-quoted",
			config: Config{{Key: "database.password", Value: "tab\there\x01"}},
			text:   `value "tab\there\x01" refused`,
			want:   `value "[hidden]" refused`},
		{name: "short secret as a value token",
			config: Config{{Key: "tasks.max", Value: "1"}, {Key: "database.password", Value: "ab"},
				{Key: "connection.url", Value: "mongodb://app:pw@db:27017"}},
			text: `Invalid value ab for configuration database.password: too short; {"database.password":"ab"}; ` +
				`tasks.max=1 partition 1 of connector-ab at abc; could not reach mongodb://app:pw@db:27017`,
			want: `Invalid value [hidden] for configuration database.password: too short; {"database.password":"[hidden]"}; ` +
				`tasks.max=1 partition 1 of connector-ab at abc; could not reach mongodb://app:[hidden]@db:27017`},
		{name: "short secret that is also another key's value",
			config: Config{{Key: "tasks.max", Value: "1"}, {Key: "database.password", Value: "1"}},
			text:   `tasks.max=1 "tasks.max": "1" password 1, partition 10`,
			want:   `tasks.max=1 "tasks.max": "1" password [hidden], partition 10`},
		{name: "a password inside a JAAS value, quoted alone; the username is shown",
			config: Config{{Key: "sasl.jaas.config", Value: `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="Cl3ar-Passw0rd";`}},
			text:   `authentication of alice failed: password 'Cl3ar-Passw0rd' rejected`,
			want:   `authentication of alice failed: password '[hidden]' rejected`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.config.Scrub(tt.text, family))
		})
	}
}
