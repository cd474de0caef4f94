package migrate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// produceN creates topic (one partition) on cl's cluster with n records; n < 0 creates
// nothing.
func produceN(t *testing.T, ctx context.Context, cl *kafka.Client, topic string, n int) {
	t.Helper()
	if n < 0 {
		return
	}
	_, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	w := &kafka.Writer{Addr: cl.Addr, Transport: cl.Transport, BatchTimeout: time.Millisecond, Topic: topic}
	defer w.Close()
	for range n {
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Value: []byte("r")}))
	}
}

// idCluster is a kfake cluster with cluster id id, and Connect's topics when connect.
func idCluster(t *testing.T, ctx context.Context, id string, connect bool) ([]string, *kafka.Client) {
	t.Helper()
	brokers := startKfake(t, kfake.ClusterID(id))
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	if connect {
		require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	}
	return brokers, cl
}

// wantHazard is a hazard a case expects: its key, whether it refuses, a part of its text.
type wantHazard struct {
	key      string
	refuse   bool
	contains string
}

// TestFamilyState runs the prechecks of a migration on one connector of A (kfake) into B
// (kfake) and compares the family-state hazards found, then builds its body: the checks of
// Debezium's schema history, signal and heartbeat topics, its logical name and PostgreSQL's
// slot, and of a sink that keeps its own progress.
func TestFamilyState(t *testing.T) {
	pg := func(kv ...string) map[string]string {
		cfg := map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "shop"}
		for i := 0; i < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return cfg
	}
	mysql := func(kv ...string) map[string]string {
		cfg := map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "shop",
			"schema.history.internal.kafka.topic": "history.shop"}
		for i := 0; i < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return cfg
	}
	iceberg := map[string]string{"name": "ice", "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector", "topics": "T"}
	tests := []struct {
		name string
		cfg  map[string]string
		// records of the topic on A and on B (-1: no topic), and the signal group's offset on
		// B (-1: none).
		topic            string
		onA, onB, signal int
		set, keep        []string
		translate        bool
		want             []wantHazard
		// body: a part of the body built, "" when the connector is refused.
		body string
	}{
		{name: "schema history missing on B", cfg: mysql(), topic: "history.shop", onA: 3, onB: -1, want: []wantHazard{
			{"schema.history.internal.kafka.topic", true, `the schema history topic "history.shop" is not on B`}}},
		{name: "schema history short on B", cfg: mysql(), topic: "history.shop", onA: 3, onB: 1, want: []wantHazard{
			{"schema.history.internal.kafka.topic", true, `the schema history topic "history.shop" is short on B: 1 records (partition 0: offsets 0 to 1) of A's 3`}}},
		{name: "schema history complete on B", cfg: mysql(), topic: "history.shop", onA: 3, onB: 3, body: `"server":"shop"`},
		{name: "1.x schema history under its name on B", topic: "h-b", onA: -1, onB: -1, set: []string{"database.history.kafka.topic=h-b"},
			cfg: map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.mysql.MySqlConnector", "database.server.name": "shop",
				"database.history.kafka.topic": "h-a"},
			want: []wantHazard{{"database.history.kafka.topic", true, `the schema history topic "h-b" is not on B`}}},
		// A history or signal channel on a Kafka cluster other than B (A's, kept with
		// --keep-a, a third one, or one that does not answer): its topic is not looked for on
		// B. Which cluster is the id its addresses answer with ("$A", "$B", "$C" name A's, B's
		// and a third cluster's broker, "$localB" B's as localhost, "$fwdB" a port forwarded
		// to B's that no broker advertises, "$closed" an address where nothing listens).
		{name: "schema history kept on A", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$A"), topic: "history.shop", onA: 3, onB: -1,
			keep: []string{"schema.history.internal.kafka.bootstrap.servers"}, want: []wantHazard{
				{"schema.history.internal.kafka.bootstrap.servers", false, `the schema history is kept on A's Kafka cluster "cluster-A" (at "127.0.0.1:`}},
			body: `"server":"shop"`},
		{name: "schema history on a third cluster", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$C"), topic: "history.shop",
			onA: 3, onB: -1, want: []wantHazard{
				{"schema.history.internal.kafka.bootstrap.servers", false, `the schema history is kept on Kafka cluster "cluster-C" (at "127.0.0.1:`}},
			body: `"server":"shop"`},
		{name: "schema history where nothing answers", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$closed"), topic: "history.shop",
			onA: 3, onB: -1, want: []wantHazard{
				{"schema.history.internal.kafka.bootstrap.servers", false, `which migrate could not identify (127.0.0.1:`}},
			body: `"server":"shop"`},
		{name: "schema history on B, named by B's broker", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$B"), topic: "history.shop",
			onA: 3, onB: -1, want: []wantHazard{{"schema.history.internal.kafka.topic", true, `the schema history topic "history.shop" is not on B`}}},
		{name: "schema history on B, named by localhost", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$localB"), topic: "history.shop",
			onA: 3, onB: -1, want: []wantHazard{{"schema.history.internal.kafka.topic", true, `the schema history topic "history.shop" is not on B`}}},
		{name: "schema history on B, through a port no broker advertises", cfg: mysql("schema.history.internal.kafka.bootstrap.servers", "$fwdB"),
			topic: "history.shop", onA: 3, onB: 1, want: []wantHazard{
				{"schema.history.internal.kafka.topic", true, `the schema history topic "history.shop" is short on B: 1 records`}}},
		{name: "signal channel on a third cluster", cfg: pg("signal.enabled.channels", "kafka", "signal.kafka.topic", "sig",
			"signal.kafka.bootstrap.servers", "$C"), topic: "sig", onA: 2, onB: -1, want: []wantHazard{
			{"slot.name", false, `A's task holds`},
			{"signal.kafka.bootstrap.servers", false, `the signal channel is kept on Kafka cluster "cluster-C" (at "127.0.0.1:`}}, body: `"server":"shop"`},
		{name: "signal channel on B, named by localhost", cfg: pg("signal.enabled.channels", "kafka", "signal.kafka.topic", "sig",
			"signal.kafka.bootstrap.servers", "$localB"), topic: "sig", onA: 2, onB: -1, want: []wantHazard{
			{"slot.name", false, `A's task holds`},
			{"signal.kafka.topic", true, `the signal topic "sig" is not on B`}}},
		{name: "signal topic missing on B", cfg: pg("signal.enabled.channels", "source,kafka"), topic: "shop-signal", onA: 2, onB: -1,
			want: []wantHazard{
				{"slot.name", false, `A's task holds the replication slot "debezium" until it stops`},
				{"signal.kafka.topic", true, `the signal topic "shop-signal" is not on B`}}},
		{name: "signal group without offset on B", cfg: pg("signal.enabled.channels", "kafka", "signal.kafka.topic", "sig"), topic: "sig", onA: 2, onB: 2,
			signal: -1, want: []wantHazard{
				{"slot.name", false, `A's task holds`},
				{"signal.kafka.topic", false, `the signal group "kafka-signal" has no offset on B's "sig" (partition 0: offsets 0 to 2)`}}, body: `"server":"shop"`},
		{name: "signal group at its offset on B", cfg: pg("signal.enabled.channels", "kafka", "signal.kafka.topic", "sig", "signal.consumer.group.id", "g"),
			topic: "sig", onA: 2, onB: 2, signal: 2, want: []wantHazard{{"slot.name", false, `A's task holds`}}, body: `"server":"shop"`},
		{name: "heartbeat topic missing on B", cfg: pg("heartbeat.interval.ms", "1000"), onA: -1, onB: -1, want: []wantHazard{
			{"slot.name", false, `A's task holds`},
			{"heartbeat.interval.ms", false, `the heartbeat topic "__debezium-heartbeat.shop" is not on B`}}, body: `"server":"shop"`},
		{name: "topic.prefix changed: offsets re-keyed", cfg: pg(), onA: -1, onB: -1, set: []string{"topic.prefix=shop2"}, want: []wantHazard{
			{"topic.prefix", false, `the offsets kept under server="shop" are written on B under server="shop2"`},
			{"slot.name", false, `A's task holds`}}, body: `"initial_offsets":[{"partition":{"server":"shop2"},"offset":{"lsn":42}}]`},
		{name: "topic.prefix changed with a schema history", cfg: mysql(), topic: "history.shop", onA: 3, onB: 3, set: []string{"topic.prefix=shop2"},
			want: []wantHazard{{"topic.prefix", true, `so is every record of the schema history`}}},
		{name: "slot name changed", cfg: pg("slot.name", "a_slot"), onA: -1, onB: -1, set: []string{"slot.name=b_slot"}, want: []wantHazard{
			{"slot.name", true, `the edit flags change the replication slot from "a_slot" to "b_slot"`},
			{"slot.name", false, `A's task holds the replication slot "a_slot"`}}},
		{name: "slot dropped on stop", cfg: pg("slot.drop.on.stop", "true"), onA: -1, onB: -1, want: []wantHazard{
			{"slot.drop.on.stop", true, `A's connector drops its replication slot "debezium" when it stops`}}},
		{name: "sink with its own progress, copied", cfg: iceberg, topic: "T", onA: 2, onB: 2, want: []wantHazard{
			{"connector.class", false, `offsets not portable by Connect; see the connector's docs`}}, body: `"kafka_topic":"T"`},
		{name: "sink with its own progress, across MirrorMaker 2", cfg: iceberg, topic: "T", onA: 2, onB: 2, translate: true, want: []wantHazard{
			{"connector.class", true, `offsets not portable by Connect; see the connector's docs: it commits its consumer group's offsets itself`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			brokersA, clA := idCluster(t, ctx, "cluster-A", true)
			brokersB, clB := idCluster(t, ctx, "cluster-B", false)
			if tt.topic != "" {
				produceN(t, ctx, clA, tt.topic, tt.onA)
				produceN(t, ctx, clB, tt.topic, tt.onB)
			}
			if tt.signal >= 0 && tt.onB > 0 {
				group := tt.cfg["signal.consumer.group.id"]
				if group == "" {
					group = "kafka-signal"
				}
				require.NoError(t, kafkaio.CommitGroupOffsets(ctx, clB, group, []kafkaio.GroupOffset{{Topic: tt.topic, Offset: int64(tt.signal)}}))
			}
			names := []string{"$A", brokersA[0], "$B", brokersB[0], "$localB", "localhost:" + port(t, brokersB[0]),
				"$fwdB", kafkatest.Forward(t, brokersB[0]), "$closed", kafkatest.ClosedAddr(t)}
			if slices.ContainsFunc(slices.Collect(maps.Values(tt.cfg)), func(v string) bool { return strings.Contains(v, "$C") }) {
				names = append(names, "$C", startKfake(t, kfake.ClusterID("cluster-C"))[0])
			}
			cfg := map[string]string{}
			for k, v := range tt.cfg {
				cfg[k] = strings.NewReplacer(names...).Replace(v)
			}
			writeConfigs(t, ctx, clA, cfg)
			w := &kafka.Writer{Addr: clA.Addr, Transport: clA.Transport, BatchTimeout: time.Millisecond}
			require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets", Key: []byte(`["dbz",{"server":"shop"}]`), Value: []byte(`{"lsn":42}`)}))
			require.NoError(t, w.Close())
			if tt.cfg["topics"] != "" {
				require.NoError(t, kafkaio.CommitGroupOffsets(ctx, clA, "connect-"+tt.cfg["name"], []kafkaio.GroupOffset{{Topic: "T", Offset: 1}}))
			}
			sel, err := source.NewSelection(source.SelectionFlags{Set: tt.set, KeepA: tt.keep})
			require.NoError(t, err)
			opts := Options{Topics: &source.TopicsSource{Brokers: brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"}, Selection: sel}
			if tt.translate {
				policy := mm2.Policy{SourceAlias: "A", Kind: mm2.PolicyIdentity}
				tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokersB}, Policy: policy})
				require.NoError(t, err)
				opts.SinkOffsets, opts.MM2 = fleet.SinkOffsetsTranslate, &fleet.MM2{Translator: tr, Policy: policy}
			}
			src, err := openA(ctx, &opts)
			require.NoError(t, err)
			defer src.Close()
			p, err := planOn(ctx, src, &hazard.B{Target: target.Target{Brokers: brokersB}}, opts)
			require.NoError(t, err)
			entries := apply.EntriesOf(p)
			require.Len(t, entries, 1)
			e := entries[0]
			var got []wantHazard
			var fixes []string
			for _, h := range e.Hazards {
				if h.Check == hazard.HazardFamilyState {
					got = append(got, wantHazard{h.Key, h.Refuse, h.Message.String()})
					fixes = append(fixes, h.Fix.String())
				}
			}
			require.Len(t, got, len(tt.want), "%+v", got)
			for i, w := range tt.want {
				require.Equal(t, w.key, got[i].key, got[i].contains)
				require.Equal(t, w.refuse, got[i].refuse, got[i].contains)
				require.Contains(t, got[i].contains, w.contains)
				require.NotEmpty(t, fixes[i], "every hazard says what to do")
			}
			entries = buildOn(ctx, src, p, opts)
			e = entries[0]
			if tt.body == "" {
				require.Equal(t, apply.OutcomeSkipped, e.Outcome)
				require.Contains(t, e.Message.String(), "refused before anything was stopped (family_state)")
				return
			}
			require.Equal(t, apply.OutcomePlanned, e.Outcome, e.Message)
			b, err := e.Body.MarshalJSON()
			require.NoError(t, err)
			require.True(t, strings.Contains(string(b), tt.body), "%s", b)
		})
	}
}

// Read through A's REST API only, the schema history's completeness cannot be checked: a
// warning says so. A refusal comes before anything is stopped: with --stop-source, a
// PostgreSQL connector that drops its slot on stop is not stopped on A.
func TestFamilyStateThroughREST(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]string
		want wantHazard
	}{
		{name: "schema history on B, A's not read", cfg: map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.mysql.MySqlConnector",
			"topic.prefix": "shop", "schema.history.internal.kafka.topic": "history.shop"},
			want: wantHazard{"schema.history.internal.kafka.topic", false, `the schema history topic "history.shop" is on B (partition 0: offsets 0 to 3) but its completeness was not checked: A's Kafka cluster is not read`}},
		{name: "slot dropped on stop, --stop-source", cfg: map[string]string{"name": "dbz", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
			"topic.prefix": "shop", "slot.drop.on.stop": "true"},
			want: wantHazard{"slot.drop.on.stop", true, `A's connector drops its replication slot "debezium" when it stops`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			brokersB, clB := followCluster(t, ctx, 0, false)
			produceN(t, ctx, clB, "history.shop", 3)
			fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{"dbz": {typ: "source", state: fleet.StateRunning, stopAt: -1, config: tt.cfg,
				offsets: []string{`{"partition":{"server":"shop"},"offset":{"lsn":42}}`}}}}
			opts := Options{ConnectURL: fc.serve(t), StopSource: true, States: &source.StateStore{Brokers: brokersB}}
			src, err := openA(ctx, &opts)
			require.NoError(t, err)
			defer src.Close()
			require.NoError(t, src.OpenStates(ctx, "cluster-A", ""))
			p, err := planOn(ctx, src, &hazard.B{Target: target.Target{Brokers: brokersB}}, opts)
			require.NoError(t, err)
			entries := buildOn(ctx, src, p, opts)
			require.Len(t, entries, 1)
			e := entries[0]
			var family []hazard.Hazard
			for _, h := range e.Hazards {
				if h.Check == hazard.HazardFamilyState {
					family = append(family, h)
				}
			}
			require.Len(t, family, 1, "%+v", e.Hazards)
			h := family[0]
			require.Equal(t, hazard.HazardFamilyState, h.Check)
			require.Equal(t, tt.want.key, h.Key)
			require.Equal(t, tt.want.refuse, h.Refuse)
			require.Contains(t, h.Message.String(), tt.want.contains)
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if tt.want.refuse {
				require.Equal(t, apply.OutcomeSkipped, e.Outcome)
				require.Empty(t, fc.stops, "refused before anything was stopped")
			} else {
				require.Equal(t, []string{"dbz"}, fc.stops)
			}
		})
	}
}

// A fleet's checks ask B what is B's, not the connector's, once per run: whether B's brokers
// create topics is asked once for every heartbeat topic missing there, not once per connector.
func TestFamilyStateAsksBOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokersA, clA := followCluster(t, ctx, 0, true)
	b := startKfakeCluster(t)
	var describeConfigs atomic.Int32
	b.ControlKey(int16(kmsg.DescribeConfigs), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.KeepControl()
		describeConfigs.Add(1)
		return nil, nil, false
	})
	const n = 6
	var cfgs []map[string]string
	for i := range n {
		cfgs = append(cfgs, map[string]string{"name": fmt.Sprintf("dbz-%d", i), "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
			"topic.prefix": fmt.Sprintf("shop%d", i), "heartbeat.interval.ms": "1000"})
	}
	writeConfigs(t, ctx, clA, cfgs...)
	sel, err := source.NewSelection(source.SelectionFlags{})
	require.NoError(t, err)
	opts := Options{Topics: &source.TopicsSource{Brokers: brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"}, Selection: sel}
	src, err := openA(ctx, &opts)
	require.NoError(t, err)
	defer src.Close()
	p, err := planOn(ctx, src, &hazard.B{Target: target.Target{Brokers: b.ListenAddrs()}}, opts)
	require.NoError(t, err)
	entries := apply.EntriesOf(p)
	require.Len(t, entries, n)
	for _, e := range entries {
		var family []string
		for _, h := range e.Hazards {
			if h.Check == hazard.HazardFamilyState && h.Key == "heartbeat.interval.ms" {
				family = append(family, h.Message.String())
			}
		}
		require.Len(t, family, 1, "%s: %v", e.Name, e.Hazards)
		require.Contains(t, family[0], fmt.Sprintf(`the heartbeat topic "__debezium-heartbeat.%s" is not on B`, e.Connector.Config.Map()["topic.prefix"]))
	}
	require.Equal(t, int32(1), describeConfigs.Load(), "B's broker config asked once")
}
