package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// pointsAtA is A, with its Connect topics on a Kafka cluster of its own and a Connect REST
// stand-in for the stops, holding connectors whose settings name A; and B, a second Kafka
// cluster without agents.
type pointsAtA struct {
	brokersA, brokersB []string
	fc                 *fakeConnect
}

const jaasNamingA = `org.apache.kafka.common.security.plain.PlainLoginModule required username="cluster-A" password="pw-secret-3";`

func newPointsAtA(t *testing.T) *pointsAtA {
	t.Helper()
	f := &pointsAtA{brokersA: startKfake(t, kfake.ClusterID("cluster-A")), brokersB: startKfake(t, kfake.ClusterID("cluster-B"))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &kafka.Transport{MetadataTTL: time.Second}
	for _, brokers := range [][]string{f.brokersA, f.brokersB} {
		cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
		require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	}
	clB := &kafka.Client{Addr: kafka.TCP(f.brokersB...), Transport: tr}
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, offsetstore.EnsureTopic(ctx, clB, topic, 1, nil))
	}
	// The Debezium connectors' schema history and signal topics are on both clusters, under
	// both names (the family-state checks want them on B): only their settings are at issue.
	clA := &kafka.Client{Addr: kafka.TCP(f.brokersA...), Transport: tr}
	for _, topic := range []string{"shop-signals", "schemahistory.inv"} {
		require.NoError(t, offsetstore.EnsureTopic(ctx, clA, topic, 1, nil))
		for _, onB := range []string{topic, "A." + topic} {
			require.NoError(t, offsetstore.EnsureTopic(ctx, clB, onB, 1, nil))
		}
	}
	a, b := f.brokersA[0], f.brokersB[0]
	configs := map[string]map[string]string{
		"dbz-pg": {"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "shop",
			"database.password": "pw-secret-1", "signal.enabled.channels": "source,kafka",
			"signal.kafka.bootstrap.servers": "other-broker:9092, " + a, "signal.kafka.topic": "shop-signals"},
		"dbz-mysql": {"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "inv",
			"database.password": "pw-secret-2", "schema.history.internal.kafka.bootstrap.servers": "PLAINTEXT://" + a,
			"schema.history.internal.kafka.topic": "schemahistory.inv"},
		"mm2-src": {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "A",
			"target.cluster.alias": "B", "source.cluster.bootstrap.servers": a, "target.cluster.bootstrap.servers": b, "topics": "orders"},
		// A secret that names A's cluster id: named by its key, never by its value.
		"jaas-src": maps.Collect(func(yield func(string, string) bool) {
			for k, v := range fileSourceConfig("jaas-src") {
				yield(k, v)
			}
			yield("producer.override.sasl.jaas.config", jaasNamingA)
		}),
		"file-src": fileSourceConfig("file-src"),
	}
	f.fc = &fakeConnect{t: t, connectors: map[string]*fakeConnector{}}
	w := &kafka.Writer{Addr: kafka.TCP(f.brokersA...), Transport: tr, BatchTimeout: time.Millisecond}
	defer w.Close()
	for name, cfg := range configs {
		cfg["name"] = name
		v, err := json.Marshal(map[string]any{"properties": cfg})
		require.NoError(t, err)
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-configs", Key: []byte("connector-" + name), Value: v}))
		f.fc.connectors[name] = &fakeConnector{typ: "source", state: StateRunning, stopAt: -1, config: cfg}
	}
	return f
}

func (f *pointsAtA) options(t *testing.T, sel SelectionFlags) MigrateOptions {
	t.Helper()
	s, err := NewSelection(sel)
	require.NoError(t, err)
	return MigrateOptions{
		Options: Options{Topics: &TopicsSource{Brokers: f.brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
			ConnectURL: f.fc.serve(t), Selection: s, StopSource: true,
			StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond, StopTimeout: 5 * time.Second},
		To: Target{Brokers: f.brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 3 * time.Second, Grace: 100 * time.Millisecond,
	}
}

// run migrates with opts and returns the report, the refused connectors' messages and the
// connectors stopped on A. No report ever holds a secret value.
func (f *pointsAtA) run(t *testing.T, opts MigrateOptions) (rep *Report, refused map[string]string, stopped []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Migrate(ctx, opts)
	require.NoError(t, err)
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	for _, secret := range []string{"pw-secret", `username=\"cluster-A\"`, "PlainLoginModule"} {
		require.NotContains(t, js.String(), secret)
	}
	refused = map[string]string{}
	for _, e := range rep.Connectors {
		if e.Outcome == OutcomeSkipped {
			refused[e.Name] = e.Message
			require.Nil(t, e.Body, e.Name)
			require.Empty(t, e.RequestID, "%s: nothing of a refused connector is published", e.Name)
		}
	}
	f.fc.mu.Lock()
	defer f.fc.mu.Unlock()
	stopped = slices.Sorted(slices.Values(f.fc.stops))
	return rep, refused, stopped
}

// A connector whose settings on B would still name A's brokers or A's cluster is refused before
// anything is stopped: its report entry names the connector, the key, and the value unless
// the key is a secret; the others move.
func TestMigrateRefusesSettingsPointingAtA(t *testing.T) {
	f := newPointsAtA(t)
	a := f.brokersA[0]
	_, refused, stopped := f.run(t, f.options(t, SelectionFlags{}))
	want := map[string][]string{
		"dbz-pg":    {"signal.kafka.bootstrap.servers", `"other-broker:9092, ` + a + `"`, "--map-value"},
		"dbz-mysql": {"schema.history.internal.kafka.bootstrap.servers", `"PLAINTEXT://` + a + `"`, "--map-value"},
		"mm2-src":   {"source.cluster.bootstrap.servers", "--keep-a"},
		"jaas-src":  {"producer.override.sasl.jaas.config", `A's Kafka cluster id "cluster-A"`},
	}
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(refused)), "refused: %v", refused)
	for name, parts := range want {
		for _, p := range parts {
			require.Contains(t, refused[name], p, name)
		}
	}
	require.NotContains(t, refused["mm2-src"], "target.cluster.bootstrap.servers", "B's brokers are not A's")
	require.Equal(t, []string{"file-src"}, stopped, "a refused connector is not stopped on A")
}

// body is the config entry's body holds for key on B.
func body(t *testing.T, rep *Report, name, key string) string {
	t.Helper()
	for _, e := range rep.Connectors {
		if e.Name == name {
			require.NotNil(t, e.Body, "%s: %s", name, e.Message)
			v, _ := e.Body.Config.Get(key)
			return v
		}
	}
	t.Fatalf("no entry %s", name)
	return ""
}

// --map-value rewrites A's addresses to B's in every connector at once, --keep-a keeps a key
// on A on purpose (a warning), and neither touches a secret. Across MirrorMaker 2 with a
// renaming policy, a Debezium topic setting of a Kafka on B names A's topic, whose copy on B has
// the remote name: refused until mapped. A read through REST only: the check is partial, a
// warning.
func TestMigrateMapsSettingsToB(t *testing.T) {
	f := newPointsAtA(t)
	a, b := f.brokersA[0], f.brokersB[0]
	mapAB := []string{a + "=" + b, "PLAINTEXT://" + a + "=" + b}
	keep := []string{"source.cluster.bootstrap.servers"}
	secretRefused := map[string][]string{"jaas-src": {"producer.override.sasl.jaas.config", "--set producer.override.sasl.jaas.config=", "(a secret, not shown)"}}

	t.Run("mapped to B", func(t *testing.T) {
		rep, refused, stopped := f.run(t, f.options(t, SelectionFlags{MapValue: mapAB, KeepA: keep}))
		require.Equal(t, []string{"jaas-src"}, slices.Collect(maps.Keys(refused)), "--map-value leaves the secret alone: %v", refused)
		for _, p := range secretRefused["jaas-src"] {
			require.Contains(t, refused["jaas-src"], p)
		}
		require.Equal(t, []string{"dbz-mysql", "dbz-pg", "file-src", "mm2-src"}, stopped)
		require.Equal(t, "other-broker:9092,"+b, body(t, rep, "dbz-pg", "signal.kafka.bootstrap.servers"))
		require.Equal(t, b, body(t, rep, "dbz-mysql", "schema.history.internal.kafka.bootstrap.servers"))
		require.Equal(t, a, body(t, rep, "mm2-src", "source.cluster.bootstrap.servers"), "kept on A")
		require.Equal(t, b, body(t, rep, "mm2-src", "target.cluster.bootstrap.servers"))
		var kept []Hazard
		for _, e := range rep.Connectors {
			for _, h := range e.Hazards {
				if e.Name == "mm2-src" && h.Check == HazardPointsAtA {
					kept = append(kept, h)
				}
			}
		}
		require.Len(t, kept, 1)
		require.False(t, kept[0].Refuse)
		require.Contains(t, kept[0].Message, "(kept by --keep-a)")
	})

	t.Run("topics MirrorMaker 2 renames", func(t *testing.T) {
		f := newPointsAtA(t)
		a, b := f.brokersA[0], f.brokersB[0]
		policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"}
		tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: f.brokersB}, Policy: policy})
		require.NoError(t, err)
		flags := SelectionFlags{Include: []string{"dbz-.*"}, MapValue: []string{a + "=" + b, "PLAINTEXT://" + a + "=" + b}}
		opts := f.options(t, flags)
		opts.SinkOffsets, opts.SinkTranslator = SinkOffsetsTranslate, &MM2Sinks{Translator: tr, Policy: policy}
		_, refused, stopped := f.run(t, opts)
		require.Empty(t, stopped)
		require.Contains(t, refused["dbz-pg"], `signal.kafka.topic: topic "shop-signals" is A's name: on B (signal.kafka.bootstrap.servers) MirrorMaker 2's default replication policy mirrors it as "A.shop-signals"`)
		require.Contains(t, refused["dbz-pg"], "--map-value shop-signals=A.shop-signals")
		require.Contains(t, refused["dbz-mysql"], `schema.history.internal.kafka.topic: topic "schemahistory.inv" is A's name`)

		flags.MapValue = append(flags.MapValue, "shop-signals=A.shop-signals", "schemahistory.inv=A.schemahistory.inv")
		opts = f.options(t, flags)
		opts.SinkOffsets, opts.SinkTranslator = SinkOffsetsTranslate, &MM2Sinks{Translator: tr, Policy: policy}
		rep, refused, stopped := f.run(t, opts)
		require.Empty(t, refused)
		require.Equal(t, []string{"dbz-mysql", "dbz-pg"}, stopped)
		require.Equal(t, "A.schemahistory.inv", body(t, rep, "dbz-mysql", "schema.history.internal.kafka.topic"))
		require.Equal(t, "A.shop-signals", body(t, rep, "dbz-pg", "signal.kafka.topic"))
	})

	t.Run("A read through REST only: partial, a warning", func(t *testing.T) {
		opts := f.options(t, SelectionFlags{Include: []string{"dbz-pg|mm2-src|jaas-src"}})
		opts.Topics, opts.StopSource = nil, false
		rep, refused, _ := f.run(t, opts)
		require.Equal(t, []string{"jaas-src"}, slices.Collect(maps.Keys(refused)), "A's cluster id is known from its REST API")
		warned := map[string][]string{}
		for _, e := range rep.Connectors {
			for _, h := range e.Hazards {
				if !h.Refuse && h.Check == HazardPointsAtA {
					warned[e.Name] = append(warned[e.Name], h.Key)
					require.Contains(t, h.Message, "A's brokers are not known")
					require.Contains(t, h.Fix, "--from-brokers")
				}
			}
		}
		require.Equal(t, map[string][]string{"dbz-pg": {"signal.kafka.bootstrap.servers"}, "mm2-src": {"source.cluster.bootstrap.servers"}}, warned,
			"a list that names B's brokers is not in doubt")
	})
}

// A --map-value matches a whole value (a list in any order) or one element of a list; it never
// touches the name, a secret or a --keep-a key.
func TestMapValue(t *testing.T) {
	sel, err := NewSelection(SelectionFlags{MapValue: []string{"a1:9092, a2:9092=b1:9092,b2:9092", "a3:9092=b3:9092", "orders=A.orders"},
		KeepA: []string{"source.cluster.bootstrap.servers"}})
	require.NoError(t, err)
	cfg := events.Config{
		{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"},
		{Key: "signal.kafka.bootstrap.servers", Value: "a2:9092 ,a1:9092"},
		{Key: "producer.override.bootstrap.servers", Value: "a3:9092,x:1"},
		{Key: "source.cluster.bootstrap.servers", Value: "a3:9092"},
		{Key: "topics", Value: "orders, payments"},
		{Key: "database.password", Value: "orders"},
		{Key: "topic.prefix", Value: "orders2"},
	}
	got := sel.EditConfig(cfg, "orders").Map()
	require.Equal(t, map[string]string{
		"connector.class":                     "io.debezium.connector.postgresql.PostgresConnector",
		"signal.kafka.bootstrap.servers":      "b1:9092,b2:9092",
		"producer.override.bootstrap.servers": "b3:9092,x:1",
		"source.cluster.bootstrap.servers":    "a3:9092",
		"topics":                              "A.orders,payments",
		"database.password":                   "orders",
		"topic.prefix":                        "orders2",
		"name":                                "orders",
	}, got)
	for _, bad := range []string{"=x", "a=", "a", " , =x"} {
		_, err := NewSelection(SelectionFlags{MapValue: []string{bad}})
		require.ErrorContains(t, err, "--map-value", bad)
	}
	_, err = NewSelection(SelectionFlags{KeepA: []string{"a=b"}})
	require.ErrorContains(t, err, "--keep-a")
}
