package cutover

import (
	"math/big"
	"strings"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// offsetOrder compares two source offsets of one partition of a connector family: -1 when a
// is before b, 0 when they are at the same position, 1 when a is after b; ok is false when the
// family's offsets have no order offsetagent knows, or either offset lacks what the order
// needs. The positions are those of docs/connect-internals.md and docs/migration.md (the
// verify step): a task resumes after its committed offset, so the first offset it commits on
// B is after the one placed.
type offsetOrder func(a, b jsonvalue.Map) (cmp int, ok bool)

// orderPart says how one member of an offset's position compares.
type orderPart struct {
	key string
	// kind: 'n' a number (or a string of digits, as Oracle's SCN), 's' a string compared
	// byte by byte (SQL Server's fixed-width hex LSNs), 'f' a MySQL binlog file name
	// (base name, then its numeric extension).
	kind byte
	// optional: an absent member counts as 0 (numbers) or "" (strings).
	optional bool
}

// tupleOrder compares offsets member by member in the order of parts.
func tupleOrder(parts ...orderPart) offsetOrder {
	return func(a, b jsonvalue.Map) (int, bool) {
		if snapshotting(a) || snapshotting(b) {
			// A snapshot's offset marks where the snapshot was, not a stream position.
			return 0, false
		}
		for _, p := range parts {
			c, ok := comparePart(p, a, b)
			if !ok {
				return 0, false
			}
			if c != 0 {
				return c, true
			}
		}
		return 0, true
	}
}

// familyOrders are the families whose offsets have an order, by connector class.
var familyOrders = map[string]offsetOrder{
	"org.apache.kafka.connect.file.FileStreamSourceConnector": tupleOrder(orderPart{key: "position", kind: 'n'}),
	"org.apache.kafka.connect.mirror.MirrorSourceConnector":   tupleOrder(orderPart{key: "offset", kind: 'n'}),
	"io.confluent.connect.jdbc.JdbcSourceConnector":           jdbcOrder,
	"io.debezium.connector.mysql.MySqlConnector":              binlogOrder,
	"io.debezium.connector.mariadb.MariaDbConnector":          binlogOrder,
	"io.debezium.connector.postgresql.PostgresConnector":      postgresOrder,
	"io.debezium.connector.sqlserver.SqlServerConnector":      lsnOrder,
	"io.debezium.connector.db2.Db2Connector":                  lsnOrder,
	"io.debezium.connector.oracle.OracleConnector":            oracleOrder,
	"io.debezium.connector.mongodb.MongoDbConnector":          tupleOrder(orderPart{key: "sec", kind: 'n'}, orderPart{key: "ord", kind: 'n', optional: true}),
}

var (
	binlogOrder = tupleOrder(orderPart{key: "file", kind: 'f'}, orderPart{key: "pos", kind: 'n'},
		orderPart{key: "event", kind: 'n', optional: true}, orderPart{key: "row", kind: 'n', optional: true})
	lsnOrder = tupleOrder(orderPart{key: "commit_lsn", kind: 's'}, orderPart{key: "change_lsn", kind: 's', optional: true},
		orderPart{key: "event_serial_no", kind: 'n', optional: true})
)

// jdbcOrder: timestamp (with its nanos) first, then the incrementing column; a connector in
// incrementing mode has only the latter.
func jdbcOrder(a, b jsonvalue.Map) (int, bool) {
	if _, ok := a.Get("timestamp"); ok {
		return tupleOrder(orderPart{key: "timestamp", kind: 'n'}, orderPart{key: "timestamp_nanos", kind: 'n', optional: true},
			orderPart{key: "incrementing", kind: 'n', optional: true})(a, b)
	}
	return tupleOrder(orderPart{key: "incrementing", kind: 'n'})(a, b)
}

// oracleOrder: what was emitted, the commit_scn of each redo thread (newOracleRule reads it),
// then the low watermark scn (where mining restarts, which a transaction left open holds back
// while commits go on), then, inside one transaction emitted in part (txId, Debezium 3.2 and
// later), the events of it emitted (txSeq). An offset without commit_scn has its scn only.
// Two offsets one of whose threads is ahead and another behind have no order.
func oracleOrder(a, b jsonvalue.Map) (int, bool) {
	scn := tupleOrder(orderPart{key: "scn", kind: 'n'})
	ra, rb := newOracleRule(a).(*oracleRule), newOracleRule(b).(*oracleRule)
	if !ra.ok || !rb.ok || snapshotting(a) || snapshotting(b) {
		return scn(a, b)
	}
	c := 0
	for thread, ca := range ra.commits {
		cb, ok := rb.commits[thread]
		if !ok {
			return 0, false
		}
		switch d := ca.scn.Cmp(cb.scn); {
		case d != 0 && c != 0 && d != c:
			return 0, false
		case d != 0:
			c = d
		}
	}
	if len(ra.commits) != len(rb.commits) {
		return 0, false
	}
	if c != 0 {
		return c, true
	}
	if c, ok := scn(a, b); !ok || c != 0 {
		return c, ok
	}
	if ra.partial == "" || ra.partial != rb.partial {
		return 0, true
	}
	return tupleOrder(orderPart{key: "txSeq", kind: 'n', optional: true})(a, b)
}

// postgresOrder: the commit LSN (lsn_proc when there is none, as Debezium's loader falls
// back), then the last processed LSN and the events processed at it.
func postgresOrder(a, b jsonvalue.Map) (int, bool) {
	withCommit := func(m jsonvalue.Map) jsonvalue.Map {
		if _, ok := m.Get("lsn_commit"); ok {
			return m
		}
		if v, ok := m.Get("lsn_proc"); ok {
			return append(m[:len(m):len(m)], jsonvalue.Field{Key: "lsn_commit", Value: v})
		}
		return m
	}
	return tupleOrder(orderPart{key: "lsn_commit", kind: 'n'}, orderPart{key: "lsn_proc", kind: 'n', optional: true},
		orderPart{key: "lsn", kind: 'n', optional: true}, orderPart{key: "lsn_events_processed", kind: 'n', optional: true})(withCommit(a), withCommit(b))
}

// orderOf is the order of the offsets of connector class (a name or an alias that reg knows);
// nil when they have none known.
func orderOf(reg *connectors.Registry, class string) offsetOrder {
	if c, ok := reg.Lookup(class); ok {
		class = c.Name
	}
	return familyOrders[class]
}

// snapshotting reports whether a Debezium offset is one of a snapshot in progress.
func snapshotting(m jsonvalue.Map) bool {
	v, ok := m.Get("snapshot")
	if !ok {
		return false
	}
	if done, _ := m.Get("snapshot_completed"); done == true {
		return false
	}
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v != "" && !strings.EqualFold(v, "false")
	}
	return false
}

func comparePart(p orderPart, a, b jsonvalue.Map) (int, bool) {
	va, oka := a.Get(p.key)
	vb, okb := b.Get(p.key)
	if (!oka || !okb) && !p.optional {
		return 0, false
	}
	switch p.kind {
	case 'n':
		na, ok1 := number(va, oka)
		nb, ok2 := number(vb, okb)
		if !ok1 || !ok2 {
			return 0, false
		}
		return na.Cmp(nb), true
	case 'f':
		sa, ok1 := va.(string)
		sb, ok2 := vb.(string)
		if !ok1 || !ok2 {
			return 0, false
		}
		return compareBinlogFile(sa, sb)
	default:
		sa, ok1 := text(va, oka)
		sb, ok2 := text(vb, okb)
		if !ok1 || !ok2 {
			return 0, false
		}
		return strings.Compare(strings.ToLower(sa), strings.ToLower(sb)), true
	}
}

// text reads a JSON string; an absent member or a null is "".
func text(v any, present bool) (string, bool) {
	if !present || v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

// number reads a JSON number, or a string of digits, as a big.Float; an absent member is 0.
func number(v any, present bool) (*big.Float, bool) {
	if !present || v == nil {
		return new(big.Float), true
	}
	var s string
	switch v := v.(type) {
	case jsonvalue.Number:
		s = string(v)
	case string:
		s = v
	default:
		return nil, false
	}
	f, ok := new(big.Float).SetPrec(256).SetString(s)
	return f, ok
}

// compareBinlogFile compares MySQL binlog file names: the same base name, then the numeric
// extension (mysql-bin.000009 < mysql-bin.000010); files of two base names have no order.
func compareBinlogFile(a, b string) (int, bool) {
	ia, ib := strings.LastIndexByte(a, '.'), strings.LastIndexByte(b, '.')
	if ia < 0 || ib < 0 || a[:ia] != b[:ib] {
		return 0, a == b
	}
	na, ok1 := new(big.Int).SetString(a[ia+1:], 10)
	nb, ok2 := new(big.Int).SetString(b[ib+1:], 10)
	if !ok1 || !ok2 {
		return 0, false
	}
	return na.Cmp(nb), true
}
