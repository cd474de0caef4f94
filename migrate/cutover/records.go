package cutover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// The records a source produced on B are the verification's better evidence where they carry
// their position: Debezium's change events give it in their source block. The records of a
// connector's topics on B are told apart by the connector's birth on B
// (Connector.BornAfter, when migrate had read its offsets on A, after stopping it):
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
// before its offsets were read (--stop-source, Connector.StoppedOnA): a record A
// produced after that read would be taken for B's. A connector A may still run has no record
// evidence: its offsets are the evidence, and the entry says why.
//
// The records then say, by the family's reading of the offset placed (families.go):
//
//   - B's first record is one the offset covers: B produces again what A had produced up to it
//     (mismatch); or one that cannot be where B resumed from the offset (mismatch);
//   - A produced records past the offset: B produces them again. When A's offsets topic shows
//     A had committed past the offset placed (FurthestOnA), the offset was set back: a
//     mismatch; otherwise A never committed them (its worker died before its next commit) and
//     the offset placed is the only one it has: a replay, with their count and range;
//   - else B's first record past the offset verifies the cutover.

// recordLookback is how long before the connector's birth on B its topics are read from: far
// enough back to hold A's last records, without reading a topic's whole history.
const recordLookback = 10 * time.Minute

// recordSeen is a record's position and where it is.
type recordSeen struct {
	pos   jsonvalue.Map
	where string
	// tx is the event's transaction (its source block's txId), "" when it has none; src the
	// members of its source block the families' rules read.
	tx  string
	src jsonvalue.Map
	// key tells two copies of one record apart from two records (an A record seen in a
	// mirror of its topic and in the topic itself).
	key string
}

// ruleMembers are the source block's members an offsetRule reads besides the position.
var ruleMembers = []string{"txId", "commit_scn", "redo_thread", "lsid", "txnNumber"}

// maxRecordsOfA bounds the records of A a track keeps to count what B produces again.
const maxRecordsOfA = 100_000

// recordTrack follows the records of one source connector's topics on B.
type recordTrack struct {
	st     *sourceTrack
	fam    recordFamily
	rule   offsetRule
	prefix string
	born   time.Time
	// inert says why the records are no evidence for the connector ("" when they are).
	inert fleet.Text
	// next is where each partition of each topic is read from next.
	next map[string]map[int]int64
	// firstB is B's earliest record (in the family's order), snapshotB its first record of a
	// snapshot, lastA A's latest record.
	firstB, snapshotB, lastA *recordSeen
	// ofA are A's records (the first maxRecordsOfA; more is A's dropped), keyed by seenA.
	ofA     []*recordSeen
	seenA   map[string]bool
	dropped int
	// final: the verdict cannot change; pending: a replay whose B side has not been seen yet
	// (B's first record), to be read again.
	final, pending bool
	// readErr is why the last read of the topics failed (a topic B's principal may not read).
	readErr error
}

// newRecordTrack is the record track of connector cc's partition st, when its family's records
// carry a position and the report knows what the track needs; nil otherwise.
func newRecordTrack(reg *connectors.Registry, cc *Connector, st *sourceTrack) *recordTrack {
	fam, ok := recordFamilyOf(reg, cc.Class)
	if !ok || cc.TopicPrefix == "" || cc.BornAfter.IsZero() || len(cc.Partitions) != 1 {
		// A connector with several source partitions (SQL Server's databases) would need each
		// record's partition: its offsets are the evidence.
		return nil
	}
	st.p.FirstRecordOnB, st.p.LastRecordOnA, st.p.Replay = nil, nil, nil
	r := &recordTrack{st: st, fam: fam, rule: fam.rule(st.p.Placed), prefix: cc.TopicPrefix, born: cc.BornAfter,
		next: map[string]map[int]int64{}, seenA: map[string]bool{}}
	switch {
	case !cc.StoppedOnA:
		r.inert = fleet.Textf("the records on B are no evidence: A was not stopped before its offsets were read (migrate without %s), "+
			"so A's later records cannot be told from B's; the offsets are the evidence", fleet.StopSource)
	case cc.WorkersOfA != nil && cc.WorkersOfA.Held:
		r.inert = fleet.Textf("the records on B are no evidence: %v; A's later records cannot be told from B's; the offsets are the evidence", cc.WorkersOfA.Checked)
	}
	return r
}

// topicOwner says whose records topic holds: B's connector's (and A's, copied under the same
// name), A's alone (a mirror under another name), or none of the connector's.
func (r *recordTrack) topicOwner(topic string) (own, mirror bool) {
	if connectors.UnderTopicPrefix(topic, r.prefix) {
		return true, false
	}
	if i := strings.IndexByte(topic, '.'); i > 0 && connectors.UnderTopicPrefix(topic[i+1:], r.prefix) {
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
	for _, k := range ruleMembers {
		if v, ok := src.Get(k); ok && v != nil {
			seen.src = append(seen.src, jsonvalue.Field{Key: k, Value: v})
		}
	}
	if tx, ok := src.Get("txId"); ok && tx != nil {
		seen.tx = fmt.Sprint(tx)
	}
	ofA := mirror || m.Time.Before(r.born)
	r.rule.see(seen, ofA)
	if ofA {
		if r.lastA == nil || r.cmp(pos, r.lastA.pos) > 0 {
			r.lastA = seen
		}
		topic := m.Topic
		if mirror {
			topic = topic[strings.IndexByte(topic, '.')+1:]
		}
		seen.key = fmt.Sprintf("%s/%d/%s", topic, m.Partition, jsonvalue.SortedText(pos))
		switch {
		case r.seenA[seen.key]:
		case len(r.ofA) >= maxRecordsOfA:
			r.dropped++
		default:
			r.seenA[seen.key] = true
			r.ofA = append(r.ofA, seen)
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

// judge sets the partition's verdict from its records when they say something: B produced a
// record, or A produced one past the offset placed. A mismatch its offsets already show
// stands.
func (r *recordTrack) judge() {
	p := r.st.p
	if !r.inert.IsZero() {
		r.noteOnce(r.inert)
		return
	}
	if r.lastA != nil {
		p.LastRecordOnA = r.lastA.pos
	}
	if r.firstB != nil {
		p.FirstRecordOnB = r.firstB.pos
	}
	if p.Verdict == VerdictMismatch && p.Evidence == EvidenceOffsets && r.st.final {
		return
	}
	placed := jsonvalue.SortedText(p.Placed)
	decide := func(v Verdict, detail fleet.Text) {
		p.Verdict, p.Evidence, p.Detail, p.Replay = v, EvidenceRecords, detail, nil
		r.final, r.st.final, r.pending = true, true, false
	}
	if r.snapshotB != nil && !snapshotting(p.Placed) {
		decide(VerdictMismatch, fleet.Textf("B's connector produced a snapshot's record (%s) after it was born on B: it started a new snapshot instead of resuming "+
			"from the streaming position placed, %s", r.snapshotB.where, placed))
		return
	}
	first := r.firstB
	cover := coverUnknown
	if first != nil {
		cover = r.rule.cover(first, false)
		if cover == coverBefore {
			decide(VerdictMismatch, fleet.Textf("B's first record is at %s (%s), which the offset placed, %s, covers: B produces again what A had produced "+
				"up to it (duplicates downstream)", jsonvalue.SortedText(first.pos), first.where, placed))
			return
		}
		if why := r.rule.resumes(first); why != "" {
			decide(VerdictMismatch, fleet.Textf("B's first record is at %s (%s), which cannot be where B resumed from the offset placed, %s: %s",
				jsonvalue.SortedText(first.pos), first.where, placed, why))
			return
		}
	}
	placer := first // where B resumed, which places A's records the offset does not
	if cover == coverUnknown && !r.rule.trustsB() {
		placer = nil
	}
	if rep := r.replayed(placer); rep != nil {
		r.judgeReplay(rep, first, decide)
		return
	}
	if r.firstB == nil {
		if r.readErr != nil {
			r.noteOnce(fleet.Textf("the records on B could not be read (%v): the offsets are the evidence", r.readErr))
		}
		return // nothing of B's yet: the offsets are the evidence
	}
	if cover == coverUnknown && !r.rule.trustsB() {
		r.noteOnce(fleet.Textf("B's first record is at %s (%s), which the offset placed, %s, does not place: a transaction committed after "+
			"the offset placed with changes from before it (interleaved), or one A produced that is not on B; the offsets are the evidence",
			jsonvalue.SortedText(r.firstB.pos), r.firstB.where, placed))
		return
	}
	detail := fmt.Sprintf("B's first record is at %s (%s), after the offset placed, %s", jsonvalue.SortedText(r.firstB.pos), r.firstB.where, placed)
	if r.lastA != nil {
		detail += fmt.Sprintf("; A's last record is at %s", jsonvalue.SortedText(r.lastA.pos))
	}
	decide(VerdictVerified, fleet.Plain(detail))
}

// replayed is what B produces again of A's records: those past the offset placed (nil when
// none is). A record the offset does not place is past it when it is at or after first, B's
// first record (where B resumed); while first is nil it is not counted.
func (r *recordTrack) replayed(first *recordSeen) *Replay {
	var rep *Replay
	var lo, hi *recordSeen
	for _, a := range r.ofA {
		c := r.rule.cover(a, true)
		if c == coverUnknown && first != nil {
			c = coverBefore
			if r.cmp(a.pos, first.pos) >= 0 {
				c = coverAfter
			}
		}
		if c != coverAfter {
			continue
		}
		if rep == nil {
			rep = &Replay{}
		}
		rep.Records++
		if lo == nil || r.cmp(a.pos, lo.pos) < 0 {
			lo = a
		}
		if hi == nil || r.cmp(a.pos, hi.pos) > 0 {
			hi = a
		}
	}
	if rep != nil {
		rep.First, rep.FirstAt, rep.Last, rep.LastAt = lo.pos, lo.where, hi.pos, hi.where
	}
	return rep
}

// judgeReplay judges A's records past the offset placed: a mismatch when A had committed past
// it (its offset was set back), else a replay, decided once B's first record is seen.
func (r *recordTrack) judgeReplay(rep *Replay, first *recordSeen, decide func(Verdict, fleet.Text)) {
	p := r.st.p
	placed := jsonvalue.SortedText(p.Placed)
	count := plural(rep.Records, "record")
	if r.dropped > 0 {
		count = fmt.Sprintf("at least %s (%d more of A's were not kept)", count, r.dropped)
	}
	span := fmt.Sprintf("from %s (%s) to %s (%s)", jsonvalue.SortedText(rep.First), rep.FirstAt, jsonvalue.SortedText(rep.Last), rep.LastAt)
	if p.FurthestOnA != nil {
		decide(VerdictMismatch, fleet.Textf("A's offset was set back: A's offsets topic held %s, past the offset placed, %s; B produces again the %s A had "+
			"produced and committed past it, %s", jsonvalue.SortedText(p.FurthestOnA), placed, count, span))
		return
	}
	detail := fleet.Textf("B produces again the %s A produced past its last committed offset, %s, which A never committed (its worker died, or its "+
		"task failed, before its next commit): duplicates downstream, not a wrong placement; B continues from A's last committed offset, %s", count, span, placed)
	switch cc := r.st.cc; {
	case cc.HistoryOnA.String() == historyRead:
	case cc.HistoryOnA.IsZero():
		detail = detail.Append("; A's offsets topic was not read for earlier commits, so an offset set back on A would look the same")
	default:
		detail = detail.Append("; A's offsets topic %v, so an offset set back on A would look the same", cc.HistoryOnA)
	}
	if first == nil {
		r.pending = true
		p.Verdict, p.Evidence, p.Replay = VerdictReplay, EvidenceRecords, rep
		p.Detail = detail.Append("; B has produced no record yet")
		return
	}
	decide(VerdictReplay, detail.Append("; B's first record is at %s (%s)", jsonvalue.SortedText(first.pos), first.where))
	p.Replay = rep
}

// plural is n things: "1 record", "2 records".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// noteOnce adds s to the partition's detail, once.
func (r *recordTrack) noteOnce(s fleet.Text) {
	p := r.st.p
	switch {
	case p.Detail.IsZero():
		p.Detail = s
	case !strings.Contains(p.Detail.String(), s.String()):
		p.Detail = p.Detail.Append("; %v", s)
	}
}
