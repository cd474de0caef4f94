package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// Real config keys of the Debezium, JDBC, Snowflake, S3, Elasticsearch, MongoDB and MirrorMaker 2
// connectors: redacted by the family's PASSWORD-type keys where the class is known, by the name
// rule otherwise, with passwords inside URIs masked. want is the redacted value of "s3cr3t" (or of
// the URI given).
func TestRedactRealConnectorKeys(t *testing.T) {
	const (
		dbzMySQL    = "io.debezium.connector.mysql.MySqlConnector"
		dbzPostgres = "io.debezium.connector.postgresql.PostgresConnector"
		dbzSQL      = "io.debezium.connector.sqlserver.SqlServerConnector"
		dbzOracle   = "io.debezium.connector.oracle.OracleConnector"
		dbzMongo    = "io.debezium.connector.mongodb.MongoDbConnector"
		jdbcSource  = "io.confluent.connect.jdbc.JdbcSourceConnector"
		jdbcSink    = "io.confluent.connect.jdbc.JdbcSinkConnector"
		snowflake   = "com.snowflake.kafka.connector.SnowflakeSinkConnector"
		s3          = "io.confluent.connect.s3.S3SinkConnector"
		elastic     = "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector"
		mongoSink   = "com.mongodb.kafka.connect.MongoSinkConnector" // not in the registry: name rule only
		mm2         = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
		mm2Ckpt     = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
	)
	const h = events.HiddenValue
	tests := []struct {
		name, class, key, value, want string
	}{
		// Debezium
		{name: "mysql database.password", class: dbzMySQL, key: "database.password", value: "s3cr3t", want: h},
		{name: "mysql database.ssl.keystore.password", class: dbzMySQL, key: "database.ssl.keystore.password", value: "s3cr3t", want: h},
		{name: "mysql database.ssl.truststore.password", class: dbzMySQL, key: "database.ssl.truststore.password", value: "s3cr3t", want: h},
		{name: "mysql schema history producer jaas", class: dbzMySQL, key: "schema.history.internal.producer.sasl.jaas.config", value: "s3cr3t", want: h},
		{name: "mysql schema history consumer ssl key", class: dbzMySQL, key: "schema.history.internal.consumer.ssl.key.password", value: "s3cr3t", want: h},
		{name: "mysql database.user is shown", class: dbzMySQL, key: "database.user", value: "debezium", want: "debezium"},
		{name: "mysql database.hostname is shown", class: dbzMySQL, key: "database.hostname", value: "mysql", want: "mysql"},
		{name: "postgres database.password", class: dbzPostgres, key: "database.password", value: "s3cr3t", want: h},
		{name: "postgres database.sslpassword", class: dbzPostgres, key: "database.sslpassword", value: "s3cr3t", want: h},
		{name: "postgres database.sslkey is a path", class: dbzPostgres, key: "database.sslkey", value: "/etc/ssl/client.key", want: "/etc/ssl/client.key"},
		{name: "sqlserver database.password", class: dbzSQL, key: "database.password", value: "s3cr3t", want: h},
		{name: "oracle database.password", class: dbzOracle, key: "database.password", value: "s3cr3t", want: h},
		{name: "oracle database.url", class: dbzOracle, key: "database.url", value: "jdbc:oracle:thin:dbz/s3cr3t@db:1521/ORCLCDB", want: "jdbc:oracle:thin:dbz/[hidden]@db:1521/ORCLCDB"},
		// MongoDB
		{name: "debezium mongodb.connection.string", class: dbzMongo, key: "mongodb.connection.string", value: "mongodb://dbz:s3cr3t@mongo:27017/?replicaSet=rs0", want: h},
		{name: "debezium mongodb.password", class: dbzMongo, key: "mongodb.password", value: "s3cr3t", want: h},
		{name: "debezium mongodb.ssl.keystore.password", class: dbzMongo, key: "mongodb.ssl.keystore.password", value: "s3cr3t", want: h},
		{name: "mongodb sink connection.uri", class: mongoSink, key: "connection.uri", value: "mongodb+srv://app:s3cr3t@cluster0.example.net/shop", want: "mongodb+srv://app:[hidden]@cluster0.example.net/shop"},
		{name: "mongodb sink database is shown", class: mongoSink, key: "database", value: "shop", want: "shop"},
		// JDBC
		{name: "jdbc source connection.password", class: jdbcSource, key: "connection.password", value: "s3cr3t", want: h},
		{name: "jdbc source connection.url with password", class: jdbcSource, key: "connection.url", value: "jdbc:mysql://db:3306/shop?user=app&password=s3cr3t", want: "jdbc:mysql://db:3306/shop?user=app&password=[hidden]"},
		{name: "jdbc source connection.user is shown", class: jdbcSource, key: "connection.user", value: "app", want: "app"},
		{name: "jdbc sink connection.password", class: jdbcSink, key: "connection.password", value: "s3cr3t", want: h},
		{name: "jdbc sink connection.url with user info", class: jdbcSink, key: "connection.url", value: "jdbc:postgresql://app:s3cr3t@pg:5432/shop", want: "jdbc:postgresql://app:[hidden]@pg:5432/shop"},
		// Snowflake
		{name: "snowflake.private.key", class: snowflake, key: "snowflake.private.key", value: "MIIEv-s3cr3t", want: h},
		{name: "snowflake.private.key.passphrase", class: snowflake, key: "snowflake.private.key.passphrase", value: "s3cr3t", want: h},
		{name: "snowflake.oauth.client.secret", class: snowflake, key: "snowflake.oauth.client.secret", value: "s3cr3t", want: h},
		{name: "snowflake.oauth.refresh.token", class: snowflake, key: "snowflake.oauth.refresh.token", value: "s3cr3t", want: h},
		{name: "snowflake.user.name is shown", class: snowflake, key: "snowflake.user.name", value: "kafka", want: "kafka"},
		// S3
		{name: "s3 aws.secret.access.key", class: s3, key: "aws.secret.access.key", value: "s3cr3t", want: h},
		{name: "s3 s3.sse.customer.key", class: s3, key: "s3.sse.customer.key", value: "s3cr3t", want: h},
		{name: "s3 s3.proxy.password", class: s3, key: "s3.proxy.password", value: "s3cr3t", want: h},
		{name: "s3 s3.bucket.name is shown", class: s3, key: "s3.bucket.name", value: "archive", want: "archive"},
		// Elasticsearch
		{name: "elastic connection.password", class: elastic, key: "connection.password", value: "s3cr3t", want: h},
		{name: "elastic proxy.password", class: elastic, key: "proxy.password", value: "s3cr3t", want: h},
		{name: "elastic https keystore password", class: elastic, key: "elastic.https.ssl.keystore.password", value: "s3cr3t", want: h},
		{name: "elastic https truststore password", class: elastic, key: "elastic.https.ssl.truststore.password", value: "s3cr3t", want: h},
		{name: "elastic connection.url with user info", class: elastic, key: "connection.url", value: "https://elastic:s3cr3t@es:9200", want: "https://elastic:[hidden]@es:9200"},
		{name: "elastic connection.username is shown", class: elastic, key: "connection.username", value: "elastic", want: "elastic"},
		// MirrorMaker 2
		{name: "mm2 source.cluster.sasl.jaas.config", class: mm2, key: "source.cluster.sasl.jaas.config", value: `org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="s3cr3t";`, want: h},
		{name: "mm2 target.cluster.ssl.key.password", class: mm2, key: "target.cluster.ssl.key.password", value: "s3cr3t", want: h},
		{name: "mm2 source.cluster.ssl.keystore.password", class: mm2, key: "source.cluster.ssl.keystore.password", value: "s3cr3t", want: h},
		{name: "mm2 source.cluster.ssl.truststore.password", class: mm2, key: "source.cluster.ssl.truststore.password", value: "s3cr3t", want: h},
		{name: "mm2 source.cluster.ssl.keystore.key (PEM)", class: mm2, key: "source.cluster.ssl.keystore.key", value: "-----BEGIN s3cr3t", want: h},
		{name: "mm2 target.cluster.ssl.keystore.certificate.chain", class: mm2, key: "target.cluster.ssl.keystore.certificate.chain", value: "-----BEGIN s3cr3t", want: h},
		{name: "mm2 checkpoint target.admin.sasl.jaas.config", class: mm2Ckpt, key: "target.cluster.admin.sasl.jaas.config", value: "s3cr3t", want: h},
		{name: "mm2 source.cluster.bootstrap.servers is shown", class: mm2, key: "source.cluster.bootstrap.servers", value: "src:9092", want: "src:9092"},
		// Any class: Schema Registry converter credentials and overrides
		{name: "converter basic.auth.user.info", class: s3, key: "value.converter.basic.auth.user.info", value: "sr:s3cr3t", want: h},
		{name: "converter bearer.auth.token", class: jdbcSink, key: "value.converter.bearer.auth.token", value: "s3cr3t", want: h},
		{name: "producer override truststore certificates", class: dbzPostgres, key: "producer.override.ssl.truststore.certificates", value: "-----BEGIN s3cr3t", want: h},
		{name: "unknown class, broad rule", class: "com.example.VendorSink", key: "vendor.api.key", value: "s3cr3t", want: h},
	}
	reg := Builtin()
	classes := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := reg.Lookup(tt.class)
			cfg := events.Config{{Key: "connector.class", Value: tt.class}, {Key: tt.key, Value: tt.value}}
			got := cfg.RedactedBy(c.IsSecret)
			require.Equal(t, tt.want, got[1].Value)
			if tt.want != tt.value {
				require.NotContains(t, got[1].Value, "s3cr3t")
			}
		})
		classes[tt.class] = true
	}
	require.GreaterOrEqual(t, len(tests), 30)
	require.Len(t, classes, 14)
}

// Every class's secret list names keys the family's ConfigDef types as PASSWORD; a nil class
// (unknown) still knows the Kafka client ones.
func TestClassIsSecret(t *testing.T) {
	var unknown *Class
	require.True(t, unknown.IsSecret("producer.override.ssl.keystore.certificate.chain"))
	require.False(t, unknown.IsSecret("database.password"), "the broad name rule is events.IsSecretKey's job")
	c, ok := Builtin().Lookup("MySqlConnector")
	require.True(t, ok)
	require.True(t, c.IsSecret("database.password"))
	require.False(t, c.IsSecret("database.user"))
}
