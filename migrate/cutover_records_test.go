package migrate

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
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
			detail: `produces again the 2 records A produced past it, from {"lsn":1050} (topic "A.shop.public.orders" partition 0 offset 1`},
		{name: "A produced the rest of the placed transaction: a replay",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1010, tx: 100, bornB: false},
				{topic: "shop.public.orders", lsn: 1010, tx: 100, bornB: true}},
			verdict: VerdictReplay, evidence: "records", replay: 1, detail: `the 1 record A produced past it, from {"lsn":1010}`},
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
				require.NoError(t, offsetstore.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
				part := jsonvalue.Map{{Key: "server", Value: "shop"}}
				placed := cmp.Or(tc.placed, atCommit)
				w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
				defer w.Close()
				require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
					Key: offsetstore.AppendKey(nil, "pg-b", offsetstore.JavaHashMapOrder(part)), Value: []byte(placed)}))
				for _, r := range tc.records {
					require.NoError(t, offsetstore.EnsureTopic(ctx, cl, r.topic, 1, nil))
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
				c, err := ReadCutover(path)
				require.NoError(t, err)
				require.NoError(t, VerifyCutover(ctx, c, VerifyCutoverOptions{Brokers: brokers}))
				p := c.Connectors[0].Partitions[0]
				require.Equal(t, tc.verdict, p.Verdict, p.Detail)
				require.Equal(t, tc.evidence, p.Evidence)
				require.Contains(t, p.Detail, tc.detail)
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
	rep := &Report{MigrationID: "m-1", Connectors: []*Entry{{Name: "pg", TargetName: "pg", Type: "source", Outcome: OutcomeSucceeded, bornAfter: read,
		connector: &Connector{Name: "pg", Type: connectors.Source, Offsets: offsets},
		Body: &Body{Config: events.Config{{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"}, {Key: "topic.prefix", Value: "shop"}},
			InitialOffsets: offsets, HasOffsets: true}}}}
	cc := NewCutover(rep, "connect-offsets", nil).Connectors[0]
	require.Equal(t, "shop", cc.TopicPrefix)
	require.Equal(t, read, cc.BornAfter)
}
