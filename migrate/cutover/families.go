package cutover

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Where a change event stands against the offset placed is each Debezium family's own
// question: its offset is where its connector restarts, and a change event's source block says
// where the change is, and the two are not the same thing (docs/migration.md, "Verifying the
// cutover", has the table):
//
//   - MySQL, MariaDB: the offset's file and pos are where the transaction being processed began
//     (its BEGIN, or MariaDB's GTID event), event how many of its events were done and row how
//     many rows of the next one; a change event carries its own row event's file, pos and row.
//     Debezium restarts at pos, skips event events (the BEGIN or GTID is the first) and row rows.
//   - PostgreSQL: the offset is the last event processed (lsn, in transaction txId) and the
//     last commit (lsn_commit); events come in commit order, each at its change's lsn.
//   - SQL Server, Db2: the offset and a change event both carry commit_lsn, change_lsn and
//     event_serial_no: the same position, compared member by member.
//   - Oracle: the offset's scn is a low watermark (where mining restarts: the start of the oldest
//     transaction still open), not what was emitted; its commit_scn says, per redo thread, the
//     last commit emitted and the transactions committed at it. A change event carries its
//     transaction's commit_scn, its redo_thread and txId. A transaction is emitted whole at its
//     commit, unless the offset names it (txId, Debezium 3.2 and later: txSeq of its events were
//     emitted).
//   - MongoDB: the offset and a change event both carry the event's cluster time (sec, with ord
//     its order in that second; the event's ts_ms in its source block); the events of one
//     multi-document transaction share it (lsid, txnNumber).

// coverage is where a change event stands against the offset placed.
type coverage int8

const (
	// coverUnknown: the offset placed does not say (a record inside the transaction the
	// offset is in, where the family's positions do not count events).
	coverUnknown coverage = iota
	// coverBefore: the offset placed covers it: A produced it before its offset, and B, resuming
	// from the offset, does not produce it again.
	coverBefore
	// coverAfter: past the offset placed: B produces it.
	coverAfter
)

// recordFamily says where a family's change events carry their position and how one stands
// against the offset placed.
type recordFamily struct {
	// position is the position of a change event's source block, in the members its order
	// compares and the report shows (false: the block has none).
	position func(src jsonvalue.Map) (jsonvalue.Map, bool)
	// order orders two records' positions.
	order offsetOrder
	// rule is the family's reading of the offset placed.
	rule func(placed jsonvalue.Map) offsetRule
}

// offsetRule is a family's reading of the offset placed, for the records of one partition.
type offsetRule interface {
	// see is told of each record read (A's and B's) before cover is asked of any.
	see(r *recordSeen, ofA bool)
	// cover says where a record stands against the offset placed.
	cover(r *recordSeen, ofA bool) coverage
	// resumes says why B's first record cannot be where B's connector resumed from the offset
	// placed ("" when it can).
	resumes(first *recordSeen) string
	// trustsB: a B record the offset does not place (coverUnknown) is taken as where B's
	// connector resumed, and A's records from it on as produced again. Not so for a family
	// where B's first record may hold a change from before the offset placed in a transaction
	// A never produced (PostgreSQL's interleaved transactions): there the offsets decide.
	trustsB() bool
}

// recordFamilies are the families whose records carry a position, by connector class.
var recordFamilies = map[string]recordFamily{
	"io.debezium.connector.postgresql.PostgresConnector": {position: members("lsn"), order: postgresRecordOrder, rule: newPostgresRule},
	"io.debezium.connector.mysql.MySqlConnector":         {position: members("file", "pos", "row"), order: binlogRecordOrder, rule: newBinlogRule},
	"io.debezium.connector.mariadb.MariaDbConnector":     {position: members("file", "pos", "row"), order: binlogRecordOrder, rule: newBinlogRule},
	"io.debezium.connector.sqlserver.SqlServerConnector": {position: members("commit_lsn", "change_lsn", "event_serial_no"), order: lsnOrder,
		rule: tupleRule(lsnOrder)},
	"io.debezium.connector.db2.Db2Connector": {position: members("commit_lsn", "change_lsn", "event_serial_no"), order: lsnOrder,
		rule: tupleRule(lsnOrder)},
	"io.debezium.connector.oracle.OracleConnector": {position: members("commit_scn", "scn", "redo_thread", "txId"), order: oracleRecordOrder,
		rule: newOracleRule},
	"io.debezium.connector.mongodb.MongoDbConnector": {position: mongoPosition, order: mongoOrder, rule: newMongoRule},
}

// recordFamilyOf is the record family of connector class (a name or an alias reg knows).
func recordFamilyOf(reg *connectors.Registry, class string) (recordFamily, bool) {
	if c, ok := reg.Lookup(class); ok {
		class = c.Name
	}
	f, ok := recordFamilies[class]
	return f, ok
}

// binlogRecordOrder orders MySQL change events: binlog file, position of their row event, row.
var binlogRecordOrder = tupleOrder(orderPart{key: "file", kind: 'f'}, orderPart{key: "pos", kind: 'n'}, orderPart{key: "row", kind: 'n', optional: true})

// oracleRecordOrder orders Oracle change events: their transaction's commit, then their change.
var oracleRecordOrder = tupleOrder(orderPart{key: "commit_scn", kind: 'n'}, orderPart{key: "scn", kind: 'n', optional: true})

// mongoOrder orders MongoDB's cluster times.
var mongoOrder = tupleOrder(orderPart{key: "sec", kind: 'n'}, orderPart{key: "ord", kind: 'n', optional: true})

// postgresRecordOrder compares a change event's lsn with another's, or with the offset's lsn
// (the last event's processed; lsn_proc when there is none).
func postgresRecordOrder(a, b jsonvalue.Map) (int, bool) {
	lsn := func(m jsonvalue.Map) jsonvalue.Map {
		if _, ok := m.Get("lsn"); ok {
			return m
		}
		if v, ok := m.Get("lsn_proc"); ok {
			return jsonvalue.Map{{Key: "lsn", Value: v}}
		}
		return m
	}
	return tupleOrder(orderPart{key: "lsn", kind: 'n'})(lsn(a), lsn(b))
}

// members is a position of the source block's members keys (those present); false when the
// first is absent.
func members(keys ...string) func(jsonvalue.Map) (jsonvalue.Map, bool) {
	return func(src jsonvalue.Map) (jsonvalue.Map, bool) {
		var pos jsonvalue.Map
		for i, k := range keys {
			v, ok := src.Get(k)
			if !ok || v == nil {
				if i == 0 {
					return nil, false
				}
				continue
			}
			pos = append(pos, jsonvalue.Field{Key: k, Value: v})
		}
		return pos, true
	}
}

// mongoPosition: MongoDB's offset has the event's seconds (sec) and its order in them (ord);
// the source block has the milliseconds (ts_ms) and ord.
func mongoPosition(src jsonvalue.Map) (jsonvalue.Map, bool) {
	ms, ok := src.Get("ts_ms")
	n, ok2 := ms.(jsonvalue.Number)
	if !ok || !ok2 {
		return nil, false
	}
	v, ok := new(big.Int).SetString(string(n), 10)
	if !ok {
		return nil, false
	}
	pos := jsonvalue.Map{{Key: "sec", Value: jsonvalue.Number(v.Quo(v, big.NewInt(1000)).String())}}
	if ord, ok := src.Get("ord"); ok {
		pos = append(pos, jsonvalue.Field{Key: "ord", Value: ord})
	}
	return pos, true
}

// orderedRule places a record by comparing its position with the offset's, member by member
// (SQL Server, Db2: the offset and the source block carry the same position).
type orderedRule struct {
	placed jsonvalue.Map
	order  offsetOrder
}

func tupleRule(order offsetOrder) func(jsonvalue.Map) offsetRule {
	return func(placed jsonvalue.Map) offsetRule { return orderedRule{placed: placed, order: order} }
}

func (orderedRule) see(*recordSeen, bool)                  {}
func (orderedRule) resumes(*recordSeen) string             { return "" }
func (orderedRule) trustsB() bool                          { return true }
func (o orderedRule) cover(r *recordSeen, _ bool) coverage { return byOrder(o.order, r.pos, o.placed) }

// byOrder is coverBefore when pos is at or before placed in order, coverAfter past it.
func byOrder(order offsetOrder, pos, placed jsonvalue.Map) coverage {
	c, ok := order(pos, placed)
	switch {
	case !ok:
		return coverUnknown
	case c <= 0:
		return coverBefore
	default:
		return coverAfter
	}
}

// mongoRule: a record at the offset's cluster time is the event of the offset, unless both are
// of one multi-document transaction, whose events share it: its resume token, not in the
// source block, says which.
type mongoRule struct{ placed jsonvalue.Map }

func newMongoRule(placed jsonvalue.Map) offsetRule { return mongoRule{placed: placed} }

func (mongoRule) see(*recordSeen, bool)      {}
func (mongoRule) resumes(*recordSeen) string { return "" }
func (mongoRule) trustsB() bool              { return true }
func (m mongoRule) cover(r *recordSeen, _ bool) coverage {
	cov := byOrder(mongoOrder, r.pos, m.placed)
	if c, ok := mongoOrder(r.pos, m.placed); ok && c == 0 {
		lsid, _ := m.placed.Get("lsid")
		txn, _ := m.placed.Get("txnNumber")
		rl, _ := r.src.Get("lsid")
		rt, _ := r.src.Get("txnNumber")
		if lsid != nil && fmt.Sprint(lsid) == fmt.Sprint(rl) && fmt.Sprint(txn) == fmt.Sprint(rt) {
			return coverUnknown
		}
	}
	return cov
}

// binlogRule reads a MySQL or MariaDB offset: restart at file and pos, skip event events (the
// transaction's BEGIN or GTID event is the first) and then row rows. A change event's pos is
// its row event's: before the offset's pos it is of an earlier transaction (covered); with
// no event to skip, the offset is between transactions and every event at or past pos is new.
// Inside the transaction the offset is in, a record's position does not say how many events
// precede it, only that the k-th row event after the transaction's start is at least its event
// k+1 (a TABLE_MAP precedes the first one): a record there with k+1 past event (or at it, with
// row at least row) is new; the others are placed by B's first record.
type binlogRule struct {
	file       string
	pos        *big.Float
	event, row *big.Float
	ok         bool
	// after are the smallest distinct row-event positions seen past pos in file (at most
	// event of them: their ranks are what the rule needs).
	after []*big.Float
}

func newBinlogRule(placed jsonvalue.Map) offsetRule {
	b := &binlogRule{}
	f, _ := placed.Get("file")
	b.file, b.ok = f.(string)
	pv, hasPos := placed.Get("pos")
	ev, hasEvent := placed.Get("event")
	rv, hasRow := placed.Get("row")
	var ok1, ok2, ok3 bool
	b.pos, ok1 = number(pv, hasPos)
	b.event, ok2 = number(ev, hasEvent)
	b.row, ok3 = number(rv, hasRow)
	b.ok = b.ok && hasPos && ok1 && ok2 && ok3
	return b
}

func (b *binlogRule) trustsB() bool { return true }

// at is where r is against the offset's file: the comparison of its file and its pos.
func (b *binlogRule) at(r *recordSeen) (fileCmp int, pos, row *big.Float, ok bool) {
	f, _ := r.pos.Get("file")
	file, isStr := f.(string)
	pv, hasPos := r.pos.Get("pos")
	rv, hasRow := r.pos.Get("row")
	if !b.ok || !isStr || !hasPos {
		return 0, nil, nil, false
	}
	c, ok := compareBinlogFile(file, b.file)
	pos, ok1 := number(pv, true)
	row, ok2 := number(rv, hasRow)
	return c, pos, row, ok && ok1 && ok2
}

func (b *binlogRule) see(r *recordSeen, _ bool) {
	c, pos, _, ok := b.at(r)
	if !ok || c != 0 || pos.Cmp(b.pos) <= 0 || b.event.Sign() == 0 {
		return
	}
	i, found := slices.BinarySearchFunc(b.after, pos, func(a, t *big.Float) int { return a.Cmp(t) })
	if found {
		return
	}
	b.after = slices.Insert(b.after, i, pos)
	if limit, _ := b.event.Int64(); int64(len(b.after)) > limit {
		b.after = b.after[:limit]
	}
}

func (b *binlogRule) cover(r *recordSeen, _ bool) coverage {
	c, pos, row, ok := b.at(r)
	switch {
	case !ok:
		return coverUnknown
	case c < 0 || c == 0 && pos.Cmp(b.pos) < 0:
		return coverBefore
	case b.event.Sign() == 0 && b.row.Sign() == 0:
		return coverAfter // between transactions: at or past pos is new
	case c > 0:
		return coverAfter // binlogs rotate between transactions
	case pos.Cmp(b.pos) == 0:
		return coverBefore // the transaction's own BEGIN or GTID: no row of it is past the offset
	}
	// The k-th row event past the transaction's start is at least its event k+1.
	k := int64(len(b.after))
	for i, p := range b.after {
		if p.Cmp(pos) >= 0 {
			k = int64(i)
			break
		}
	}
	k++ // its rank (the row events kept are the smallest; one past them all ranks after them)
	least := new(big.Float).SetInt64(k + 1)
	switch least.Cmp(b.event) {
	case 1:
		return coverAfter
	case 0:
		if row.Cmp(b.row) >= 0 {
			return coverAfter
		}
	}
	return coverUnknown
}

// resumes: resuming, Debezium skips row rows of the event the offset is in, so B's first record
// is that row of its event, or the first row of a later one.
func (b *binlogRule) resumes(first *recordSeen) string {
	c, pos, row, ok := b.at(first)
	if !ok || c != 0 || pos.Cmp(b.pos) <= 0 || row.Sign() == 0 || row.Cmp(b.row) == 0 {
		return ""
	}
	return fmt.Sprintf("its row %s is neither the first of its row event nor the %s rows the offset placed skips in the event it resumes in", row.Text('f', 0), b.row.Text('f', 0))
}

// oracleRule reads an Oracle offset's commit_scn: per redo thread, the last commit emitted and
// the transactions committed at it ("scn:thread:txid-txid", comma separated; a lone SCN, or a
// number, is thread 1). A change event is covered when its transaction committed before its
// thread's, or at it and is one of them: Debezium's own test (CommitScn.hasBeenHandled). The
// offset's txId (Debezium 3.2 and later) is a transaction emitted in part: its events are not
// placed by their positions.
type oracleRule struct {
	commits map[int64]oracleCommit
	// partial is the transaction the offset is in the middle of.
	partial string
	ok      bool
}

type oracleCommit struct {
	scn *big.Int
	txs []string
}

func newOracleRule(placed jsonvalue.Map) offsetRule {
	o := &oracleRule{commits: map[int64]oracleCommit{}}
	if tx, ok := placed.Get("txId"); ok && tx != nil {
		o.partial = fmt.Sprint(tx)
	}
	v, ok := placed.Get("commit_scn")
	if !ok || v == nil {
		return o
	}
	o.ok = true
	for entry := range strings.SplitSeq(fmt.Sprint(v), ",") {
		parts := strings.Split(entry, ":")
		scn, ok := new(big.Int).SetString(parts[0], 10)
		if !ok {
			o.ok = false
			return o
		}
		thread := int64(1)
		var txs []string
		switch len(parts) {
		case 1:
		case 3:
			if _, err := fmt.Sscan(parts[1], &thread); err != nil {
				o.ok = false
				return o
			}
			if parts[2] != "" {
				txs = strings.Split(parts[2], "-")
			}
		case 4: // an older layout: the thread last
			if _, err := fmt.Sscan(parts[3], &thread); err != nil {
				o.ok = false
				return o
			}
		default:
			o.ok = false
			return o
		}
		o.commits[thread] = oracleCommit{scn: scn, txs: txs}
	}
	return o
}

func (o *oracleRule) see(*recordSeen, bool)      {}
func (o *oracleRule) resumes(*recordSeen) string { return "" }
func (o *oracleRule) trustsB() bool              { return true }

func (o *oracleRule) cover(r *recordSeen, _ bool) coverage {
	tx := ""
	if v, ok := r.src.Get("txId"); ok && v != nil {
		tx = fmt.Sprint(v)
	}
	cv, ok := r.src.Get("commit_scn")
	if !o.ok || !ok || cv == nil || (o.partial != "" && tx == o.partial) {
		return coverUnknown
	}
	commit, ok := new(big.Int).SetString(fmt.Sprint(cv), 10)
	if !ok {
		return coverUnknown
	}
	var at oracleCommit
	switch t, ok := r.src.Get("redo_thread"); {
	case ok && t != nil:
		var thread int64
		if _, err := fmt.Sscan(fmt.Sprint(t), &thread); err != nil {
			return coverUnknown
		}
		if at, ok = o.commits[thread]; !ok {
			return coverUnknown
		}
	case len(o.commits) == 1:
		for _, c := range o.commits {
			at = c
		}
	default:
		return coverUnknown
	}
	switch at.scn.Cmp(commit) {
	case 1:
		return coverBefore
	case 0:
		if slices.Contains(at.txs, tx) {
			return coverBefore
		}
	}
	return coverAfter
}

// postgresRule reads a PostgreSQL offset: the last event processed (lsn, in transaction txId)
// and the last commit (lsn_commit). Events come in commit order, each at its change's lsn, so
// a transaction begun before the placed one committed and committed after it holds changes
// from before the offset placed. Every event A produced up to the offset is at or before the
// later of lsn and lsn_commit (an earlier transaction's events precede its commit): an A event
// past it, or an event of the placed transaction past its lsn, is past the offset, and so is
// every event of a transaction A produced such an event of. A B event of a transaction A
// produced up to the offset is covered; a B event at or before that bound in a transaction A's
// records on B do not show is not placed (interleaved, or A's records not mirrored).
type postgresRule struct {
	placedTx   string
	lsn, bound jsonvalue.Map
	// txA are the transactions of A's records, txPast those with an event past the bound.
	txA, txPast map[string]bool
}

func newPostgresRule(placed jsonvalue.Map) offsetRule {
	p := &postgresRule{lsn: placed, txA: map[string]bool{}, txPast: map[string]bool{}}
	if v, ok := placed.Get("txId"); ok && v != nil {
		p.placedTx = fmt.Sprint(v)
	}
	p.bound = jsonvalue.Map{{Key: "lsn", Value: nil}}
	for _, k := range []string{"lsn", "lsn_proc", "lsn_commit"} {
		v, ok := placed.Get(k)
		if !ok || v == nil {
			continue
		}
		cand := jsonvalue.Map{{Key: "lsn", Value: v}}
		if p.bound[0].Value == nil {
			p.bound = cand
		} else if c, ok := postgresRecordOrder(cand, p.bound); ok && c > 0 {
			p.bound = cand
		}
	}
	return p
}

func (p *postgresRule) resumes(*recordSeen) string { return "" }
func (p *postgresRule) trustsB() bool              { return false }

func (p *postgresRule) see(r *recordSeen, ofA bool) {
	if !ofA || r.tx == "" {
		return
	}
	p.txA[r.tx] = true
	if c, ok := postgresRecordOrder(r.pos, p.bound); ok && c > 0 {
		p.txPast[r.tx] = true
	}
}

func (p *postgresRule) cover(r *recordSeen, ofA bool) coverage {
	if r.tx != "" && r.tx == p.placedTx {
		return byOrder(postgresRecordOrder, r.pos, p.lsn)
	}
	c, ok := postgresRecordOrder(r.pos, p.bound)
	switch {
	case !ok:
		return coverUnknown
	case c > 0 || p.txPast[r.tx]:
		return coverAfter
	case ofA || p.txA[r.tx]:
		return coverBefore
	}
	return coverUnknown
}
