package cutover

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// debeziumEvent is a Debezium PostgreSQL change event whose source block is at lsn, in
// JsonConverter's shape with schemas (the payload envelope) or without.
func debeziumEvent(lsn, tx int, schemas bool, name, snapshot string) []byte {
	payload := fmt.Sprintf(`{"before":null,"after":{"id":%d},"source":{"version":"3.1.0.Final","connector":"postgresql","name":%q,`+
		`"ts_ms":1,"snapshot":%q,"db":"shop","sequence":"[\"%d\",\"%d\"]","schema":"public","table":"orders","txId":%d,"lsn":%d,"xmin":null},`+
		`"op":"c","ts_ms":2}`, lsn, name, snapshot, lsn-8, lsn, tx, lsn)
	if !schemas {
		return []byte(payload)
	}
	return []byte(`{"schema":{"type":"struct","fields":[],"optional":false,"name":"shop.public.orders.Envelope"},"payload":` + payload + `}`)
}

// A Debezium source's records on B carry their position in the change event's source block:
// the verification reads the connector's topics on B (under its topic.prefix, read committed)
// and judges by B's first record. Records older than the connector's birth on B (MirrorMaker
// 2's copies of A's, which keep A's timestamps) are A's, and so are the records of A's topics
// mirrored under another name: they are not taken for B's, and A's records past the offset
// placed are what B produces again: a replay when A never committed past it, a mismatch when
// A's offset was set back. PostgreSQL's offset is the last event processed and the last
// commit: A's records are bounded by the later of the two.
func TestVerifyDebeziumRecords(t *testing.T) {
	born := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	type rec struct {
		topic string
		lsn   int
		bornB bool // produced after the connector's birth on B
		// name is the source block's logical name ("" the connector's), snapshot its
		// snapshot member ("" false).
		name, snapshot string
		// tx is the event's transaction (0: lsn/10, so the placed offset's 1000 is in 100).
		tx int
	}
	const atCommit = `{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1}`
	cases := []struct {
		name     string
		records  []rec
		verdict  Verdict
		evidence string
		detail   string
		// placed is the offset placed ("": atCommit), furthest A's furthest commit past it
		// ("": none); running: A was not stopped before its offsets were read.
		placed, furthest string
		running          bool
		// replay is the count of records B produces again (0: no replay).
		replay int
	}{
		{name: "B continues after the placed offset, past A's mirrored records",
			records: []rec{{topic: "shop.public.orders", lsn: 900, bornB: false}, {topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1100, bornB: true}, {topic: "shop.public.orders", lsn: 1200, bornB: true}},
			verdict: VerdictVerified, evidence: "records", detail: `B's first record is at {"lsn":1100}`},
		{name: "B produces the placed record again",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1000, bornB: true}, {topic: "shop.public.orders", lsn: 1100, bornB: true}},
			verdict: VerdictMismatch, evidence: "records", detail: `B's first record is at {"lsn":1000}`},
		{name: "B's earliest record, in another topic, is of a transaction A produced",
			records: []rec{{topic: "shop.public.items", lsn: 950, bornB: false}, {topic: "shop.public.orders", lsn: 1100, bornB: true}, {topic: "shop.public.items", lsn: 950, bornB: true}},
			verdict: VerdictMismatch, evidence: "records", detail: `"shop.public.items"`},
		{name: "B goes on inside the placed transaction, past the offset placed",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1010, tx: 100, bornB: true}},
			verdict: VerdictVerified, evidence: "records", detail: `B's first record is at {"lsn":1010}`},
		// A transaction begun before the placed one's commit and committed after it holds
		// changes from before that commit: PostgreSQL's events come in commit order.
		{name: "an interleaved transaction committed after the placed one: the offsets decide",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 950, tx: 105, bornB: true}, {topic: "shop.public.orders", lsn: 1100, tx: 105, bornB: true}},
			verdict: VerdictWaiting, evidence: EvidenceOffsets, detail: `(interleaved)`},
		// The offset at the placed transaction's commit: its last event at 1000, its commit at
		// 1100. A transaction committed before it, with changes between the two (1040), is one
		// A produced before it: not past the offset, which the later of the two bounds.
		{name: "an offset at its commit, past its last event: A's earlier transaction up to the commit is not past it",
			placed:  `{"lsn_proc":1100,"lsn_commit":1100,"lsn":1000,"txId":100,"ts_usec":1}`,
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1040, tx: 95, bornB: false}, {topic: "shop.public.orders", lsn: 1150, tx: 101, bornB: true}},
			verdict: VerdictVerified, evidence: "records", detail: `B's first record is at {"lsn":1150}`},
		// The offset inside the placed transaction (its last event at 1000, the commit before
		// it at 900): B's event at 950 of a transaction A's records do not show is not past the
		// later of the two, so the records do not place it.
		{name: "an offset inside its transaction, past the last commit: B's event before its lsn is not placed",
			placed:  `{"lsn_proc":1000,"lsn_commit":900,"lsn":1000,"txId":100,"ts_usec":1}`,
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 950, tx: 101, bornB: true}},
			verdict: VerdictWaiting, evidence: EvidenceOffsets, detail: `(interleaved)`},
		// A's worker died after producing transactions past its last commit: B produces them
		// again. Not a wrong placement: its own verdict, with their count and range.
		{name: "A produced past the placed offset and never committed it: a replay",
			records: []rec{{topic: "A.shop.public.orders", lsn: 1000, bornB: false}, {topic: "A.shop.public.orders", lsn: 1050, bornB: false},
				{topic: "A.shop.public.orders", lsn: 1080, bornB: false}, {topic: "shop.public.orders", lsn: 1050, bornB: true}, {topic: "shop.public.orders", lsn: 1100, bornB: true}},
			verdict: VerdictReplay, evidence: "records", replay: 2,
			detail: `produces again the 2 records A produced past its last committed offset, from {"lsn":1050} (topic "A.shop.public.orders" partition 0 offset 1`},
		{name: "A produced the rest of the placed transaction: a replay",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1010, tx: 100, bornB: false},
				{topic: "shop.public.orders", lsn: 1010, tx: 100, bornB: true}},
			verdict: VerdictReplay, evidence: "records", replay: 1, detail: `the 1 record A produced past its last committed offset, from {"lsn":1010}`},
		{name: "A produced past the placed offset, B has produced nothing yet: a replay still",
			records: []rec{{topic: "A.shop.public.orders", lsn: 1000, bornB: false}, {topic: "A.shop.public.orders", lsn: 1050, bornB: false}},
			verdict: VerdictReplay, evidence: "records", replay: 1, detail: "B has produced no record yet"},
		{name: "A had committed past the placed offset: set back, a mismatch",
			furthest: `{"lsn_proc":1080,"lsn_commit":1080,"lsn":1080,"txId":108,"ts_usec":2}`,
			records: []rec{{topic: "A.shop.public.orders", lsn: 1000, bornB: false}, {topic: "A.shop.public.orders", lsn: 1050, bornB: false},
				{topic: "A.shop.public.orders", lsn: 1080, bornB: false}, {topic: "shop.public.orders", lsn: 1050, bornB: true}},
			verdict: VerdictMismatch, evidence: "records", detail: `A's offset was set back: A's offsets topic held {"lsn":1080,`},
		{name: "A was not stopped: its later records are no evidence",
			running: true,
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1050, bornB: true}, {topic: "A.shop.public.orders", lsn: 1080, bornB: false}},
			verdict: VerdictWaiting, evidence: EvidenceOffsets, detail: "A was not stopped before its offsets were read"},
		{name: "B snapshots again",
			records: []rec{{topic: "shop.public.orders", lsn: 1100, bornB: true, snapshot: "first"}},
			verdict: VerdictMismatch, evidence: "records", detail: "started a new snapshot"},
		{name: "another connector's records in the topic are not B's",
			records: []rec{{topic: "shop.public.orders", lsn: 900, bornB: true, name: "other"}, {topic: "shop.public.orders", lsn: 1100, bornB: true}},
			verdict: VerdictVerified, evidence: "records", detail: `B's first record is at {"lsn":1100}`},
		{name: "no record of B yet: the offsets decide",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}},
			verdict: VerdictWaiting, evidence: EvidenceOffsets},
	}
	for _, schemas := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/schemas=%v", tc.name, schemas), func(t *testing.T) {
				brokers := startKfake(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
				require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
				part := jsonvalue.Map{{Key: "server", Value: "shop"}}
				placed := cmp.Or(tc.placed, atCommit)
				w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
				defer w.Close()
				require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
					Key: offsetstore.AppendKey(nil, "pg-b", offsetstore.JavaHashMapOrder(part)), Value: []byte(placed)}))
				for _, r := range tc.records {
					require.NoError(t, kafkaio.EnsureTopic(ctx, cl, r.topic, 1, nil))
				}
				for i, r := range tc.records {
					at := born.Add(-time.Duration(len(tc.records)-i) * time.Second)
					if r.bornB {
						at = born.Add(time.Duration(i+1) * time.Second)
					}
					require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: r.topic, Key: []byte(`{"id":1}`), Value: debeziumEvent(r.lsn, cmp.Or(r.tx, r.lsn/10), schemas, cmp.Or(r.name, "shop"), cmp.Or(r.snapshot, "false")), Time: at}))
				}
				furthest := ""
				if tc.furthest != "" {
					furthest = `"furthest_on_a":` + tc.furthest + `,`
				}
				path := filepath.Join(t.TempDir(), "cutover.json")
				require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1","offsets_topic":"connect-offsets","connectors":[
  {"name":"pg","target_name":"pg-b","type":"source","class":"io.debezium.connector.postgresql.PostgresConnector","offsets_topic":"connect-offsets",
   "topic_prefix":"shop","born_after":"`+born.Format(time.RFC3339Nano)+`","stopped_on_a":`+fmt.Sprint(!tc.running)+`,"history_on_a":"read","partitions":[
    {"partition":{"server":"shop"},"offset_on_a":`+placed+`,"offset_placed":`+placed+`,`+furthest+`"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
				c, err := Read(path)
				require.NoError(t, err)
				require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers}))
				p := c.Connectors[0].Partitions[0]
				require.Equal(t, tc.verdict, p.Verdict, p.Detail)
				require.Equal(t, tc.evidence, p.Evidence)
				require.Contains(t, p.Detail.String(), tc.detail)
				if tc.replay == 0 {
					require.Nil(t, p.Replay)
				} else {
					require.NotNil(t, p.Replay, p.Detail)
					require.Equal(t, tc.replay, p.Replay.Records)
				}
			})
		}
	}
}

// The cutover report keeps what the records' verification needs of a Debezium source: its
// topic prefix on B and when its offsets had been read on A.
func TestNewCutoverDebeziumRecordsNeeds(t *testing.T) {
	read := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	offsets := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "server", Value: "shop"}}, Offset: jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("1000")}}}}
	rep := &apply.Report{MigrationID: "m-1", Connectors: []*apply.Entry{{Name: "pg", TargetName: "pg", Type: "source", Outcome: apply.OutcomeSucceeded, BornAfter: read,
		Connector: &fleet.Connector{Name: "pg", Type: connectors.Source, Offsets: offsets},
		Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"}, {Key: "topic.prefix", Value: "shop"}},
			InitialOffsets: offsets, HasOffsets: true}}}}
	cc := New(rep, "connect-offsets", nil).Connectors[0]
	require.Equal(t, "shop", cc.TopicPrefix)
	require.Equal(t, read, cc.BornAfter)
}

// familyEvent is a Debezium change event whose source block has the members src (a JSON
// object's members, without braces) and the logical name shop.
func familyEvent(src string) []byte {
	return []byte(`{"before":null,"after":{"id":1},"source":{"version":"3.1.0.Final","name":"shop","snapshot":"false",` + src + `},"op":"c","ts_ms":2}`)
}

// Each family's change events stand against the offset placed as the family's offset says,
// not as their positions compare with its members (families.go): a MySQL or MariaDB
// offset's pos is where its transaction began and its event and row count into it, a change
// event's pos is its own row event's; Oracle's scn is a low watermark and its commit_scn says
// what was emitted; SQL Server's and MongoDB's offsets carry the very positions of their
// events. A correct cutover with A's records on B verifies; A's records past the offset that
// A never committed are a replay; B producing what the offset covers is a mismatch.
func TestVerifyRecordsByFamily(t *testing.T) {
	born := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	type rec struct {
		src   string
		bornB bool
	}
	a := func(src string) rec { return rec{src: src} }
	b := func(src string) rec { return rec{src: src, bornB: true} }
	binlog := func(pos, row int) string {
		return fmt.Sprintf(`"file":"bin.000003","pos":%d,"row":%d,"server_id":1,"db":"shop","table":"t"`, pos, row)
	}
	const inTx = `{"file":"bin.000003","pos":1000,"event":2,"row":1,"gtids":"0-1-41","server_id":1,"ts_sec":1}`
	oracle := func(scn, commit, tx string) string {
		return fmt.Sprintf(`"scn":%q,"commit_scn":%q,"txId":%q,"redo_thread":1,"schema":"S","table":"T"`, scn, commit, tx)
	}
	const oraclePlaced = `{"commit_scn":"1000:1:0a.1","snapshot_scn":"500","scn":"900"}`
	sql := func(commit, change string, serial int) string {
		return fmt.Sprintf(`"commit_lsn":%q,"change_lsn":%q,"event_serial_no":%d,"db":"d","schema":"dbo","table":"t"`, commit, change, serial)
	}
	const sqlPlaced = `{"event_serial_no":1,"commit_lsn":"0000002b:00000a28:0003","change_lsn":"0000002b:00000a28:0002"}`
	mongo := func(ms int64, ord int) string {
		return fmt.Sprintf(`"ts_ms":%d,"ord":%d,"db":"d","collection":"c"`, ms, ord)
	}
	const mongoPlaced = `{"sec":1700000000,"ord":3,"resume_token":"gmVS"}`
	mysqlClasses := []string{"io.debezium.connector.mysql.MySqlConnector", "io.debezium.connector.mariadb.MariaDbConnector"}
	type tcase struct {
		name      string
		classes   []string
		placed    string
		furthest  string
		records   []rec
		verdict   Verdict
		detail    string
		replay    int
		replayPos string // the first position B produces again
	}
	cases := []tcase{
		// MySQL, MariaDB: the offset placed is inside the transaction begun at 1000, its
		// first row event (1120) done; a change event's pos is its row event's.
		{name: "binlog: A's records of the placed transaction on B, B continues in the next", classes: mysqlClasses, placed: inTx,
			records: []rec{a(binlog(800, 0)), a(binlog(1120, 0)), b(binlog(1300, 0)), b(binlog(1400, 0))},
			verdict: VerdictVerified, detail: `B's first record is at {"file":"bin.000003","pos":1300,"row":0}`},
		{name: "binlog: B continues in a later row event of the placed transaction", classes: mysqlClasses, placed: inTx,
			records: []rec{a(binlog(1120, 0)), b(binlog(1220, 0))}, verdict: VerdictVerified, detail: `B's first record is at {"file":"bin.000003","pos":1220,"row":0}`},
		{name: "binlog: B continues in the row event the offset is in", classes: mysqlClasses,
			placed:  `{"file":"bin.000003","pos":1000,"event":2,"row":2}`,
			records: []rec{a(binlog(1120, 0)), a(binlog(1120, 1)), b(binlog(1120, 2)), b(binlog(1120, 3))},
			verdict: VerdictVerified, detail: `B's first record is at {"file":"bin.000003","pos":1120,"row":2}`},
		{name: "binlog: B continues in the next binlog file", classes: mysqlClasses, placed: inTx,
			records: []rec{a(binlog(1120, 0)), b(`"file":"bin.000004","pos":4,"row":0`)}, verdict: VerdictVerified, detail: `"file":"bin.000004"`},
		{name: "binlog: B produces an earlier transaction again", classes: mysqlClasses, placed: inTx,
			records: []rec{a(binlog(800, 0)), a(binlog(1120, 0)), b(binlog(800, 0)), b(binlog(1120, 0))},
			verdict: VerdictMismatch, detail: `which the offset placed, {"event":2,"file":"bin.000003"`},
		{name: "binlog: B's first record is a row the offset skips", classes: mysqlClasses,
			placed:  `{"file":"bin.000003","pos":1000,"event":2,"row":2}`,
			records: []rec{a(binlog(1120, 0)), a(binlog(1120, 1)), b(binlog(1120, 1))},
			verdict: VerdictMismatch, detail: "its row 1 is neither the first of its row event nor the 2 rows the offset placed skips"},
		{name: "binlog: A's worker died inside the transaction: a replay", classes: mysqlClasses, placed: inTx,
			records: []rec{a(binlog(1120, 0)), a(binlog(1220, 0)), a(binlog(1320, 0)), b(binlog(1220, 0)), b(binlog(1320, 0)), b(binlog(1420, 0))},
			verdict: VerdictReplay, replay: 2, replayPos: `{"file":"bin.000003","pos":1220,"row":0}`, detail: "produces again the 2 records A produced past its last committed offset"},
		// Its third single-row insert: at least its event 4, the event the offset is in, and
		// a row it does not skip... or a later event: B's first record places it.
		{name: "binlog: A's rows the positions do not place are placed by B's first record", classes: mysqlClasses,
			placed:  `{"file":"bin.000003","pos":1000,"event":4,"row":1}`,
			records: []rec{a(binlog(1120, 0)), a(binlog(1220, 0)), a(binlog(1320, 0)), b(binlog(1320, 0)), b(binlog(1420, 0))},
			verdict: VerdictReplay, replay: 1, replayPos: `{"file":"bin.000003","pos":1320,"row":0}`},
		{name: "binlog: between transactions, A's worker died after the next: a replay", classes: mysqlClasses,
			placed:  `{"file":"bin.000003","pos":1250}`,
			records: []rec{a(binlog(1120, 0)), a(binlog(1300, 0)), b(binlog(1300, 0))},
			verdict: VerdictReplay, replay: 1, replayPos: `{"file":"bin.000003","pos":1300,"row":0}`},
		{name: "binlog: A's offset set back", classes: mysqlClasses, placed: `{"file":"bin.000003","pos":1250}`,
			furthest: `{"file":"bin.000003","pos":1350}`,
			records:  []rec{a(binlog(1120, 0)), a(binlog(1300, 0)), b(binlog(1300, 0))},
			verdict:  VerdictMismatch, detail: "A's offset was set back"},
		// Oracle: the offset's scn (900) is where mining restarts, before the commit emitted.
		{name: "oracle: A's transaction before the low watermark's commit, B's committed later", classes: []string{"io.debezium.connector.oracle.OracleConnector"},
			placed:  oraclePlaced,
			records: []rec{a(oracle("950", "1000", "0a.1")), b(oracle("920", "1100", "0b.2"))},
			verdict: VerdictVerified, detail: `B's first record is at {"commit_scn":"1100"`},
		{name: "oracle: B produces the transaction the commit covers", classes: []string{"io.debezium.connector.oracle.OracleConnector"},
			placed: oraclePlaced, records: []rec{b(oracle("950", "1000", "0a.1"))}, verdict: VerdictMismatch, detail: "which the offset placed"},
		{name: "oracle: another transaction committed at the same SCN", classes: []string{"io.debezium.connector.oracle.OracleConnector"},
			placed: oraclePlaced, records: []rec{a(oracle("950", "1000", "0a.1")), b(oracle("990", "1000", "0c.3"))}, verdict: VerdictVerified},
		{name: "oracle: A's worker died after emitting a later transaction: a replay", classes: []string{"io.debezium.connector.oracle.OracleConnector"},
			placed:  oraclePlaced,
			records: []rec{a(oracle("950", "1000", "0a.1")), a(oracle("1050", "1100", "0b.2")), b(oracle("1050", "1100", "0b.2")), b(oracle("1150", "1200", "0d.4"))},
			verdict: VerdictReplay, replay: 1, replayPos: `{"commit_scn":"1100","redo_thread":1,"scn":"1050","txId":"0b.2"}`},
		// SQL Server and MongoDB: the offset carries the position of the event it is at.
		{name: "sql server: B continues past the offset", classes: []string{"io.debezium.connector.sqlserver.SqlServerConnector"}, placed: sqlPlaced,
			records: []rec{a(sql("0000002b:00000a28:0003", "0000002b:00000a28:0002", 1)), b(sql("0000002b:00000a28:0003", "0000002b:00000a28:0002", 2))},
			verdict: VerdictVerified},
		{name: "sql server: A's worker died after a later change: a replay", classes: []string{"io.debezium.connector.sqlserver.SqlServerConnector"}, placed: sqlPlaced,
			records: []rec{a(sql("0000002b:00000a28:0003", "0000002b:00000a28:0002", 1)), a(sql("0000002b:00000a30:0003", "0000002b:00000a30:0002", 1)),
				b(sql("0000002b:00000a30:0003", "0000002b:00000a30:0002", 1))},
			verdict: VerdictReplay, replay: 1},
		{name: "sql server: B produces the placed change again", classes: []string{"io.debezium.connector.sqlserver.SqlServerConnector"}, placed: sqlPlaced,
			records: []rec{b(sql("0000002b:00000a28:0003", "0000002b:00000a28:0002", 1))}, verdict: VerdictMismatch},
		{name: "mongodb: B continues past the offset", classes: []string{"io.debezium.connector.mongodb.MongoDbConnector"}, placed: mongoPlaced,
			records: []rec{a(mongo(1700000000000, 3)), b(mongo(1700000002000, 1))}, verdict: VerdictVerified},
		{name: "mongodb: A's worker died after a later event: a replay", classes: []string{"io.debezium.connector.mongodb.MongoDbConnector"}, placed: mongoPlaced,
			records: []rec{a(mongo(1700000000000, 3)), a(mongo(1700000001000, 1)), b(mongo(1700000001000, 1)), b(mongo(1700000002000, 1))},
			verdict: VerdictReplay, replay: 1, replayPos: `{"ord":1,"sec":1700000001}`},
	}
	for _, tc := range cases {
		for _, class := range tc.classes {
			t.Run(tc.name+"/"+class[strings.LastIndexByte(class, '.')+1:], func(t *testing.T) {
				brokers := startKfake(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
				require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
				require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "shop.d.t", 1, nil))
				part := jsonvalue.Map{{Key: "server", Value: "shop"}}
				w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
				defer w.Close()
				order := offsetstore.JavaHashMapOrder
				if c, ok := connectors.Builtin().Lookup(class); ok && c.PartitionOrder != nil {
					order = c.PartitionOrder
				}
				require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
					Key: offsetstore.AppendKey(nil, "src-b", order(part)), Value: []byte(tc.placed)}))
				for i, r := range tc.records {
					at := born.Add(-time.Duration(len(tc.records)-i) * time.Second)
					if r.bornB {
						at = born.Add(time.Duration(i+1) * time.Second)
					}
					require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "shop.d.t", Key: []byte(`{"id":1}`), Value: familyEvent(r.src), Time: at}))
				}
				furthest := ""
				if tc.furthest != "" {
					furthest = `"furthest_on_a":` + tc.furthest + `,`
				}
				path := filepath.Join(t.TempDir(), "cutover.json")
				require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1","offsets_topic":"connect-offsets","connectors":[
  {"name":"src","target_name":"src-b","type":"source","class":"`+class+`","offsets_topic":"connect-offsets",
   "topic_prefix":"shop","born_after":"`+born.Format(time.RFC3339Nano)+`","stopped_on_a":true,"history_on_a":"read","partitions":[
    {"partition":{"server":"shop"},"offset_on_a":`+tc.placed+`,"offset_placed":`+tc.placed+`,`+furthest+`"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
				c, err := Read(path)
				require.NoError(t, err)
				require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers}))
				p := c.Connectors[0].Partitions[0]
				require.Equal(t, tc.verdict, p.Verdict, p.Detail)
				require.Equal(t, EvidenceRecords, p.Evidence, p.Detail)
				require.Contains(t, p.Detail.String(), tc.detail)
				if tc.replay == 0 {
					require.Nil(t, p.Replay)
					return
				}
				require.NotNil(t, p.Replay, p.Detail)
				require.Equal(t, tc.replay, p.Replay.Records, p.Detail)
				if tc.replayPos != "" {
					require.Equal(t, tc.replayPos, jsonvalue.SortedText(p.Replay.First))
				}
			})
		}
	}
}
