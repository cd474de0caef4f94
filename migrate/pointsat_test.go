package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
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
	closed := kafkatest.ClosedAddr(t) // a broker gone: the list still names A
	return newPointsAtAWith(t, nil, func(a, b string) map[string]map[string]string {
		return map[string]map[string]string{
			"dbz-pg": {"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "shop",
				"database.password": "pw-secret-1", "signal.enabled.channels": "source,kafka",
				"signal.kafka.bootstrap.servers": closed + ", " + a, "signal.kafka.topic": "shop-signals"},
			"dbz-mysql": {"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "inv",
				"database.password": "pw-secret-2", "schema.history.internal.kafka.bootstrap.servers": "PLAINTEXT://" + a,
				"schema.history.internal.kafka.topic": "schemahistory.inv"},
			"mm2-src": {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "A",
				"target.cluster.alias": "B", "source.cluster.bootstrap.servers": a, "target.cluster.bootstrap.servers": b, "topics": "orders"},
			// A secret that names A's cluster id: named by its key, never by its value.
			"jaas-src": withConfig(fileSourceConfig("jaas-src"), "producer.override.sasl.jaas.config", jaasNamingA),
			"file-src": fileSourceConfig("file-src"),
		}
	})
}

// withConfig is cfg with the keys and values of kv added.
func withConfig(cfg map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// newPointsAtAWith is A (a kfake cluster "cluster-A" with optsA, written with trA, nil for
// plaintext) and B ("cluster-B"), with the connectors configs gives for A's and B's brokers on
// A, in its config topic and its REST API.
func newPointsAtAWith(t *testing.T, trA *kafka.Transport, configs func(a, b string) map[string]map[string]string, optsA ...kfake.Opt) *pointsAtA {
	t.Helper()
	f := &pointsAtA{brokersA: startKfake(t, append([]kfake.Opt{kfake.ClusterID("cluster-A")}, optsA...)...), brokersB: startKfake(t, kfake.ClusterID("cluster-B"))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &kafka.Transport{MetadataTTL: time.Second}
	if trA == nil {
		trA = tr
	}
	clA := &kafka.Client{Addr: kafka.TCP(f.brokersA...), Transport: trA}
	clB := &kafka.Client{Addr: kafka.TCP(f.brokersB...), Transport: tr}
	for _, cl := range []*kafka.Client{clA, clB} {
		require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	}
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, clB, topic, 1, nil))
	}
	// The Debezium connectors' schema history and signal topics are on both clusters, under
	// both names (the family-state checks want them on B): only their settings are at issue.
	for _, topic := range []string{"shop-signals", "schemahistory.inv"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, clA, topic, 1, nil))
		for _, onB := range []string{topic, "A." + topic} {
			require.NoError(t, kafkaio.EnsureTopic(ctx, clB, onB, 1, nil))
		}
	}
	f.fc = &fakeConnect{t: t, connectors: map[string]*fakeConnector{}}
	w := &kafka.Writer{Addr: kafka.TCP(f.brokersA...), Transport: trA, BatchTimeout: time.Millisecond}
	defer w.Close()
	for name, cfg := range configs(f.brokersA[0], f.brokersB[0]) {
		cfg["name"] = name
		v, err := json.Marshal(map[string]any{"properties": cfg})
		require.NoError(t, err)
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-configs", Key: []byte("connector-" + name), Value: v}))
		f.fc.connectors[name] = &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, config: cfg}
	}
	return f
}

func (f *pointsAtA) options(t *testing.T, sel source.SelectionFlags) MigrateOptions {
	t.Helper()
	s, err := source.NewSelection(sel)
	require.NoError(t, err)
	return MigrateOptions{
		Options: Options{Topics: &source.TopicsSource{Brokers: f.brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
			ConnectURL: f.fc.serve(t), Selection: s, StopSource: true,
			StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond, StopTimeout: 5 * time.Second},
		To: target.Target{Brokers: f.brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 3 * time.Second, Grace: 100 * time.Millisecond,
	}
}

// run migrates with opts and returns the report, the refused connectors' messages and the
// connectors stopped on A. No report ever holds a secret value.
func (f *pointsAtA) run(t *testing.T, opts MigrateOptions) (rep *apply.Report, refused map[string]string, stopped []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, _, err := Migrate(ctx, opts)
	require.NoError(t, err)
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	for _, secret := range []string{"pw-secret", `username=\"cluster-A\"`, "PlainLoginModule"} {
		require.NotContains(t, js.String(), secret)
	}
	refused = map[string]string{}
	for _, e := range rep.Connectors {
		if e.Outcome == apply.OutcomeSkipped {
			refused[e.Name] = e.Message.String()
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
	rep, refused, stopped := f.run(t, f.options(t, source.SelectionFlags{}))
	want := map[string][]string{
		"dbz-pg":    {"signal.kafka.bootstrap.servers", fmt.Sprintf("%q", f.fc.connectors["dbz-pg"].config["signal.kafka.bootstrap.servers"]), "rewrite it with map "},
		"dbz-mysql": {"schema.history.internal.kafka.bootstrap.servers", `"PLAINTEXT://` + a + `"`, "rewrite it with map "},
		"mm2-src":   {"source.cluster.bootstrap.servers", "keep source.cluster.bootstrap.servers on A"},
		"jaas-src":  {"producer.override.sasl.jaas.config", `A's Kafka cluster id "cluster-A"`},
	}
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(refused)), "refused: %v\nthe report: %s", refused, reportJSON(t, rep))
	for name, parts := range want {
		for _, p := range parts {
			require.Contains(t, refused[name], p, name)
		}
	}
	require.NotContains(t, refused["mm2-src"], "target.cluster.bootstrap.servers", "B's brokers are not A's")
	require.Equal(t, []string{"file-src"}, stopped, "a refused connector is not stopped on A")
}

// reportJSON is rep as migrate writes it (no secret values: run checks), for a failure's
// message: each connector's outcome, message and hazards say why it was or was not refused.
func reportJSON(t *testing.T, rep *apply.Report) string {
	t.Helper()
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	return js.String()
}

// body is the config entry's body holds for key on B.
func body(t *testing.T, rep *apply.Report, name, key string) string {
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
// the remote name: refused until mapped. A read through REST only: A's id is known from it,
// and a setting whose addresses answer with it is refused as when A's brokers are read.
func TestMigrateMapsSettingsToB(t *testing.T) {
	f := newPointsAtA(t)
	a, b := f.brokersA[0], f.brokersB[0]
	mapAB := []string{a + "=" + b, "PLAINTEXT://" + a + "=" + b}
	keep := []string{"source.cluster.bootstrap.servers"}
	secretRefused := map[string][]string{"jaas-src": {"producer.override.sasl.jaas.config", "set producer.override.sasl.jaas.config=", "(a secret, not shown)"}}

	t.Run("mapped to B", func(t *testing.T) {
		rep, refused, stopped := f.run(t, f.options(t, source.SelectionFlags{MapValue: mapAB, KeepA: keep}))
		require.Equal(t, []string{"jaas-src"}, slices.Collect(maps.Keys(refused)), "--map-value leaves the secret alone: %v", refused)
		for _, p := range secretRefused["jaas-src"] {
			require.Contains(t, refused["jaas-src"], p)
		}
		require.Equal(t, []string{"dbz-mysql", "dbz-pg", "file-src", "mm2-src"}, stopped)
		closed, _, _ := strings.Cut(f.fc.connectors["dbz-pg"].config["signal.kafka.bootstrap.servers"], ",")
		require.Equal(t, closed+","+b, body(t, rep, "dbz-pg", "signal.kafka.bootstrap.servers"))
		require.Equal(t, b, body(t, rep, "dbz-mysql", "schema.history.internal.kafka.bootstrap.servers"))
		require.Equal(t, a, body(t, rep, "mm2-src", "source.cluster.bootstrap.servers"), "kept on A")
		require.Equal(t, b, body(t, rep, "mm2-src", "target.cluster.bootstrap.servers"))
		var kept []hazard.Hazard
		for _, e := range rep.Connectors {
			for _, h := range e.Hazards {
				if e.Name == "mm2-src" && h.Check == hazard.HazardPointsAtA {
					kept = append(kept, h)
				}
			}
		}
		require.Len(t, kept, 1)
		require.False(t, kept[0].Refuse)
		require.Contains(t, kept[0].Message.String(), "(kept by KeepA)")
	})

	t.Run("topics MirrorMaker 2 renames", func(t *testing.T) {
		f := newPointsAtA(t)
		a, b := f.brokersA[0], f.brokersB[0]
		policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"}
		tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: f.brokersB}, Policy: policy})
		require.NoError(t, err)
		flags := source.SelectionFlags{Include: []string{"dbz-.*"}, MapValue: []string{a + "=" + b, "PLAINTEXT://" + a + "=" + b}}
		opts := f.options(t, flags)
		opts.SinkOffsets, opts.MM2 = fleet.SinkOffsetsTranslate, &fleet.MM2{Translator: tr, Policy: policy}
		_, refused, stopped := f.run(t, opts)
		require.Empty(t, stopped)
		require.Contains(t, refused["dbz-pg"], `signal.kafka.topic: topic "shop-signals" is A's name: on B (signal.kafka.bootstrap.servers) MirrorMaker 2's default replication policy mirrors it as "A.shop-signals"`)
		require.Contains(t, refused["dbz-pg"], "map shop-signals=A.shop-signals")
		require.Contains(t, refused["dbz-mysql"], `schema.history.internal.kafka.topic: topic "schemahistory.inv" is A's name`)

		flags.MapValue = append(flags.MapValue, "shop-signals=A.shop-signals", "schemahistory.inv=A.schemahistory.inv")
		opts = f.options(t, flags)
		opts.SinkOffsets, opts.MM2 = fleet.SinkOffsetsTranslate, &fleet.MM2{Translator: tr, Policy: policy}
		rep, refused, stopped := f.run(t, opts)
		require.Empty(t, refused)
		require.Equal(t, []string{"dbz-mysql", "dbz-pg"}, stopped)
		require.Equal(t, "A.schemahistory.inv", body(t, rep, "dbz-mysql", "schema.history.internal.kafka.topic"))
		require.Equal(t, "A.shop-signals", body(t, rep, "dbz-pg", "signal.kafka.topic"))
	})

	t.Run("A read through REST only: judged by A's id all the same", func(t *testing.T) {
		opts := f.options(t, source.SelectionFlags{Include: []string{"dbz-pg|mm2-src|jaas-src"}})
		opts.Topics, opts.StopSource = nil, false
		_, refused, _ := f.run(t, opts)
		require.Equal(t, []string{"dbz-pg", "jaas-src", "mm2-src"}, slices.Sorted(maps.Keys(refused)),
			"A's cluster id is known from its REST API, and A's brokers answer with it: %v", refused)
		require.Contains(t, refused["dbz-pg"], `signal.kafka.bootstrap.servers: value "`)
		require.Contains(t, refused["dbz-pg"], `names A's Kafka cluster: `+a+` answered with A's cluster id "cluster-A"`)
		require.Contains(t, refused["mm2-src"], `source.cluster.bootstrap.servers: value "`+a+`" names A's Kafka cluster`)
	})

}

// pointsAtHazards is the HazardPointsAtA warnings of rep by connector: "key: message".
func pointsAtWarnings(rep *apply.Report) map[string][]string {
	out := map[string][]string{}
	for _, e := range rep.Connectors {
		for _, h := range e.Hazards {
			if h.Check == hazard.HazardPointsAtA && !h.Refuse {
				out[e.Name] = append(out[e.Name], h.Key+": "+h.Message.String()+"; "+h.Fix.String())
			}
		}
	}
	return out
}

// Every setting that lists Kafka addresses is judged by the cluster its addresses answer as,
// never by their spelling, whether A is read from its brokers or through its REST API only:
// A under localhost for 127.0.0.1, through a forwarded port no broker advertises (a Kubernetes
// bootstrap Service, another listener), in Camel's "brokers" and "bootstrapServers", in a
// "*.brokers" of another connector, is refused; B under another spelling passes; a third
// cluster, an address where nothing listens and a ${...} placeholder are warnings that say
// which and why; a non-Kafka "*.brokers" that no Kafka broker answers is not a Kafka address.
func TestPointsAtAJudgedByClusterID(t *testing.T) {
	closed := kafkatest.ClosedAddr(t)
	third := startKfake(t, kfake.ClusterID("cluster-C"))[0]
	var localA string
	f := newPointsAtAWith(t, nil, func(a, b string) map[string]map[string]string {
		localA = "localhost:" + port(t, a)
		fwdA := kafkatest.Forward(t, a)
		return map[string]map[string]string{
			"localhost-a": withConfig(fileSourceConfig("localhost-a"), "producer.override.bootstrap.servers", localA),
			"service-a":   withConfig(fileSourceConfig("service-a"), "consumer.override.bootstrap.servers", fwdA),
			"camel-a": {"connector.class": "org.apache.camel.kafkaconnector.kafka.CamelKafkaSourceConnector", "camel.source.path.topic": "t",
				"camel.component.kafka.brokers": localA},
			"kamelet-a":   withConfig(fileSourceConfig("kamelet-a"), "camel.kamelet.kafka-source.bootstrapServers", fwdA),
			"maybe-a":     withConfig(fileSourceConfig("maybe-a"), "cache.brokers", localA),
			"on-b":        withConfig(fileSourceConfig("on-b"), "admin.override.bootstrap.servers", "LOCALHOST:"+port(t, b)),
			"third":       withConfig(fileSourceConfig("third"), "producer.override.bootstrap.servers", third),
			"unreachable": withConfig(fileSourceConfig("unreachable"), "producer.override.bootstrap.servers", closed),
			"mqtt":        withConfig(fileSourceConfig("mqtt"), "mqtt.brokers", closed),
			"placeholder": withConfig(fileSourceConfig("placeholder"), "producer.override.bootstrap.servers", "${file:/etc/kafka/b.properties:servers}"),
		}
	})
	for _, restOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("REST only %t", restOnly), func(t *testing.T) {
			opts := f.options(t, source.SelectionFlags{})
			if restOnly {
				opts.Topics, opts.StopSource = nil, false
			}
			rep, refused, stopped := f.run(t, opts)
			want := map[string]string{
				"localhost-a": `producer.override.bootstrap.servers: value "` + localA + `" names A's Kafka cluster: ` + localA + ` answered with A's cluster id "cluster-A"`,
				"service-a":   `consumer.override.bootstrap.servers: value "127.0.0.1:`,
				"camel-a":     `camel.component.kafka.brokers: value "` + localA + `" names A's Kafka cluster`,
				"kamelet-a":   `camel.kamelet.kafka-source.bootstrapServers: value "127.0.0.1:`,
				"maybe-a":     `cache.brokers: value "` + localA + `" names A's Kafka cluster`,
			}
			require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(refused)), "refused: %v", refused)
			for name, part := range want {
				require.Contains(t, refused[name], part)
				require.Contains(t, refused[name], "names A's Kafka cluster")
				require.Contains(t, refused[name], "as B's Connect workers reach them", "the fix does not offer --to-brokers as B's workers' address")
			}
			warned := pointsAtWarnings(rep)
			require.Equal(t, []string{"placeholder", "third", "unreachable"}, slices.Sorted(maps.Keys(warned)), "%v", warned)
			require.Contains(t, warned["third"][0], `producer.override.bootstrap.servers: value "`+third+`" names another Kafka cluster than A and B: `+
				third+` answers as Kafka cluster "cluster-C", neither A's ("cluster-A") nor B's ("cluster-B")`)
			require.Contains(t, warned["unreachable"][0], `producer.override.bootstrap.servers: value "`+closed+`": whether it names A's Kafka cluster was not decided: `+
				closed+` did not say which cluster it is (ask `+closed+` for its cluster id:`)
			require.Contains(t, warned["unreachable"][0], "connection refused")
			require.Contains(t, warned["placeholder"][0], "producer.override.bootstrap.servers: value \"${file:/etc/kafka/b.properties:servers}\" was not checked: "+
				"it is a config provider placeholder")
			if !restOnly {
				require.Equal(t, []string{"mqtt", "on-b", "placeholder", "third", "unreachable"}, stopped, "a refused connector is not stopped on A")
			}
		})
	}
}

// port is the port of the address addr.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// A read through its REST API only, its brokers wanting SASL: an address is asked with the
// connector's own security settings for that client (an override's, or Debezium's
// schema.history.internal.consumer.* for its history), and A's id refuses; without readable
// settings of its own (the worker's apply, or a ${...} placeholder), B's are refused by A's
// brokers, and the warning says why. No secret reaches the report.
func TestPointsAtAWithTheConnectorsOwnSecurity(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="pw-secret-a";`
	trA := &kafka.Transport{SASL: plain.Mechanism{Username: "admin", Password: "pw-secret-a"}, MetadataTTL: time.Second}
	own := func(prefix, jaas string) []string {
		return []string{prefix + "security.protocol", "SASL_PLAINTEXT", prefix + "sasl.mechanism", "PLAIN", prefix + "sasl.jaas.config", jaas}
	}
	f := newPointsAtAWith(t, trA, func(a, _ string) map[string]map[string]string {
		localA := "localhost:" + port(t, a)
		return map[string]map[string]string{
			"own-sasl": withConfig(fileSourceConfig("own-sasl"), append([]string{"producer.override.bootstrap.servers", localA},
				own("producer.override.", jaas)...)...),
			"dbz-history": withConfig(map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "inv",
				"schema.history.internal.kafka.topic": "schemahistory.inv", "schema.history.internal.kafka.bootstrap.servers": localA},
				own("schema.history.internal.consumer.", jaas)...),
			"worker-sasl": withConfig(fileSourceConfig("worker-sasl"), "producer.override.bootstrap.servers", localA),
			"placeholder-jaas": withConfig(fileSourceConfig("placeholder-jaas"), append([]string{"producer.override.bootstrap.servers", localA},
				own("producer.override.", "${file:/opt/secrets/jaas.properties:jaas}")...)...),
		}
	}, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "pw-secret-a"))
	opts := f.options(t, source.SelectionFlags{})
	opts.Topics, opts.StopSource = nil, false
	rep, refused, _ := f.run(t, opts)
	require.Equal(t, []string{"dbz-history", "own-sasl"}, slices.Sorted(maps.Keys(refused)), "%v", refused)
	require.Contains(t, refused["own-sasl"], `producer.override.bootstrap.servers: value "localhost:`)
	require.Contains(t, refused["dbz-history"], `schema.history.internal.kafka.bootstrap.servers: value "localhost:`)
	for _, msg := range refused {
		require.Contains(t, msg, `answered with A's cluster id "cluster-A"`)
	}
	warned := pointsAtWarnings(rep)
	require.Equal(t, []string{"placeholder-jaas", "worker-sasl"}, slices.Sorted(maps.Keys(warned)), "%v", warned)
	require.Contains(t, warned["worker-sasl"][0], "did not say which cluster it is (with B's client settings: ask localhost:")
	require.Contains(t, warned["worker-sasl"][0], "the broker closed the connection")
	require.Contains(t, warned["placeholder-jaas"][0], "the connector's own security settings (producer.override.*) are not used: "+
		"producer.override.sasl.jaas.config is a config provider placeholder")
}

// A fleet whose connectors name one address with the same security settings of their own asks
// it once in a run, for the points-at and the family checks alike: one connection reaches the
// port forwarded to A.
func TestPointsAtAAsksEachAddressOnce(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="pw-secret-a";`
	trA := &kafka.Transport{SASL: plain.Mechanism{Username: "admin", Password: "pw-secret-a"}, MetadataTTL: time.Second}
	const n = 30
	var accepted *atomic.Int32
	f := newPointsAtAWith(t, trA, func(a, _ string) map[string]map[string]string {
		var fwd string
		fwd, accepted = kafkatest.ForwardCounting(t, a)
		cfgs := map[string]map[string]string{}
		for i := range n {
			name := fmt.Sprintf("dbz-%d", i)
			cfgs[name] = map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": name,
				"schema.history.internal.kafka.topic": "schemahistory.inv", "schema.history.internal.kafka.bootstrap.servers": fwd,
				"schema.history.internal.consumer.security.protocol": "SASL_PLAINTEXT", "schema.history.internal.consumer.sasl.mechanism": "PLAIN",
				"schema.history.internal.consumer.sasl.jaas.config": jaas}
		}
		return cfgs
	}, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "pw-secret-a"))
	opts := f.options(t, source.SelectionFlags{})
	opts.Topics, opts.StopSource = nil, false
	rep, refused, _ := f.run(t, opts)
	require.Len(t, refused, n)
	for _, e := range rep.Connectors {
		require.Contains(t, e.Message.String(), `answered with A's cluster id "cluster-A"`)
	}
	require.Equal(t, int32(1), accepted.Load(), "one lookup of the address for the whole fleet")
}

// A --map-value matches a whole value (a list in any order) or one element of a list; it never
// touches the name, a secret or a --keep-a key.
func TestMapValue(t *testing.T) {
	sel, err := source.NewSelection(source.SelectionFlags{MapValue: []string{"a1:9092, a2:9092=b1:9092,b2:9092", "a3:9092=b3:9092", "orders=A.orders"},
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
		_, err := source.NewSelection(source.SelectionFlags{MapValue: []string{bad}})
		require.ErrorContains(t, err, "MapValue", bad)
	}
	_, err = source.NewSelection(source.SelectionFlags{KeepA: []string{"a=b"}})
	require.ErrorContains(t, err, "KeepA")
}
