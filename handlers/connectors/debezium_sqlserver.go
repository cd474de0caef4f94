package connectors

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Debezium SQL Server.
// Source: debezium/debezium debezium-connector-sqlserver/.../SqlServerPartition.java (HashMap: server, then
// database), SqlServerOffsetContext.java (Loader: (String) commit_lsn and change_lsn through Lsn.valueOf,
// (Long) event_serial_no), SqlServerConnector.java (database.names spread over tasks), Lsn.java;
// Partition {"server", "database"} (2.0+; 1.x single-database mode
// database.dbname: {"server"} only).

// sqlServerLsn is the text form Lsn.valueOf reads: 4, 4 and 2 bytes in hex, or the literal NULL.
var sqlServerLsn = regexp.MustCompile(`^(?:[0-9a-fA-F]{8}:[0-9a-fA-F]{8}:[0-9a-fA-F]{4}|NULL)$`)

func sqlServerClasses() []Class {
	d := dbzConnector{
		partitions:       [][]string{{"server", "database"}, {"server"}},
		nameKey:          "server",
		legacyNameConfig: "database.server.name",
		partition:        sqlServerPartition,
		offset:           sqlServerOffset,
		partitionFlat:    sqlServerPartitionFlat,
		offsetKind:       sqlServerOffsetKind,
	}
	return []Class{{
		Name:          "io.debezium.connector.sqlserver.SqlServerConnector",
		Aliases:       simpleAliases("io.debezium.connector.sqlserver.SqlServerConnector"),
		Type:          Source,
		Validate:      d.validate,
		CheckFlat:     d.checkFlat,
		CheckFlatKeys: d.checkFlatKeys,
		Secrets:       debeziumSecrets,
		Outside:       d.outside(true, false),
		// server before database is also the HashMap order (buckets 1 and 2); spelled out because a
		// task that does not find these exact bytes starts from scratch.
		PartitionOrder: fixedOrder("server", "database"),
		PerEntry:       true,
		Source:         "debezium/debezium SqlServerPartition, SqlServerOffsetContext.Loader (1.x-3.x)",
	}}
}

// sqlServerPartition ties the partition to the config: with database.names set, every partition names
// one of those databases (SQL Server compares names case-insensitively, and the connector replaces the
// configured spelling with the server's); the server-only form belongs to 1.x single-database mode.
func sqlServerPartition(config map[string]string, i int, p jsonvalue.Map) error {
	names := strings.TrimSpace(config["database.names"])
	db, hasDB := p.Get("database")
	if !hasDB {
		if names != "" {
			return entryError(i, p, "the partition must have the keys 'server' and 'database' when database.names is set; the server-only form is read only by 1.x single-database connectors (database.dbname)")
		}
		return nil
	}
	if names == "" {
		return nil
	}
	for _, n := range strings.Split(names, ",") {
		if strings.EqualFold(strings.TrimSpace(n), db.(string)) {
			return nil
		}
	}
	return entryError(i, p, fmt.Sprintf("the partition's 'database' %q is not one of database.names (%s), so no task reads this offset", db, names))
}

func sqlServerOffset(i int, p, o jsonvalue.Map) error {
	for _, key := range []string{"commit_lsn", "change_lsn"} {
		v, ok := o.Get(key)
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString || !sqlServerLsn.MatchString(s) {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be an LSN string such as \"0000002d:00000b48:0003\" (or \"NULL\"), found %s", key, found(v)))
		}
	}
	if err := integerOrNull(i, p, o, "event_serial_no"); err != nil {
		return err
	}
	return dbzCommonOffset(i, p, o)
}

// fixedOrder returns an ordering that puts keys first, in that order, and the other members after them
// in their current order.
func fixedOrder(keys ...string) func(jsonvalue.Map) jsonvalue.Map {
	return func(m jsonvalue.Map) jsonvalue.Map {
		out := make(jsonvalue.Map, 0, len(m))
		for _, k := range keys {
			for _, f := range m {
				if f.Key == k {
					out = append(out, f)
					break
				}
			}
		}
		for _, f := range m {
			if !containsString(keys, f.Key) {
				out = append(out, f)
			}
		}
		return out
	}
}
