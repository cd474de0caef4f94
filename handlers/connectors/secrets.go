package connectors

import (
	"slices"
	"strings"
)

// clientSecrets are the Kafka client settings whose ConfigDef type is PASSWORD (SslConfigs and
// SaslConfigs in kafka-clients) and the Schema Registry client's credentials
// (basic.auth.user.info, bearer.auth.token). Any connector config may carry them behind a
// prefix: producer.override., consumer.override., admin.override., MirrorMaker 2's
// source.cluster. and target.cluster., Debezium's schema.history.internal.producer., a
// converter's value.converter. A read-only table.
var clientSecrets = []string{
	"sasl.jaas.config",
	"ssl.key.password",
	"ssl.keystore.password",
	"ssl.keystore.key",
	"ssl.keystore.certificate.chain",
	"ssl.truststore.password",
	"ssl.truststore.certificates",
	"basic.auth.user.info",
	"bearer.auth.token",
}

// IsSecret reports whether key holds a secret by Connect's own rule: its ConfigDef type is
// PASSWORD in the class's family (Class.Secrets) or in the Kafka clients, under any prefix. A
// nil class (not in the registry) knows the client keys only. Keys outside every ConfigDef are
// left to the name rule, events.IsSecretKey, which callers apply too (events.Config.RedactedBy).
func (c *Class) IsSecret(key string) bool {
	if c != nil && slices.Contains(c.Secrets, key) {
		return true
	}
	for _, s := range clientSecrets {
		if key == s || strings.HasSuffix(key, "."+s) {
			return true
		}
	}
	return false
}

// Secret keys of the families: the settings their ConfigDefs type as PASSWORD, as the
// connectors' configuration references list them (not each checked against the code here; a
// key missed here is still hidden when the name rule catches it).
var (
	// debeziumSecrets: io.debezium.relational.RelationalDatabaseConnectorConfig PASSWORD and the
	// binlog connectors' SSL store passwords (MySqlConnectorConfig / BinlogConnectorConfig).
	debeziumSecrets = []string{"database.password", "database.ssl.keystore.password", "database.ssl.truststore.password"}
	// postgresSecrets adds PostgresConnectorConfig.SSL_PASSWORD (the client key's passphrase).
	postgresSecrets = []string{"database.password", "database.sslpassword"}
	// mongoSecrets: MongoDbConnectorConfig PASSWORD and SSL store passwords, and the connection
	// string, which carries the credentials in its user info whatever its ConfigDef type.
	mongoSecrets = []string{"mongodb.password", "mongodb.connection.string", "mongodb.ssl.keystore.password", "mongodb.ssl.truststore.password"}
	// jdbcSecrets: JdbcSourceConnectorConfig / JdbcSinkConfig CONNECTION_PASSWORD.
	jdbcSecrets = []string{"connection.password"}
	// s3Secrets: S3SinkConnectorConfig AWS_SECRET_ACCESS_KEY, SSEA customer key and proxy
	// password (aws.access.key.id is a STRING).
	s3Secrets = []string{"aws.secret.access.key", "s3.sse.customer.key", "s3.proxy.password"}
	// elasticSecrets: ElasticsearchSinkConnectorConfig CONNECTION_PASSWORD and PROXY_PASSWORD;
	// its elastic.https.ssl.* store passwords are client keys behind a prefix.
	elasticSecrets = []string{"connection.password", "proxy.password"}
	// snowflakeSecrets: SnowflakeSinkConnectorConfig's key-pair and OAuth credentials.
	snowflakeSecrets = []string{"snowflake.private.key", "snowflake.private.key.passphrase", "snowflake.oauth.client.secret", "snowflake.oauth.refresh.token"}
)
