package connectors

import (
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Confluent JDBC source.
// Source: confluentinc/kafka-connect-jdbc branch 10.9.x, src/main/java/io/confluent/connect/jdbc/source/
// OffsetProtocols.java, JdbcSourceConnectorConstants.java, JdbcSourceTask.java (start: V1 then V0 partition
// lookups, only in incrementing/timestamp modes), TimestampIncrementingOffset.java (toMap: new HashMap<>(3);
// fromMap casts every value to Long, setNanos on timestamp_nanos)
// Partitions: table mode {"protocol": "1", "table": <fqn>} (V1, written since 5.0.0) or {"table": <name>}
// (V0, still read); query mode {"query": "query"}. The connector has no alterOffsets.

// jdbcOffsetKeys are the offset keys each mode reads; any other key would be silently ignored.
var jdbcOffsetKeys = map[string][]string{
	"incrementing":           {"incrementing"},
	"timestamp":              {"timestamp", "timestamp_nanos"},
	"timestamp+incrementing": {"incrementing", "timestamp", "timestamp_nanos"},
}

func jdbcSourceClasses() []Class {
	return []Class{{
		Name:     "io.confluent.connect.jdbc.JdbcSourceConnector",
		Aliases:  simpleAliases("io.confluent.connect.jdbc.JdbcSourceConnector"),
		Type:     Source,
		Validate: validateJdbcSource,
		Secrets:  jdbcSecrets,
		// TimestampIncrementingOffset.toMap fills new HashMap<>(3), whose capacity is 4, not 16. For
		// these three keys both capacities give the same order (timestamp_nanos, incrementing,
		// timestamp; checked on a JVM with tools/oracle's ConnectOracle), so the default order is
		// byte-equal to the task's records and OffsetOrder stays nil.
		Source: "confluentinc/kafka-connect-jdbc 10.9.x JdbcSourceTask, TimestampIncrementingOffset",
	}}
}

func validateJdbcSource(config map[string]string, offsets []events.OffsetEntry) error {
	queryMode := strings.TrimSpace(config["query"]) != ""
	mode := strings.TrimSpace(config["mode"])
	for i, e := range offsets {
		if e.Offset == nil {
			continue
		}
		p := e.Partition
		if p == nil {
			return entryError(i, p, "the partition cannot be null; the JDBC source looks offsets up under {\"protocol\":\"1\",\"table\":<table>} or, in query mode, {\"query\":\"query\"}")
		}
		if err := jdbcPartition(i, p, queryMode); err != nil {
			return err
		}
		if mode == "bulk" {
			return entryError(i, p, "mode 'bulk' never reads offsets; give a null offset or none")
		}
		if err := jdbcOffset(i, p, e.Offset, mode); err != nil {
			return err
		}
	}
	return nil
}

func jdbcPartition(i int, p jsonvalue.Map, queryMode bool) error {
	if queryMode {
		if v, _ := p.Get("query"); len(p) != 1 || v != "query" {
			return entryError(i, p, "with 'query' set the partition must be exactly {\"query\":\"query\"}")
		}
		return nil
	}
	if !hasKeySet(p, [][]string{{"protocol", "table"}, {"table"}}) {
		return entryError(i, p, "the partition must be {\"protocol\":\"1\",\"table\":<table>} or the legacy {\"table\":<table>}, found keys "+quoteKeys(mapKeys(p)))
	}
	if v, ok := p.Get("protocol"); ok && v != "1" {
		return entryError(i, p, "the partition's 'protocol' must be the string \"1\", found "+found(v))
	}
	if v, _ := p.Get("table"); v == nil || v == "" {
		return entryError(i, p, "the partition's 'table' must be a non-empty string, found "+found(v))
	} else if _, isString := v.(string); !isString {
		return entryError(i, p, "the partition's 'table' must be a non-empty string, found "+found(v))
	}
	return nil
}

func jdbcOffset(i int, p, o jsonvalue.Map, mode string) error {
	allowed, known := jdbcOffsetKeys[mode]
	if !known {
		allowed = jdbcOffsetKeys["timestamp+incrementing"]
	}
	for _, f := range o {
		if !containsString(allowed, f.Key) {
			if known {
				return entryError(i, p, fmt.Sprintf("mode '%s' reads only the offset keys %s, found '%s'", mode, quoteKeys(allowed), f.Key))
			}
			return entryError(i, p, fmt.Sprintf("the offset may only have the keys %s, found '%s'", quoteKeys(allowed), f.Key))
		}
		if f.Value == nil {
			continue
		}
		if _, isLong := javaLong(f.Value); !isLong {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be an integer (the loader casts it to Long), found %s", f.Key, found(f.Value)))
		}
	}
	nanosValue, _ := o.Get("timestamp_nanos")
	if nanosValue == nil {
		return nil
	}
	if ts, _ := o.Get("timestamp"); ts == nil {
		return entryError(i, p, "the offset's 'timestamp_nanos' is read only together with 'timestamp'")
	}
	if nanos, _ := javaLong(nanosValue); nanos < 0 || nanos > 999999999 {
		return entryError(i, p, fmt.Sprintf("the offset's 'timestamp_nanos' must be between 0 and 999999999 (nanoseconds of the second), found %d", nanos))
	}
	return nil
}
