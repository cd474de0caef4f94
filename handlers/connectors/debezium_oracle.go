package connectors

import (
	"fmt"
	"regexp"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Debezium Oracle.
// Source: debezium/debezium debezium-connector-oracle/.../OraclePartition.java, OracleOffsetContext.java,
// Scn.java (Scn.valueOf: new BigInteger(text)), logminer/buffered/BufferedLogMinerOracleOffsetContextLoader.java
// and the unbuffered, XStream and OpenLogReplicator loaders
// Partition {"server": <logical name>}. snapshot_pending_tx, txId, txSeq and window_advance_enabled are
// read only when they have the right type, so they cannot fail.

// oracleScn is the text of an SCN.
var oracleScn = regexp.MustCompile(`^[0-9]+$`)

func oracleClasses() []Class {
	d := dbzConnector{
		partitions:       [][]string{{"server"}},
		nameKey:          "server",
		legacyNameConfig: "database.server.name",
		offset:           oracleOffset,
	}
	return []Class{{
		Name:     "io.debezium.connector.oracle.OracleConnector",
		Aliases:  simpleAliases("io.debezium.connector.oracle.OracleConnector"),
		Type:     Source,
		Validate: d.validate,
		Secrets:  debeziumSecrets,
		Outside:  d.outside(true, false),
		Source:   "debezium/debezium OraclePartition, Oracle offset context loaders (1.x-3.x)",
	}}
}

func oracleOffset(i int, p, o jsonvalue.Map) error {
	// scn and snapshot_scn: a decimal string, or the legacy JSON integer form.
	for _, key := range []string{"scn", "snapshot_scn"} {
		v, ok := o.Get(key)
		if !ok || v == nil {
			continue
		}
		if _, isLong := javaLong(v); isLong {
			continue
		}
		if s, isString := v.(string); !isString || !oracleScn.MatchString(s) {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be a decimal SCN string such as \"2885432\", found %s", key, found(v)))
		}
	}
	// commit_scn: a list of scn:thread:txid entries, or an integer read as thread 1.
	if v, ok := o.Get("commit_scn"); ok && v != nil {
		if _, isString := v.(string); !isString {
			if _, isLong := javaLong(v); !isLong {
				return entryError(i, p, "the offset's 'commit_scn' must be a string such as \"2885432:1:\", an integer or null, found "+found(v))
			}
		}
	}
	if err := integerOrNull(i, p, o, "scn_idx"); err != nil {
		return err
	}
	if err := stringOrNull(i, p, o, "lcr_position"); err != nil {
		return err
	}
	return dbzCommonOffset(i, p, o)
}
