package connectors

// Common sink connectors. Connect keeps sink progress only in the consumer group; none of these
// overrides alterOffsets as far as checked, so only the generic rules (ValidateSink) apply and Connect
// answers with the framework-managed success text.
// Sources: confluentinc/kafka-connect-storage-cloud
// kafka-connect-s3/.../S3SinkTask.java @007cd958; confluentinc/kafka-connect-hdfs (WAL recovery, PR #556);
// confluentinc/kafka-connect-jdbc JdbcSinkTask.java; apache/iceberg kafka-connect/.../IcebergSinkTask.java,
// channel/Coordinator.java; snowflakedb/snowflake-kafka-connector .../streaming/TopicPartitionChannel.java.
// Elasticsearch sink: not checked in code.

func commonSinkClasses() []Class {
	sinks := []struct {
		name, source string
		secrets      []string
		progress     string // Outside.Progress
	}{
		{"io.confluent.connect.s3.S3SinkConnector", "confluentinc/kafka-connect-storage-cloud S3SinkTask: consumer group only", s3Secrets, ""},
		{"io.confluent.connect.hdfs.HdfsSinkConnector", "confluentinc/kafka-connect-hdfs: also recovers offsets from its HDFS WAL and file names, which win over the group", nil, hdfsProgress},
		{"io.confluent.connect.hdfs3.Hdfs3SinkConnector", "Confluent HDFS 3 sink: same recovery as the HDFS sink (not checked in code)", nil, hdfsProgress},
		{"io.confluent.connect.jdbc.JdbcSinkConnector", "confluentinc/kafka-connect-jdbc JdbcSinkTask: consumer group only", jdbcSecrets, ""},
		{"io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "confluentinc/kafka-connect-elasticsearch: not checked in code", elasticSecrets, ""},
		{"org.apache.iceberg.connect.IcebergSinkConnector", "apache/iceberg IcebergSinkTask: commits offsets itself in transactions and keeps control-topic offsets in table snapshots", nil, icebergProgress},
		{"io.tabular.iceberg.connect.IcebergSinkConnector", "tabular-io/iceberg-kafka-connect, the predecessor of the Apache Iceberg sink: same offset handling", nil, icebergProgress},
		{"com.snowflake.kafka.connector.SnowflakeSinkConnector", "snowflakedb/snowflake-kafka-connector: with Snowpipe Streaming the channel's offset token wins over the group", snowflakeSecrets, snowflakeProgress},
	}
	out := make([]Class, len(sinks))
	for i, s := range sinks {
		out[i] = Class{Name: s.name, Aliases: simpleAliases(s.name), Type: Sink, Source: s.source, Secrets: s.secrets,
			Outside: Outside{Progress: s.progress}}
	}
	return out
}
