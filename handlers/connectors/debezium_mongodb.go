package connectors

import "github.com/offsetagent/offsetagent/internal/jsonvalue"

// Debezium MongoDB.
// Source: debezium/debezium debezium-connector-mongodb/.../MongoDbPartition.java, MongoDbOffsetContext.java
// (Loader: intOffsetValue of sec and ord, longOffsetValue of txnNumber, (String) resume_token and lsid),
// MongoDbConnectorTask.java (getPreviousOffsets: 2.6+ falls back to the ≤2.5 {rs, server_id} keys),
// v1.9.7.Final MongoDbConnectorConfig.java (logical name mongodb.name)
// Partition {"server_id"} (2.6+) or {"rs", "server_id"} (≤2.5, still read as a fallback).

func mongoClasses() []Class {
	d := dbzConnector{
		partitions:       [][]string{{"server_id"}, {"rs", "server_id"}},
		nameKey:          "server_id",
		legacyNameConfig: "mongodb.name",
		offset:           mongoOffset,
	}
	return []Class{{
		Name:     "io.debezium.connector.mongodb.MongoDbConnector",
		Aliases:  simpleAliases("io.debezium.connector.mongodb.MongoDbConnector"),
		Type:     Source,
		Validate: d.validate,
		Secrets:  mongoSecrets,
		Outside:  d.outside(false, false),
		Source:   "debezium/debezium MongoDbPartition, MongoDbOffsetContext.Loader (1.x-3.x)",
	}}
}

func mongoOffset(i int, p, o jsonvalue.Map) error {
	for _, key := range []string{"sec", "ord"} {
		if _, err := dbzInteger(o, key, 32, "an integer"); err != nil {
			return err
		}
	}
	if _, err := dbzLong(o, "txnNumber"); err != nil {
		return err
	}
	for _, key := range []string{"resume_token", "lsid"} {
		if err := stringOrNull(i, p, o, key); err != nil {
			return err
		}
	}
	return dbzCommonOffset(i, p, o)
}
