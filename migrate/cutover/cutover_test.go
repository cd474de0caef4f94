package cutover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A sink translated through MirrorMaker 2 is listed with A's committed offset on A's topic,
// the offset placed on B's renamed topic and the partition's translation verdict; a source
// with its own offsets topic names it; a failed connector is not listed.
func TestNewCutover(t *testing.T) {
	sinkPart := func(topic string) jsonvalue.Map {
		return jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: topic}}
	}
	srcOffsets := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "filename", Value: "f"}}, Offset: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}}}
	sinkB := []events.ConnectorOffset{{Partition: sinkPart("A.orders"), Offset: fleet.KafkaOffset(8)}}
	rep := &apply.Report{MigrationID: "m-1", From: "a:9092", To: "b:9092", Connectors: []*apply.Entry{
		{Name: "src", TargetName: "src-b", Type: "source", Outcome: apply.OutcomeSucceeded,
			Connector: &fleet.Connector{Name: "src", Type: connectors.Source, Offsets: srcOffsets},
			Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSource"}, {Key: "offsets.storage.topic", Value: "own"}},
				InitialOffsets: srcOffsets, HasOffsets: true}},
		{Name: "sink", TargetName: "sink-b", Type: "sink", Outcome: apply.OutcomeSucceeded,
			Connector: &fleet.Connector{Name: "sink", Type: connectors.Sink, Offsets: []events.ConnectorOffset{{Partition: sinkPart("orders"), Offset: fleet.KafkaOffset(10)}}},
			Body:      &apply.Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSink"}}, InitialOffsets: sinkB, HasOffsets: true},
			Translation: &apply.SinkTranslation{All: []mm2.PartitionTranslation{{Source: mm2.TopicPartition{Topic: "orders"}, Target: mm2.TopicPartition{Topic: "A.orders"},
				Committed: 10, Verdict: mm2.VerdictReplay, Offset: 8}}}},
		{Name: "failed", TargetName: "failed", Type: "source", Outcome: apply.OutcomeFailed, Connector: &fleet.Connector{Name: "failed"}},
	}}
	c := New(rep, "connect-offsets", nil)
	require.Len(t, c.Connectors, 2)
	src, sink := c.Connectors[0], c.Connectors[1]
	require.Equal(t, "own", src.OffsetsTopic)
	require.Equal(t, "as read", src.Partitions[0].Translation)
	require.Equal(t, "connect-sink-b", sink.Group)
	p := sink.Partitions[0]
	require.Equal(t, "replay", p.Translation)
	require.Equal(t, `{"kafka_offset":10}`, jsonvalue.SortedText(p.OnA))
	require.Equal(t, `{"kafka_offset":8}`, jsonvalue.SortedText(p.Placed))
	require.Equal(t, VerdictWaiting, p.Verdict)

	p.Verdict, p.Detail = VerdictMismatch, fleet.Plain("group on B committed 5, before the 8 placed")
	c.Count()
	require.Equal(t, map[Verdict]int{VerdictVerified: 0, VerdictWaiting: 1, VerdictMismatch: 1, VerdictUnordered: 0, VerdictReplay: 0}, c.Counts)
	require.False(t, c.OK())

	// A replay is counted and listed apart from the mismatches, and is no mismatch.
	p.Verdict, p.Detail = VerdictVerified, fleet.Text{}
	src.Partitions[0].Verdict, src.Partitions[0].Detail = VerdictReplay, fleet.Plain("B produces again 3 records A produced past the offset placed")
	src.Partitions[0].Replay = &Replay{Records: 3, First: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("31")}},
		Last: jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("33")}}}
	c.Count()
	require.Equal(t, map[Verdict]int{VerdictVerified: 1, VerdictWaiting: 0, VerdictMismatch: 0, VerdictUnordered: 0, VerdictReplay: 1}, c.Counts)
	require.True(t, c.OK())
	require.True(t, c.Replays())
	require.True(t, c.Decided())
	var js bytes.Buffer
	require.NoError(t, c.WriteJSON(&js))
	require.Contains(t, js.String(), `"replay": {
            "records": 3,
            "first": {
              "position": 31
            },
            "last": {
              "position": 33
            }
          },
          "verdict": "replay"`)
	require.Contains(t, js.String(), `"replay": 1`)
}

// A connector born PAUSED or STOPPED on B commits nothing until it is resumed: the
// verification reads B once for it and says why it waits, instead of holding the run until its
// timeout; a running one without traffic is still waited for.
func TestVerifyDoesNotWaitForIdleConnectors(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
	part := jsonvalue.Map{{Key: "filename", Value: "f"}}
	placed := jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond}
	defer w.Close()
	for _, name := range []string{"paused", "running"} {
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
			Key: offsetstore.AppendKey(nil, name, offsetstore.JavaHashMapOrder(part)), Value: []byte(`{"position":30}`)}))
	}
	cutover := func(names ...string) *Cutover {
		c := &Cutover{MigrationID: "m-1", OffsetsTopic: "connect-offsets"}
		for _, name := range names {
			state := fleet.StateRunning
			if name == "paused" {
				state = fleet.StatePaused
			}
			c.Connectors = append(c.Connectors, &Connector{Name: name, TargetName: name, Type: "source", Class: "FileStreamSource",
				OffsetsTopic: "connect-offsets", State: state,
				Partitions: []*Partition{{Partition: part, OnA: placed, Placed: placed, Verdict: VerdictWaiting}}})
		}
		return c
	}

	idle := cutover("paused")
	require.NoError(t, Verify(ctx, idle, VerifyOptions{Brokers: brokers, Timeout: time.Hour, Poll: 50 * time.Millisecond}))
	require.NoError(t, ctx.Err(), "returned after one read, not at the timeout")
	p := idle.Connectors[0].Partitions[0]
	require.Equal(t, VerdictWaiting, p.Verdict)
	require.Contains(t, p.Detail.String(), "born PAUSED on B: it commits nothing until it is resumed")

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	both := cutover("paused", "running")
	err := Verify(short, both, VerifyOptions{Brokers: brokers, Timeout: time.Hour, Poll: 50 * time.Millisecond})
	deadline, _ := short.Deadline()
	require.False(t, time.Now().Before(deadline.Add(-100*time.Millisecond)),
		"a running connector without traffic is waited for, to the end of ctx (returned %v)", err)
	require.NotContains(t, both.Connectors[1].Partitions[0].Detail.String(), "born")
}

// A cutover report names the Kafka cluster the migration placed its offsets on: a later
// verification against another cluster (--to-brokers of another B, or a report of another
// migration) is refused instead of judging that cluster's topics; a report without the name
// gets B's.
func TestVerifyRefusesAnotherClustersReport(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
	idB, err := kafkaio.ClusterID(ctx, cl)
	require.NoError(t, err)
	report := func(to string) *Cutover {
		path := filepath.Join(t.TempDir(), "cutover.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1",`+to+`"offsets_topic":"connect-offsets","connectors":[
  {"name":"f","target_name":"f","type":"source","class":"FileStreamSource","offsets_topic":"connect-offsets","partitions":[
    {"partition":{"filename":"f"},"offset_on_a":{"position":30},"offset_placed":{"position":30},"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
		c, err := Read(path)
		require.NoError(t, err)
		return c
	}

	other := report(`"to_cluster_id":"another-cluster",`)
	err = Verify(ctx, other, VerifyOptions{Brokers: brokers})
	require.ErrorContains(t, err, `the cutover report is of a migration into Kafka cluster "another-cluster"; ToBrokers reach cluster "`+idB+`"`)
	require.Equal(t, VerdictWaiting, other.Connectors[0].Partitions[0].Verdict, "nothing judged")

	unnamed := report("")
	require.NoError(t, Verify(ctx, unnamed, VerifyOptions{Brokers: brokers}))
	require.Equal(t, idB, unnamed.ToClusterID)
}

// A partition A's sink group had no offset for (nothing consumed there yet on A) is not placed;
// B's group starts it by its auto.offset.reset, as A's would have: that is no mismatch, and
// the verification says so instead of failing the cutover.
func TestVerifySinkPartitionNeverPlaced(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	_, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "T", NumPartitions: 2, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-snk", []kafkaio.GroupOffset{{Topic: "T", Partition: 0, Offset: 7}, {Topic: "T", Partition: 1, Offset: 3}}))
	c := &Cutover{MigrationID: "m-1", Connectors: []*Connector{{Name: "snk", TargetName: "snk", Type: "sink", Group: "connect-snk",
		Partitions: []*Partition{{Partition: sinkPartition(mm2.TopicPartition{Topic: "T", Partition: 0}), OnA: fleet.KafkaOffset(5), Placed: fleet.KafkaOffset(5),
			Translation: translationAsRead, Verdict: VerdictWaiting}}}}}
	require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers}))
	ps := c.Connectors[0].Partitions
	require.Len(t, ps, 2)
	require.Equal(t, VerdictVerified, ps[0].Verdict, ps[0].Detail)
	require.Equal(t, translationNotPlaced, ps[1].Translation)
	require.Equal(t, VerdictUnordered, ps[1].Verdict, ps[1].Detail)
	require.Contains(t, ps[1].Detail.String(), "auto.offset.reset")
	require.True(t, c.OK(), "no mismatch: %+v", c.Counts)
}

// A Debezium connector placed at a streaming offset whose first commit on B is a snapshot's
// started over (snapshot.mode, or its position gone from the database's log): it did not
// resume from the offset placed. That is a mismatch, not a pair to compare by hand; a
// placement in the middle of a snapshot still is.
func TestVerifySnapshotAfterStreamingPlacement(t *testing.T) {
	tests := []struct {
		name, placed, first string
		want                Verdict
	}{
		{name: "streaming placed, snapshot on B", placed: `{"file":"mysql-bin.000003","pos":1000}`,
			first: `{"file":"mysql-bin.000001","pos":4,"snapshot":true}`, want: VerdictMismatch},
		{name: "streaming placed, streaming on B", placed: `{"file":"mysql-bin.000003","pos":1000}`,
			first: `{"file":"mysql-bin.000003","pos":2000}`, want: VerdictVerified},
		{name: "snapshot placed, snapshot on B", placed: `{"file":"mysql-bin.000003","pos":1000,"snapshot":true}`,
			first: `{"file":"mysql-bin.000003","pos":1000,"snapshot":true,"ts_sec":2}`, want: VerdictUnordered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			brokers := startKfake(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
			require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
			part := jsonvalue.Map{{Key: "server", Value: "shop"}}
			placed, err := jsonvalue.NewScanner([]byte(tt.placed)).Object()
			require.NoError(t, err)
			key := offsetstore.AppendKey(nil, "dbz", offsetstore.JavaHashMapOrder(part))
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond}
			defer w.Close()
			require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets", Key: key, Value: []byte(tt.placed)},
				kafka.Message{Topic: "connect-offsets", Key: key, Value: []byte(tt.first)}))
			c := &Cutover{MigrationID: "m-1", OffsetsTopic: "connect-offsets", Connectors: []*Connector{{Name: "dbz", TargetName: "dbz", Type: "source",
				Class: "io.debezium.connector.mysql.MySqlConnector", OffsetsTopic: "connect-offsets",
				Partitions: []*Partition{{Partition: part, OnA: placed, Placed: placed, Verdict: VerdictWaiting}}}}}
			require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers}))
			p := c.Connectors[0].Partitions[0]
			require.Equal(t, tt.want, p.Verdict, p.Detail)
			if tt.want == VerdictMismatch {
				require.Contains(t, p.Detail.String(), "a snapshot's offset")
			}
		})
	}
}

// A Debezium connector whose logical name the edit flags change has its offsets placed under
// the new name: the cutover report still gives each partition A's offset at stop, found under
// the old name.
func TestNewCutoverRekeyedSource(t *testing.T) {
	part := func(name string) jsonvalue.Map { return jsonvalue.Map{{Key: "server", Value: name}} }
	lsn := jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("42")}}
	conn := &fleet.Connector{Name: "dbz", Type: connectors.Source, Offsets: []events.ConnectorOffset{{Partition: part("shop"), Offset: lsn}}}
	rk := &fleet.Rekey{Key: "server", From: "shop", To: "shop2"}
	rep := &apply.Report{MigrationID: "m-1", Connectors: []*apply.Entry{{Name: "dbz", TargetName: "dbz", Type: "source", Outcome: apply.OutcomeSucceeded, Connector: conn,
		Planned: &plan.Connector{Connector: conn, Rekey: rk},
		Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"}},
			InitialOffsets: rk.Apply(conn.Offsets), HasOffsets: true}}}}
	c := New(rep, "connect-offsets", nil)
	p := c.Connectors[0].Partitions[0]
	require.Equal(t, `{"server":"shop2"}`, jsonvalue.SortedText(p.Partition))
	require.Equal(t, `{"lsn":42}`, jsonvalue.SortedText(p.OnA), "A's offset, kept under the old name")
}

// A sink placed below B's log start of its topic skips the records in between: B no longer
// holds them (retention, or a mirror that began after them), so the sink's consumer resets
// past them. That is a mismatch naming the log start and how many records were skipped, also
// when retention removes them while the verification waits; records consumed while B held
// them stay verified when retention removes them later.
func TestVerifySinkBelowLogStart(t *testing.T) {
	type step struct {
		deleteTo, commit int64 // before the verification: records deleted below deleteTo, the group's commit (0: none)
		verdict          Verdict
		detail           string
	}
	tests := []struct {
		name   string
		placed int64
		steps  []step
	}{
		{name: "placed below the log start, group past it", placed: 5,
			steps: []step{{deleteTo: 100, commit: 150, verdict: VerdictMismatch,
				detail: `B's log start of topic "T" partition 0 is 100, past the offset placed, 5: records 5..99 (95) are not on B`}}},
		{name: "placed below the log start, nothing consumed yet", placed: 5,
			steps: []step{{deleteTo: 100, commit: 5, verdict: VerdictMismatch, detail: `group "connect-snk" is at 5`}}},
		{name: "placed at the log start", placed: 100,
			steps: []step{{deleteTo: 100, commit: 150, verdict: VerdictVerified, detail: "past the 100 placed"}}},
		{name: "retention deletes them while the verification waits", placed: 5,
			steps: []step{{commit: 5, verdict: VerdictWaiting}, {deleteTo: 100, commit: 150, verdict: VerdictMismatch, detail: "records 5..99 (95) are not on B"}}},
		{name: "retention deletes them once consumed", placed: 5,
			steps: []step{{commit: 150, verdict: VerdictVerified}, {deleteTo: 100, verdict: VerdictVerified, detail: "past the 5 placed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := startKfakeCluster(t)
			brokers := kc.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
			require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "T", 1, nil))
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "T", BatchTimeout: time.Millisecond, BatchSize: 200, RequiredAcks: kafka.RequireAll}
			defer w.Close()
			msgs := make([]kafka.Message, 200)
			for i := range msgs {
				msgs[i] = kafka.Message{Value: []byte("r")}
			}
			require.NoError(t, w.WriteMessages(ctx, msgs...))
			c := &Cutover{MigrationID: "m-1", Connectors: []*Connector{{Name: "snk", TargetName: "snk", Type: "sink", Group: "connect-snk",
				Partitions: []*Partition{{Partition: sinkPartition(mm2.TopicPartition{Topic: "T", Partition: 0}), OnA: fleet.KafkaOffset(tt.placed),
					Placed: fleet.KafkaOffset(tt.placed), Translation: translationAsRead, Verdict: VerdictWaiting}}}}}
			for _, s := range tt.steps {
				if s.deleteTo > 0 {
					require.NoError(t, kc.DeleteRecords("T", 0, s.deleteTo))
				}
				if s.commit > 0 {
					require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, "connect-snk", []kafkaio.GroupOffset{{Topic: "T", Partition: 0, Offset: s.commit}}))
				}
				require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers}))
				p := c.Connectors[0].Partitions[0]
				require.Equal(t, s.verdict, p.Verdict, p.Detail)
				require.Contains(t, p.Detail.String(), s.detail)
			}
		})
	}
}

// While the verification waits for B's connectors to commit, it says what it waits for and
// for how long when it starts, and the partitions per verdict as it goes, instead of a
// silent wait.
func TestVerifyTellsWhatItWaitsFor(t *testing.T) {
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 1, nil))
	part := jsonvalue.Map{{Key: "filename", Value: "f"}}
	placed := jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
		Key: offsetstore.AppendKey(nil, "src-b", offsetstore.JavaHashMapOrder(part)), Value: []byte(`{"position":30}`)}))
	c := &Cutover{MigrationID: "m-1", OffsetsTopic: "connect-offsets", Connectors: []*Connector{{Name: "src", TargetName: "src-b",
		Type: "source", Class: "FileStreamSource", OffsetsTopic: "connect-offsets", State: fleet.StateRunning,
		Partitions: []*Partition{{Partition: part, OnA: placed, Placed: placed, Verdict: VerdictWaiting}}}}}
	waiting, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var told []Waiting
	progress := func(w Waiting) {
		mu.Lock()
		told = append(told, w)
		n := len(told)
		mu.Unlock()
		if n >= 3 {
			stop() // the start and two rounds of counts
		}
	}
	err := Verify(waiting, c, VerifyOptions{Brokers: brokers, Timeout: time.Hour, Poll: 10 * time.Millisecond,
		Progress: progress, ProgressEvery: time.Nanosecond})
	require.NoError(t, ctx.Err())
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(told), 3, "%v %+v", err, c.Connectors[0].Partitions[0])
	counts := map[Verdict]int{VerdictVerified: 0, VerdictWaiting: 1, VerdictMismatch: 0, VerdictUnordered: 0, VerdictReplay: 0}
	first := told[0]
	require.True(t, first.First)
	require.Equal(t, Waiting{First: true, Elapsed: first.Elapsed, Timeout: time.Hour, Every: time.Nanosecond, Counts: counts,
		Open: 1, Total: 1, Connectors: []string{"src-b"}, OffsetsTopics: []string{"connect-offsets"}}, first)
	require.False(t, told[1].First)
	require.Equal(t, counts, told[1].Counts)
	require.Equal(t, time.Hour, told[1].Timeout)
	require.Empty(t, told[1].Connectors, "the partitions waited for are told once")
}

// The cutover report keeps what a rollback needs of each connector: its state on A before the
// move (the state the migration recorded when A now shows the STOPPED of an earlier run), the
// request that created it on B, a source's re-key, and the sources a sink followed; a report
// written before these fields were kept still reads, with them empty.
func TestNewCutoverKeepsWhatRollbackNeeds(t *testing.T) {
	part := func(name string) jsonvalue.Map { return jsonvalue.Map{{Key: "server", Value: name}} }
	lsn := jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("42")}}
	dbz := &fleet.Connector{Name: "dbz", Type: connectors.Source, State: fleet.StatePaused,
		Offsets: []events.ConnectorOffset{{Partition: part("shop"), Offset: lsn}}}
	rk := &fleet.Rekey{Key: "server", From: "shop", To: "shop2"}
	sinkOffs := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "T"}},
		Offset: fleet.KafkaOffset(2)}}
	sink := &fleet.Connector{Name: "sink", Type: connectors.Sink, State: fleet.StateRunning}
	unknown := &fleet.Connector{Name: "rest-only", Type: connectors.Source, StateUnknown: "status FAILED"}
	rep := &apply.Report{MigrationID: "m-1", Connectors: []*apply.Entry{
		{Name: "dbz", TargetName: "dbz", Type: "source", Outcome: apply.OutcomeSucceeded, Connector: dbz, RequestID: "m-1/dbz/1",
			Planned: &plan.Connector{Connector: dbz, Rekey: rk}, StoppedBy: apply.StoppedByREST,
			Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"}},
				InitialOffsets: rk.Apply(dbz.Offsets), HasOffsets: true}},
		{Name: "sink", TargetName: "sink", Type: "sink", Outcome: apply.OutcomeSucceeded, Connector: sink, RequestID: "m-1/sink/2",
			Translation: &apply.FollowedSources{FollowsSources: []string{"dbz"}, Topics: []string{"T"}},
			Body:        &apply.Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSink"}}, InitialOffsets: sinkOffs, HasOffsets: true}},
		{Name: "rest-only", TargetName: "rest-only", Type: "source", Outcome: apply.OutcomeSucceeded, Connector: unknown, RequestID: "m-1/rest-only/1",
			Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "FileStreamSource"}}}},
	}}
	c := New(rep, "connect-offsets", nil)
	require.Len(t, c.Connectors, 3)
	got, sk, un := c.Connectors[0], c.Connectors[1], c.Connectors[2]
	require.Equal(t, fleet.StatePaused, got.StateOnA)
	require.Equal(t, "m-1/dbz/1", got.RequestID)
	require.Equal(t, rk, got.Rekey)
	require.Empty(t, got.FollowsSources)
	require.Equal(t, fleet.StateRunning, sk.StateOnA)
	require.Equal(t, "m-1/sink/2", sk.RequestID)
	require.Equal(t, []string{"dbz"}, sk.FollowsSources)
	require.Nil(t, sk.Rekey)
	require.Empty(t, un.StateOnA, "a state A did not tell is not guessed")

	var js bytes.Buffer
	require.NoError(t, c.WriteJSON(&js))
	require.Contains(t, js.String(), `"rekey": {
        "key": "server",
        "from": "shop",
        "to": "shop2"
      }`)
	require.Contains(t, js.String(), `"follows_sources": [
        "dbz"
      ]`)
	require.Contains(t, js.String(), `"state_on_a": "PAUSED"`)
	require.NotContains(t, js.String(), `"operator_managed"`, "omitted when false")

	// A report written before the fields: it reads, and they are empty.
	old := filepath.Join(t.TempDir(), "old.json")
	require.NoError(t, os.WriteFile(old, []byte(`{"migration_id":"m-0","from":"a","to":"b","offsets_topic":"connect-offsets",
		"connectors":[{"name":"s","target_name":"s","type":"source","class":"x","stopped_on_a":true,"stopped_on_a_by":"rest","partitions":[]}]}`), 0o600))
	back, err := Read(old)
	require.NoError(t, err)
	require.Equal(t, "", back.Connectors[0].StateOnA)
	require.Equal(t, "", back.Connectors[0].RequestID)
	require.Nil(t, back.Connectors[0].Rekey)
	require.Nil(t, back.MM2)
	require.Equal(t, "", back.StateTopic)
}

// TestVerifyReadsEachLogStartOncePerPass: sinks reading the same topic cost one log-start
// read per partition and pass, not one per sink (a fleet's sinks share their topics).
func TestVerifyReadsEachLogStartOncePerPass(t *testing.T) {
	const sinks, partitions = 5, 3
	kc := startKfakeCluster(t)
	var mu sync.Mutex
	listed := 0 // ListOffsets partitions of topic T asked for
	kc.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range req.(*kmsg.ListOffsetsRequest).Topics {
			if tp.Topic == "T" {
				listed += len(tp.Partitions)
			}
		}
		return nil, nil, false
	})
	brokers := kc.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "T", partitions, nil))
	c := &Cutover{MigrationID: "m-1"}
	for i := range sinks {
		cc := &Connector{Name: fmt.Sprintf("snk-%d", i), TargetName: fmt.Sprintf("snk-%d", i), Type: "sink", Group: fmt.Sprintf("connect-snk-%d", i)}
		var commits []kafkaio.GroupOffset
		for p := range partitions {
			cc.Partitions = append(cc.Partitions, &Partition{Partition: sinkPartition(mm2.TopicPartition{Topic: "T", Partition: int32(p)}),
				OnA: fleet.KafkaOffset(0), Placed: fleet.KafkaOffset(0), Translation: translationAsRead, Verdict: VerdictWaiting})
			commits = append(commits, kafkaio.GroupOffset{Topic: "T", Partition: int32(p), Offset: 0})
		}
		require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, cc.Group, commits))
		c.Connectors = append(c.Connectors, cc)
	}
	require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers})) // one pass
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, partitions, listed, "log starts of T's partitions read in one pass of %d sinks", sinks)
	for _, cc := range c.Connectors {
		for _, p := range cc.Partitions {
			require.Equal(t, VerdictWaiting, p.Verdict, p.Detail)
			require.NotNil(t, p.LogStartOnB, "every sink's partitions get the log start")
		}
	}
}

// A pass reads the sinks' groups on B side by side (groupReads at a time), not one after the
// other: a fleet's thousands of sinks spent seconds a pass on their round trips. B's broker
// holds each OffsetFetch of these groups until 8 are in flight at once: one after the other,
// only one ever was.
func TestVerifyReadsTheSinksGroupsSideBySide(t *testing.T) {
	const sinks, want = 16, 8
	kc := startKfakeCluster(t)
	most := kafkatest.HoldGroupReads(kc, want, func(r *kmsg.OffsetFetchRequest) bool {
		return strings.HasPrefix(r.Group, "connect-par-")
	})
	brokers := kc.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "T", 1, nil))
	c := &Cutover{MigrationID: "m-1"}
	for i := range sinks {
		cc := &Connector{Name: fmt.Sprintf("par-%02d", i), TargetName: fmt.Sprintf("par-%02d", i), Type: "sink", Group: fmt.Sprintf("connect-par-%02d", i)}
		cc.Partitions = append(cc.Partitions, &Partition{Partition: sinkPartition(mm2.TopicPartition{Topic: "T", Partition: 0}),
			OnA: fleet.KafkaOffset(0), Placed: fleet.KafkaOffset(0), Translation: translationAsRead, Verdict: VerdictWaiting})
		require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, cc.Group, []kafkaio.GroupOffset{{Topic: "T", Partition: 0, Offset: 0}}))
		c.Connectors = append(c.Connectors, cc)
	}
	require.NoError(t, Verify(ctx, c, VerifyOptions{Brokers: brokers})) // one pass
	for _, cc := range c.Connectors {
		require.Equal(t, VerdictWaiting, cc.Partitions[0].Verdict, "%s: %s", cc.Name, cc.Partitions[0].Detail)
	}
	require.GreaterOrEqual(t, most(), want, "the sinks' group reads in flight at once")
}
