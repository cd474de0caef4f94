package connectors

// Outside is the state a connector class keeps outside Connect's topics: what moving one of
// its connectors to another Connect cluster must find there too, besides its config and its
// offsets, or what cannot be moved with them. The zero value: none known.
type Outside struct {
	// NameConfigs are the config keys of a Debezium connector's logical name, the first one
	// set wins (topic.prefix, then the 1.x key); NameKey is the partition key under which
	// every offset of the connector carries that name. Empty for other classes.
	NameConfigs []string
	NameKey     string
	// SchemaHistory: the connector keeps a schema history (Debezium's historized connectors),
	// by default in a Kafka topic whose records carry the offsets' partition.
	SchemaHistory bool
	// ReplicationSlot: the connector's position is held by a replication slot in its
	// database (Debezium PostgreSQL's slot.name).
	ReplicationSlot bool
	// Progress says where a sink keeps its own progress, which wins over its consumer group
	// ("" for a sink that resumes from its group only).
	Progress string
}

// outside is the Outside of a Debezium connector.
func (d dbzConnector) outside(schemaHistory, slot bool) Outside {
	return Outside{NameConfigs: []string{"topic.prefix", d.legacyNameConfig}, NameKey: d.nameKey,
		SchemaHistory: schemaHistory, ReplicationSlot: slot}
}

// Where the sinks that keep their own progress keep it (sinks.go).
const (
	hdfsProgress = "it recovers its offsets from its write-ahead log and the names of the files it committed in HDFS " +
		"(logs.dir, topics.dir), which win over its consumer group"
	icebergProgress = "it commits its consumer group's offsets itself, in the transactions of its commit coordinator, " +
		"and keeps the offsets of its control topic (iceberg.control.topic, default control-iceberg; groups named by " +
		"iceberg.control.group-id-prefix, default cg-control) in the snapshots of its tables"
	snowflakeProgress = "with Snowpipe Streaming it resumes from the offset token of each partition's channel in Snowflake, " +
		"which wins over its consumer group"
)
