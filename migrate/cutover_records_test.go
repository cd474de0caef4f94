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
// mirrored under another name: they are not taken for B's, but A's last one must not be past
// the offset placed.
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
	cases := []struct {
		name     string
		records  []rec
		verdict  Verdict
		evidence string
		detail   string
	}{
		{name: "B continues after the placed offset, past A's mirrored records",
			records: []rec{{topic: "shop.public.orders", lsn: 900, bornB: false}, {topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1100, bornB: true}, {topic: "shop.public.orders", lsn: 1200, bornB: true}},
			verdict: VerdictVerified, evidence: "records", detail: `B's first record is at {"lsn":1100}`},
		{name: "B produces the placed record again",
			records: []rec{{topic: "shop.public.orders", lsn: 1000, bornB: false}, {topic: "shop.public.orders", lsn: 1000, bornB: true}, {topic: "shop.public.orders", lsn: 1100, bornB: true}},
			verdict: VerdictMismatch, evidence: "records", detail: `in transaction 100, which A had produced`},
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
		{name: "A produced past the placed offset (its renamed mirror on B)",
			records: []rec{{topic: "A.shop.public.orders", lsn: 1000, bornB: false}, {topic: "A.shop.public.orders", lsn: 1050, bornB: false}, {topic: "shop.public.orders", lsn: 1100, bornB: true}},
			verdict: VerdictMismatch, evidence: "records", detail: `A's last record is at {"lsn":1050}`},
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
				w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond}
				defer w.Close()
				require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
					Key:   offsetstore.AppendKey(nil, "pg-b", offsetstore.JavaHashMapOrder(part)),
					Value: []byte(`{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1}`)}))
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
				path := filepath.Join(t.TempDir(), "cutover.json")
				require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1","offsets_topic":"connect-offsets","connectors":[
  {"name":"pg","target_name":"pg-b","type":"source","class":"io.debezium.connector.postgresql.PostgresConnector","offsets_topic":"connect-offsets",
   "topic_prefix":"shop","born_after":"`+born.Format(time.RFC3339Nano)+`","partitions":[
    {"partition":{"server":"shop"},"offset_on_a":{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1},
     "offset_placed":{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1},"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
				c, err := ReadCutover(path)
				require.NoError(t, err)
				require.NoError(t, VerifyCutover(ctx, c, VerifyCutoverOptions{Brokers: brokers}))
				p := c.Connectors[0].Partitions[0]
				require.Equal(t, tc.verdict, p.Verdict, p.Detail)
				require.Equal(t, tc.evidence, p.Evidence)
				require.Contains(t, p.Detail, tc.detail)
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
