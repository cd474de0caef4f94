package connectors

import "github.com/offsetagent/offsetagent/internal/jsonvalue"

// Debezium PostgreSQL.
// Source: debezium/debezium debezium-connector-postgres/.../PostgresOffsetContext.java (Loader.load:
// readOptionalLong casts lsn, lsn_proc, lsn_commit, txId to Number; (Long) ts_usec; Operation.valueOf of
// messageType; (boolean) last_snapshot_record), PostgresPartition.java, connection/ReplicationMessage.java;
// Partition {"server": <logical name>}; no offset key is required.

// postgresOperations are the names of ReplicationMessage.Operation, which messageType must be.
var postgresOperations = []string{"INSERT", "UPDATE", "DELETE", "TRUNCATE", "MESSAGE", "BEGIN", "COMMIT", "NOOP", "ORIGIN"}

func postgresClasses() []Class {
	d := dbzConnector{
		partitions:       [][]string{{"server"}},
		nameKey:          "server",
		legacyNameConfig: "database.server.name",
		offset:           postgresOffset,
	}
	return []Class{{
		Name:     "io.debezium.connector.postgresql.PostgresConnector",
		Aliases:  simpleAliases("io.debezium.connector.postgresql.PostgresConnector"),
		Type:     Source,
		Validate: d.validate,
		Secrets:  postgresSecrets,
		Outside:  d.outside(false, true),
		Source:   "debezium/debezium PostgresOffsetContext.Loader (1.x-3.x)",
	}}
}

func postgresOffset(i int, p, o jsonvalue.Map) error {
	for _, key := range []string{"lsn", "lsn_proc", "lsn_commit", "txId", "lsn_events_processed"} {
		if err := numberOrNull(i, p, o, key); err != nil {
			return err
		}
	}
	if v, ok := o.Get("ts_usec"); ok {
		// Loaders cast to Long and convert it; a present null fails with a NullPointerException.
		if _, isLong := javaLong(v); !isLong {
			return entryError(i, p, "the offset's 'ts_usec' must be an integer (commit time in epoch microseconds), found "+found(v))
		}
	}
	if v, ok := o.Get("messageType"); ok && v != nil {
		s, _ := v.(string)
		if !containsString(postgresOperations, s) {
			return entryError(i, p, "the offset's 'messageType' must be one of INSERT, UPDATE, DELETE, TRUNCATE, MESSAGE, BEGIN, COMMIT, NOOP, ORIGIN, found "+found(v))
		}
	}
	if v, ok := o.Get("last_snapshot_record"); ok {
		if _, isBool := v.(bool); !isBool {
			return entryError(i, p, "the offset's 'last_snapshot_record' must be a boolean, found "+found(v))
		}
	}
	return dbzCommonOffset(i, p, o)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
