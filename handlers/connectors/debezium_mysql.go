package connectors

import (
	"fmt"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Debezium MySQL and MariaDB (MariaDB is its own connector since 2.7.0 with the same loader).
// Source: debezium/debezium debezium-connector-mysql/.../MySqlOffsetContext.java (Loader.load),
// debezium-connector-mariadb/.../MariaDbOffsetContext.java, debezium-connector-binlog/.../BinlogPartition.java
// (2.7+), v1.9.7.Final .../mysql/MySqlOffsetContext.java
// Partition {"server": <logical name>}; the offset's 'file' is required.

func mysqlClasses() []Class {
	d := dbzConnector{
		partitions:       [][]string{{"server"}},
		nameKey:          "server",
		legacyNameConfig: "database.server.name",
		offset:           binlogOffset,
	}
	mk := func(name string) Class {
		return Class{
			Name:     name,
			Aliases:  simpleAliases(name),
			Type:     Source,
			Validate: d.validate,
			Secrets:  debeziumSecrets,
			Outside:  d.outside(true, false),
			Source:   "debezium/debezium MySqlOffsetContext.Loader / MariaDbOffsetContext.Loader (1.x-3.x)",
		}
	}
	return []Class{
		mk("io.debezium.connector.mysql.MySqlConnector"),
		mk("io.debezium.connector.mariadb.MariaDbConnector"),
	}
}

// binlogOffset is the binlog connectors' Loader.load: (String) file, required; longOffsetValue of pos,
// event and row (row then narrowed to int); (String) gtids.
func binlogOffset(i int, p, o jsonvalue.Map) error {
	file, _ := o.Get("file")
	if file == nil {
		return badRequest("Source offset 'file' parameter is missing")
	}
	if _, ok := file.(string); !ok {
		return entryError(i, p, "the offset's 'file' must be a string (the binlog file name), found "+found(file))
	}
	for _, key := range []string{"pos", "event", "row"} {
		n, err := dbzLong(o, key)
		if err != nil {
			return err
		}
		if key == "row" && n != int64(int32(n)) {
			return entryError(i, p, fmt.Sprintf("the offset's 'row' is %d, which does not fit the int the connector narrows it to", n))
		}
	}
	if err := stringOrNull(i, p, o, "gtids"); err != nil {
		return err
	}
	return dbzCommonOffset(i, p, o)
}
