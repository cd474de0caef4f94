package migrate

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The records a source produced on B are the verification's better evidence where they carry
// their position: Debezium's change events give it in their source block. The records of a
// connector's topics on B are told apart by the connector's birth on B
// (CutoverConnector.BornAfter, when migrate had read its offsets on A, after stopping it):
//
//   - a record in a topic under the connector's topic.prefix whose timestamp is at or after the
//     birth is B's connector's. One before it is A's: produced before A stopped, and copied by
//     MirrorMaker 2, which keeps a record's timestamp (identity replication policy);
//   - a record in "<alias>.<topic under the prefix>" (MirrorMaker 2's default replication
//     policy) is A's, whatever its timestamp;
//   - a record whose source block names another logical name (its "name") is another
//     connector's, and one without a source block (transaction metadata, a tombstone, a value
//     that is not JSON) says nothing.
//
// This assumes the clocks of A's and B's Connect workers and of the host running migrate agree
// to well within the time between the read of A and B's first record, and that A was stopped
// before its offsets were read (--stop-source): a record A produced after that read would be
// taken for B's.

// recordFamily says where a family's change events carry their position and how positions
// compare.
type recordFamily struct {
	// position is the position of a change event's source block, in the members its order
	// compares (false: the block has none).
	position func(src jsonvalue.Map) (jsonvalue.Map, bool)
	// order compares two positions, or a position with the offset placed.
	order offsetOrder
	// interleaved: a change event's position is where its change is in the log, not where its
	// transaction commits, and transactions are emitted in commit order (PostgreSQL): a
	// transaction committed after the offset placed may hold changes from before it. Its
	// records are judged by transaction (postgresJudge).
	interleaved bool
}

// recordFamilies are the families whose records carry a position, by connector class.
var recordFamilies = map[string]recordFamily{
	"io.debezium.connector.postgresql.PostgresConnector": {position: members("lsn"), order: postgresRecordOrder, interleaved: true},
	"io.debezium.connector.mysql.MySqlConnector":         {position: members("file", "pos", "row"), order: binlogRecordOrder},
	"io.debezium.connector.mariadb.MariaDbConnector":     {position: members("file", "pos", "row"), order: binlogRecordOrder},
	"io.debezium.connector.sqlserver.SqlServerConnector": {position: members("commit_lsn", "change_lsn", "event_serial_no"), order: lsnOrder},
	"io.debezium.connector.db2.Db2Connector":             {position: members("commit_lsn", "change_lsn"), order: lsnOrder},
	"io.debezium.connector.oracle.OracleConnector":       {position: members("scn"), order: tupleOrder(orderPart{key: "scn", kind: 'n'})},
	"io.debezium.connector.mongodb.MongoDbConnector":     {position: mongoPosition, order: tupleOrder(orderPart{key: "sec", kind: 'n'}, orderPart{key: "ord", kind: 'n', optional: true})},
}

// binlogRecordOrder: a MySQL change event's binlog file and position, then its row in the
// event. The offset's pos is where its transaction starts, so a record produced again inside
// the transaction of the offset placed is not told from a new one.
var binlogRecordOrder = tupleOrder(orderPart{key: "file", kind: 'f'}, orderPart{key: "pos", kind: 'n'}, orderPart{key: "row", kind: 'n', optional: true})

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

// recordFamilyOf is the record family of connector class (a name or an alias reg knows).
func recordFamilyOf(reg *connectors.Registry, class string) (recordFamily, bool) {
	if c, ok := reg.Lookup(class); ok {
		class = c.Name
	}
	f, ok := recordFamilies[class]
	return f, ok
}

// recordLookback is how long before the connector's birth on B its topics are read from: far
// enough back to hold A's last records, without reading a topic's whole history.
const recordLookback = 10 * time.Minute

// recordSeen is a record's position and where it is.
type recordSeen struct {
	pos   jsonvalue.Map
	where string
	// tx is the event's transaction (its source block's txId), "" when it has none.
	tx string
}

// recordTrack follows the records of one source connector's topics on B.
type recordTrack struct {
	st     *sourceTrack
	fam    recordFamily
	prefix string
	born   time.Time
	// next is where each partition of each topic is read from next.
	next map[string]map[int]int64
	// firstB is B's earliest record (in the family's order), snapshotB its first record of a
	// snapshot, lastA A's latest record.
	firstB, snapshotB, lastA *recordSeen
	// txA are the transactions of A's records (a family whose events are interleaved).
	txA   map[string]bool
	final bool
	// readErr is why the last read of the topics failed (a topic B's principal may not read).
	readErr error
}

// newRecordTrack is the record track of connector cc's partition st, when its family's records
// carry a position and the report knows what the track needs; nil otherwise.
func newRecordTrack(reg *connectors.Registry, cc *CutoverConnector, st *sourceTrack) *recordTrack {
	fam, ok := recordFamilyOf(reg, cc.Class)
	if !ok || cc.TopicPrefix == "" || cc.BornAfter.IsZero() || len(cc.Partitions) != 1 {
		// A connector with several source partitions (SQL Server's databases) would need each
		// record's partition: its offsets are the evidence.
		return nil
	}
	st.p.FirstRecordOnB, st.p.LastRecordOnA = nil, nil
	return &recordTrack{st: st, fam: fam, prefix: cc.TopicPrefix, born: cc.BornAfter, next: map[string]map[int]int64{}}
}

// topicOwner says whose records topic holds: B's connector's (and A's, copied under the same
// name), A's alone (a mirror under another name), or none of the connector's.
func (r *recordTrack) topicOwner(topic string) (own, mirror bool) {
	if underPrefix(topic, r.prefix) {
		return true, false
	}
	if i := strings.IndexByte(topic, '.'); i > 0 && underPrefix(topic[i+1:], r.prefix) {
		return false, true
	}
	return false, false
}

// read reads the connector's topics on B, read committed, from where the last read ended to
// their last stable offsets.
func (r *recordTrack) read(ctx context.Context, cl *kafka.Client) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return fmt.Errorf("list B's topics: %w", err)
	}
	for _, t := range md.Topics {
		own, mirror := r.topicOwner(t.Name)
		if (!own && !mirror) || t.Internal || t.Error != nil {
			continue
		}
		if r.next[t.Name] == nil {
			starts, err := offsetsSince(ctx, cl, t.Name, len(t.Partitions), r.born.Add(-recordLookback))
			if err != nil {
				return fmt.Errorf("read B's topic %q: %w", t.Name, err)
			}
			r.next[t.Name] = starts
		}
		for _, p := range t.Partitions {
			if err := r.readPartition(ctx, cl, t.Name, p.ID, mirror); err != nil {
				return err
			}
		}
	}
	return nil
}

// offsetsSince is, for each partition 0..n-1 of topic, the offset of its first record at or
// after time at; its end (last stable offset) when it has none.
func offsetsSince(ctx context.Context, cl *kafka.Client, topic string, n int, at time.Time) (map[int]int64, error) {
	ends, err := kafkaio.ListOffsets(ctx, cl, topic, n, kafka.LastOffset)
	if err != nil {
		return nil, err
	}
	reqs := make([]kafka.OffsetRequest, n)
	for p := range reqs {
		reqs[p] = kafka.OffsetRequest{Partition: p, Timestamp: at.UnixMilli()}
	}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: kafka.ReadCommitted, Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q at %s: %w", topic, at.Format(time.RFC3339), err)
	}
	out := map[int]int64{}
	for p, end := range ends {
		out[p] = end
	}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of topic %q partition %d at %s: %w", topic, po.Partition, at.Format(time.RFC3339), po.Error)
		}
		for o := range po.Offsets { // one: the offset of the first record at or after the time
			if _, ok := out[po.Partition]; ok && o >= 0 {
				out[po.Partition] = min(o, out[po.Partition])
			}
		}
	}
	return out, nil
}

func (r *recordTrack) readPartition(ctx context.Context, cl *kafka.Client, topic string, part int, mirror bool) error {
	for range maxFetchesPerRead {
		from, ok := r.next[topic][part]
		if !ok {
			from = kafka.FirstOffset // a partition added since the first read
		}
		f, err := kafkaio.FetchPartition(ctx, cl, topic, part, from, 1<<20, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("read B's topic %q partition %d: %w", topic, part, err)
		}
		for _, m := range f.Messages {
			r.add(m, mirror)
		}
		r.next[topic][part] = f.Next
		if f.Next >= f.LastStable || (len(f.Messages) == 0 && f.Next == from) {
			return nil
		}
	}
	return nil
}

// add takes one record of the connector's topics.
func (r *recordTrack) add(m kafka.Message, mirror bool) {
	src, ok := sourceBlock(m.Value)
	if !ok {
		return
	}
	if name, ok := src.Get("name"); ok && name != r.prefix {
		return // another connector's
	}
	snap, _ := src.Get("snapshot")
	if snap == "incremental" {
		return // an incremental snapshot's read, at no position of the log
	}
	pos, ok := r.fam.position(src)
	if !ok {
		return
	}
	seen := &recordSeen{pos: pos, where: fmt.Sprintf("topic %q partition %d offset %d, at %s", m.Topic, m.Partition, m.Offset,
		m.Time.UTC().Format(time.RFC3339Nano))}
	if tx, ok := src.Get("txId"); ok && tx != nil {
		seen.tx = fmt.Sprint(tx)
	}
	if mirror || m.Time.Before(r.born) {
		if seen.tx != "" {
			if r.txA == nil {
				r.txA = map[string]bool{}
			}
			r.txA[seen.tx] = true
		}
		if r.lastA == nil || r.cmp(pos, r.lastA.pos) > 0 {
			r.lastA = seen
		}
		return
	}
	if snapshotting(jsonvalue.Map{{Key: "snapshot", Value: snap}}) && r.snapshotB == nil {
		r.snapshotB = seen
	}
	if r.firstB == nil || r.cmp(pos, r.firstB.pos) < 0 {
		r.firstB = seen
	}
}

// cmp compares two positions; two that cannot be ordered are equal.
func (r *recordTrack) cmp(a, b jsonvalue.Map) int {
	c, _ := r.fam.order(a, b)
	return c
}

// sourceBlock is the source block of a Debezium change event (JsonConverter's JSON, with
// schemas: under "payload"); false when value is not one.
func sourceBlock(value []byte) (jsonvalue.Map, bool) {
	if value == nil {
		return nil, false
	}
	sc := jsonvalue.NewScanner(value)
	sc.AllowLeadingZeros()
	m, err := sc.Object()
	if err != nil {
		return nil, false
	}
	if p, ok := m.Get("payload"); ok {
		if _, schema := m.Get("schema"); schema {
			if m, ok = p.(jsonvalue.Map); !ok {
				return nil, false
			}
		}
	}
	src, ok := m.Get("source")
	if !ok {
		return nil, false
	}
	s, ok := src.(jsonvalue.Map)
	return s, ok
}

// errNoRecordOrder is why records are no evidence for a partition: its records and its offset
// placed cannot be ordered.
var errNoRecordOrder = errors.New("the records' positions and the offset placed cannot be ordered")

// judge sets the partition's verdict from its records when they say something: B produced a
// record, or A produced one past the offset placed. A mismatch its offsets already show
// stands.
func (r *recordTrack) judge() {
	p := r.st.p
	if r.lastA != nil {
		p.LastRecordOnA = r.lastA.pos
	}
	if r.firstB != nil {
		p.FirstRecordOnB = r.firstB.pos
	}
	if p.Verdict == VerdictMismatch && p.Evidence == EvidenceOffsets && r.st.final {
		return
	}
	placed := partitionKey(p.Placed)
	decide := func(v Verdict, detail string) {
		p.Verdict, p.Evidence, p.Detail = v, EvidenceRecords, detail
		r.final, r.st.final = true, true
	}
	if r.snapshotB != nil && !snapshotting(p.Placed) {
		decide(VerdictMismatch, fmt.Sprintf("B's connector produced a snapshot's record (%s) after it was born on B: it started a new snapshot instead of resuming "+
			"from the streaming position placed, %s", r.snapshotB.where, placed))
		return
	}
	if r.fam.interleaved {
		r.judgeInterleaved(decide)
		return
	}
	if r.lastA != nil {
		if c, ok := r.fam.order(r.lastA.pos, p.Placed); ok && c > 0 {
			decide(VerdictMismatch, fmt.Sprintf("A's last record is at %s (%s), after the offset placed, %s: B's connector resumes before it and produces "+
				"again what A had produced since", partitionKey(r.lastA.pos), r.lastA.where, placed))
			return
		}
	}
	note := func(s string) { // once: a decided offsets verdict keeps its detail from round to round
		if !strings.Contains(p.Detail, s) {
			p.Detail = strings.TrimPrefix(p.Detail+"; ", "; ") + s
		}
	}
	if r.firstB == nil {
		if r.readErr != nil {
			note(fmt.Sprintf("the records on B could not be read (%v): the offsets are the evidence", r.readErr))
		}
		return // nothing of B's yet: the offsets are the evidence
	}
	first := partitionKey(r.firstB.pos)
	c, ok := r.fam.order(r.firstB.pos, p.Placed)
	switch {
	case !ok:
		note(fmt.Sprintf("B's first record is at %s: %v", first, errNoRecordOrder))
	case c <= 0:
		decide(VerdictMismatch, fmt.Sprintf("B's first record is at %s (%s), at or before the offset placed, %s: a record A had produced is produced "+
			"again (duplicates downstream)", first, r.firstB.where, placed))
	default:
		detail := fmt.Sprintf("B's first record is at %s (%s), after the offset placed, %s", first, r.firstB.where, placed)
		if r.lastA != nil {
			detail += fmt.Sprintf("; A's last record is at %s", partitionKey(r.lastA.pos))
		}
		decide(VerdictVerified, detail)
	}
}

// judgeInterleaved judges the records of a family whose events carry their change's position,
// not their transaction's commit (PostgreSQL), and come in commit order. The offset placed is
// the last event processed (lsn, in transaction txId) and the commit of the transaction before
// it (lsn_commit): every event A produced is at or before the later of the two (an earlier
// transaction's events precede its commit), so A's record past that is proof that A produced
// more than was placed. B's events are the rest of the placed transaction and transactions
// committed after it, but an interleaved one may hold changes from before the offset placed:
// a B event is a replay only when it is of the placed transaction at or before the placed
// lsn, or of another transaction A produced (seen in A's records on B); it verifies when it is
// past both, or later in the placed transaction; otherwise the records prove nothing and the
// offsets stay the evidence, with a note.
func (r *recordTrack) judgeInterleaved(decide func(Verdict, string)) {
	p := r.st.p
	placed := partitionKey(p.Placed)
	bound := jsonvalue.Map{{Key: "lsn", Value: nil}}
	for _, k := range []string{"lsn", "lsn_proc", "lsn_commit"} {
		v, ok := p.Placed.Get(k)
		if !ok || v == nil {
			continue
		}
		cand := jsonvalue.Map{{Key: "lsn", Value: v}}
		if bound[0].Value == nil {
			bound = cand
		} else if c, ok := r.fam.order(cand, bound); ok && c > 0 {
			bound = cand
		}
	}
	if r.lastA != nil {
		if c, ok := r.fam.order(r.lastA.pos, bound); ok && c > 0 {
			decide(VerdictMismatch, fmt.Sprintf("A's last record is at %s (%s), after the offset placed, %s: B's connector resumes before it and produces "+
				"again what A had produced since", partitionKey(r.lastA.pos), r.lastA.where, placed))
			return
		}
	}
	if r.firstB == nil {
		return // nothing of B's yet: the offsets are the evidence
	}
	first := partitionKey(r.firstB.pos)
	placedTx := ""
	if v, ok := p.Placed.Get("txId"); ok && v != nil {
		placedTx = fmt.Sprint(v)
	}
	inPlaced := r.firstB.tx != "" && r.firstB.tx == placedTx
	atOrBefore, ordered := r.fam.order(r.firstB.pos, p.Placed)
	pastBound, _ := r.fam.order(r.firstB.pos, bound)
	switch {
	case !ordered:
		r.noteOnce(fmt.Sprintf("B's first record is at %s: %v", first, errNoRecordOrder))
	case (inPlaced && atOrBefore <= 0) || (!inPlaced && r.firstB.tx != "" && r.txA[r.firstB.tx]):
		decide(VerdictMismatch, fmt.Sprintf("B's first record is at %s (%s) in transaction %s, which A had produced up to the offset placed, %s: "+
			"it is produced again (duplicates downstream)", first, r.firstB.where, r.firstB.tx, placed))
	case pastBound > 0 || inPlaced:
		detail := fmt.Sprintf("B's first record is at %s (%s), after the offset placed, %s", first, r.firstB.where, placed)
		if r.lastA != nil {
			detail += fmt.Sprintf("; A's last record is at %s", partitionKey(r.lastA.pos))
		}
		decide(VerdictVerified, detail)
	default:
		r.noteOnce(fmt.Sprintf("B's first record is at %s (%s), before the offset placed, in transaction %s that A's records on B do not show: "+
			"a transaction committed after the offset placed (interleaved), or one A produced that is not mirrored to B; the offsets are the evidence",
			first, r.firstB.where, r.firstB.tx))
	}
}

// noteOnce adds s to the partition's detail, once.
func (r *recordTrack) noteOnce(s string) {
	p := r.st.p
	if !strings.Contains(p.Detail, s) {
		p.Detail = strings.TrimPrefix(p.Detail+"; ", "; ") + s
	}
}
