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
