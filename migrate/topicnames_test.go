package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

const (
	fileSink     = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	regexRouterT = "org.apache.kafka.connect.transforms.RegexRouter"
)

// routedChain is a transform chain whose output depends on the record's topic at every step:
// a RegexRouter renaming "orders" to "db_orders", then an InsertField writing the topic into
// the value when a TopicNameMatches predicate matches the routed name.
func routedChain(kv ...string) []string {
	return append([]string{"transforms", "route,tag",
		"transforms.route.type", regexRouterT, "transforms.route.regex", "orders", "transforms.route.replacement", "db_$0",
		"transforms.tag.type", "org.apache.kafka.connect.transforms.InsertField$Value", "transforms.tag.topic.field", "dest",
		"transforms.tag.predicate", "isDb", "predicates", "isDb",
		"predicates.isDb.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicates.isDb.pattern", "db_.*"}, kv...)
}

// restored is the transform chain B gets ahead of chain: A's names back first.
func restored(alias, chain string) map[string]string {
	out := map[string]string{"transforms": alias, "transforms." + alias + ".type": regexRouterT,
		"transforms." + alias + ".regex": `A\.(.*)`, "transforms." + alias + ".replacement": "$1"}
	if chain != "" {
		out["transforms"] += "," + chain
	}
	return out
}

// Across MirrorMaker 2's default policy, for every sink family: a family that takes records
// whose topic is not the partition it consumed gets a RegexRouter first in its chain on B that
// gives them back their names on A, whenever something downstream reads the topic; one that
// does not take them, or a class offsetagent does not know, is refused before anything is
// stopped where its output depends on the topic's name (key, value, fix), and warned about
// where that was not checked.
func TestTopicDerivedSettingsAcrossRenamingPolicy(t *testing.T) {
	brokers := startMM2Target(t, mm2.Policy{SourceAlias: "A"}.CheckpointsTopic())
	type want struct {
		skipped bool
		// config: settings the body on B must hold (and absent: keys it must not).
		config map[string]string
		absent []string
		// hazards: key -> parts of its message and fix; refuse says whether it refuses.
		hazards map[string][]string
		refuse  map[string]bool
		// rewrites: the keys of config_rewrites.
		rewrites []string
	}
	tests := []struct {
		name   string
		config []string // key, value pairs
		flags  source.SelectionFlags
		target string // --mm2-target-alias
		policy mm2.PolicyKind
		want   want
	}{
		{name: "FileStream with a RegexRouter chain: A's names restored first",
			config: routedChain("topics", "orders"),
			want: want{config: restored(hazard.RestoreAlias, "route,tag"), rewrites: []string{"topics", "transforms",
				"transforms.restoreTopicNamesOfA.type", "transforms.restoreTopicNamesOfA.regex", "transforms.restoreTopicNamesOfA.replacement"}}},
		{name: "FileStream without transforms: nothing reads the topic",
			config: []string{"topics", "orders"},
			want:   want{config: map[string]string{"topics": "A.orders"}, absent: []string{"transforms"}, rewrites: []string{"topics"}}},
		{name: "FileStream with a transform blind to the topic",
			config: []string{"topics", "orders", "transforms", "cast", "transforms.cast.type", "Cast$Value", "transforms.cast.spec", "int32"},
			want:   want{config: map[string]string{"transforms": "cast"}, rewrites: []string{"topics"}}},
		{name: "FileStream with a TimestampRouter and its default format",
			config: []string{"topics", "orders", "transforms", "ts", "transforms.ts.type", "TimestampRouter"},
			want:   want{config: restored(hazard.RestoreAlias, "ts")}},
		{name: "FileStream with a transform offsetagent does not know",
			config: []string{"topics", "orders", "transforms", "x", "transforms.x.type", "com.example.Custom"},
			want:   want{config: restored(hazard.RestoreAlias, "x")}},
		{name: "the restore's alias taken",
			config: []string{"topics", "orders", "transforms", hazard.RestoreAlias, "transforms." + hazard.RestoreAlias + ".type", "TimestampRouter"},
			want:   want{config: restored(hazard.RestoreAlias+"2", hazard.RestoreAlias)}},
		{name: "topics.regex with a RegexRouter",
			config: routedChain("topics.regex", "orders|payments"),
			want: want{config: map[string]string{"topics.regex": `A\.(?:orders|payments)`, "transforms": hazard.RestoreAlias + ",route,tag"},
				rewrites: []string{"topics.regex", "transforms", "transforms.restoreTopicNamesOfA.type", "transforms.restoreTopicNamesOfA.regex",
					"transforms.restoreTopicNamesOfA.replacement"}}},
		{name: "Confluent's JDBC sink, table.name.format ${topic} by default",
			config: []string{"connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "topics", "orders,payments", "connection.password", "pw-secret-9"},
			want:   want{config: restored(hazard.RestoreAlias, "")}},
		{name: "Confluent's JDBC sink with a fixed table",
			config: []string{"connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "topics", "orders", "table.name.format", "all_orders"},
			want:   want{absent: []string{"transforms"}}},
		{name: "Debezium's JDBC sink",
			config: []string{"connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector", "topics", "shop.public.items"},
			want:   want{config: restored(hazard.RestoreAlias, "")}},
		{name: "Elasticsearch with synchronous flushes",
			config: []string{"connector.class", "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "topics", "orders", "flush.synchronously", "true"},
			want:   want{config: restored(hazard.RestoreAlias, "")}},
		{name: "Elasticsearch with its asynchronous offsets: refused",
			config: []string{"connector.class", "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "topics", "orders"},
			want: want{skipped: true, hazards: map[string][]string{"topics": {"Confluent's Elasticsearch sink names its indices", `"orders" is "A.orders"`,
				"Connector doesn't support topic mutating SMTs", "set flush.synchronously=true", "ReplicationPolicy identity"}}, refuse: map[string]bool{"topics": true}}},
		{name: "Elasticsearch made synchronous by the edit flags",
			config: []string{"connector.class", "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "topics", "orders"},
			flags:  source.SelectionFlags{Set: []string{"flush.synchronously=true"}},
			want:   want{config: restored(hazard.RestoreAlias, "")}},
		{name: "S3: its paths, refused",
			config: []string{"connector.class", "io.confluent.connect.s3.S3SinkConnector", "topics", "orders", "topics.dir", "raw"},
			want: want{skipped: true, hazards: map[string][]string{"topics": {"Confluent's S3 sink names the paths of the objects it writes", "topicPartitionWriters",
				"keep topics on A to move it anyway"}},
				refuse: map[string]bool{"topics": true}}},
		{name: "S3 moved anyway with --keep-a: a warning",
			config: []string{"connector.class", "io.confluent.connect.s3.S3SinkConnector", "topics", "orders"},
			flags:  source.SelectionFlags{KeepA: []string{"topics"}},
			want: want{hazards: map[string][]string{"topics": {"Confluent's S3 sink names the paths", "(kept by KeepA)"}}, refuse: map[string]bool{"topics": false},
				config: map[string]string{"topics": "A.orders"}, absent: []string{"transforms"}}},
		{name: "Aiven's S3 sink without the topic in its file names",
			config: []string{"connector.class", "io.aiven.kafka.connect.s3.AivenKafkaConnectS3SinkConnector", "topics", "orders", "file.name.template", "{{partition}}-{{start_offset}}"},
			want:   want{absent: []string{"transforms"}}},
		{name: "a topics.regex Java reads differently behind the prefix",
			config: []string{"topics.regex", "x|^orders"},
			want: want{skipped: true, hazards: map[string][]string{"topics.regex": {`value "x|^orders"`, "^ anchors at the start of the input", "set topics.regex="}},
				refuse: map[string]bool{"topics.regex": true}}},
		{name: "a class offsetagent does not know, with a setting naming the topic",
			config: []string{"connector.class", "com.example.DocSink", "topics", "orders", "topic.override.orders.collection", "all", "collection.of", "orders"},
			want: want{skipped: true, hazards: map[string][]string{
				"topic.override.orders.collection": {`key "topic.override.orders.collection" names topic "orders", which is "A.orders" on B`,
					`unset topic.override.orders.collection set topic.override.A.orders.collection=all`, "keep topic.override.orders.collection on A"},
				"collection.of": {`value "orders" names topic "orders"`, "set collection.of=A.orders"}},
				refuse: map[string]bool{"topic.override.orders.collection": true, "collection.of": true}}},
		{name: "a setting kept with --keep-a is a warning",
			config: []string{"connector.class", "com.example.DocSink", "topics", "orders", "collection.of", "orders"},
			flags:  source.SelectionFlags{KeepA: []string{"collection.of"}},
			want: want{hazards: map[string][]string{"collection.of": {"(kept by KeepA)"}}, refuse: map[string]bool{"collection.of": false},
				absent: []string{"transforms"}}},
		{name: "a class offsetagent does not know, with a RegexRouter",
			config: routedChain("connector.class", "com.example.DocSink", "topics", "orders"),
			want: want{skipped: true, hazards: map[string][]string{
				"transforms.route.regex":       {`value "orders" of transform "route" (RegexRouter) reads the record's topic`, `set transforms.route.regex=A\.(?:orders)`},
				"predicates.isDb.pattern":      {`predicate "isDb" (TopicNameMatches)`, `set predicates.isDb.pattern=A\.(?:db_.*)`},
				"transforms.route.replacement": {`value "db_$0"`, "set transforms.route.replacement=..."},
				"transforms.tag.topic.field":   {`value "dest" of transform "tag" (InsertField$Value)`}},
				refuse: map[string]bool{"transforms.route.regex": true, "predicates.isDb.pattern": true, "transforms.tag.topic.field": true}}},
		{name: "a class offsetagent does not know, and nothing seen: a warning",
			config: []string{"connector.class", "com.example.DocSink", "topics", "orders"},
			want: want{hazards: map[string][]string{"connector.class": {`"com.example.DocSink" is not a sink family offsetagent knows`, "was not checked"}},
				refuse: map[string]bool{"connector.class": false}}},
		{name: "an alias two families claim is neither",
			config: []string{"connector.class", "JdbcSinkConnector", "topics", "orders"},
			want:   want{hazards: map[string][]string{"connector.class": {"not a sink family offsetagent knows"}}}},
		{name: "a topic that goes back to its name on B cannot be restored",
			config: routedChain("topics", "B.orders,orders"), target: "B",
			want: want{skipped: true, hazards: map[string][]string{"topics": {`topic "B.orders" is "orders" on B`}}, refuse: map[string]bool{"topics": true}}},
		{name: "a chain edited for B gets no transform: a warning",
			config: routedChain("topics", "orders"),
			flags:  source.SelectionFlags{Set: []string{`transforms.route.regex=A\.orders`}},
			want: want{config: map[string]string{"transforms": "route,tag", "transforms.route.regex": `A\.orders`},
				hazards: map[string][]string{"transforms": {"edited for B", "does not add its transform"}}, refuse: map[string]bool{"transforms": false}}},
		{name: "the identity policy keeps the names", policy: mm2.PolicyIdentity,
			config: []string{"connector.class", "io.confluent.connect.s3.S3SinkConnector", "topics", "orders"},
			want:   want{absent: []string{"transforms"}}},
		{name: "the identity policy keeps a regex's names", policy: mm2.PolicyIdentity,
			config: routedChain("topics.regex", "orders|payments"),
			want:   want{config: map[string]string{"topics.regex": "orders|payments", "transforms": "route,tag"}}},
		{name: "the identity policy still renames MirrorMaker 2's heartbeats", policy: mm2.PolicyIdentity,
			config: []string{"connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "topics", "heartbeats"},
			want:   want{config: restored(hazard.RestoreAlias, "")}},
		{name: "the identity policy: only the heartbeats get their names back", policy: mm2.PolicyIdentity,
			config: []string{"connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "topics", "A.kept, heartbeats, shop.heartbeats"},
			want: want{config: map[string]string{"topics": "A.kept,A.heartbeats,A.shop.heartbeats", "transforms": hazard.RestoreAlias,
				"transforms." + hazard.RestoreAlias + ".regex": `A\.(heartbeats|shop\.heartbeats)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := map[string]string{"connector.class": fileSink, "file": "out.txt", "name": "snk"}
			for i := 0; i+1 < len(tt.config); i += 2 {
				cfg[tt.config[i]] = tt.config[i+1]
			}
			fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{"snk": {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: cfg}}}
			kind := tt.policy
			if kind == "" {
				kind = mm2.PolicyDefault
			}
			policy := mm2.Policy{Kind: kind, SourceAlias: "A", TargetAlias: tt.target}
			tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokers}, Policy: policy})
			require.NoError(t, err)
			sel, err := source.NewSelection(tt.flags)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := Export(ctx, Options{ConnectURL: fc.serve(t), Selection: sel, SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2: &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: true}})
			require.NoError(t, err)
			require.Len(t, rep.Connectors, 1)
			e := rep.Connectors[0]
			var js bytes.Buffer
			require.NoError(t, rep.WriteJSON(&js))
			require.NotContains(t, js.String(), "pw-secret-9")

			got := map[string]hazard.Hazard{}
			for _, h := range e.Hazards {
				if h.Check == hazard.HazardTopicNames {
					got[h.Key] = h
				}
			}
			require.Len(t, got, len(tt.want.hazards), "hazards: %+v", e.Hazards)
			for key, parts := range tt.want.hazards {
				h, ok := got[key]
				require.True(t, ok, "no hazard on %s: %+v", key, e.Hazards)
				for _, p := range parts {
					require.Contains(t, h.String(), p, key)
				}
				if refuse, ok := tt.want.refuse[key]; ok {
					require.Equal(t, refuse, h.Refuse, key)
				}
			}
			if tt.want.skipped {
				require.Equal(t, apply.OutcomeSkipped, e.Outcome, e.Message)
				require.Contains(t, e.Message.String(), "refused before anything was stopped (topic_names)")
				require.Nil(t, e.Body)
				return
			}
			require.Equal(t, apply.OutcomePlanned, e.Outcome, e.Message)
			onB := e.Body.Config.Map()
			for k, v := range tt.want.config {
				require.Equal(t, v, onB[k], k)
			}
			for _, k := range tt.want.absent {
				require.NotContains(t, onB, k)
			}
			if tt.want.rewrites != nil {
				var keys []string
				for _, rw := range e.Rewrites {
					keys = append(keys, rw.Key)
					require.NotEmpty(t, rw.Why, rw.Key)
				}
				require.Equal(t, tt.want.rewrites, keys)
			}
		})
	}
}

// The rewrites are shown where an operator reads them: the summary table, the report's
// config_rewrites, and the cutover report of the connector moved.
func TestTopicRewritesInReportAndCutover(t *testing.T) {
	brokers := startMM2Target(t, mm2.Policy{SourceAlias: "A"}.CheckpointsTopic())
	cfg := map[string]string{"connector.class": fileSink, "file": "out.txt", "name": "snk"}
	for i, kv := 0, routedChain("topics", "orders"); i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{"snk": {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: cfg}}}
	policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"}
	tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokers}, Policy: policy})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Export(ctx, Options{ConnectURL: fc.serve(t), SinkOffsets: fleet.SinkOffsetsTranslate,
		MM2: &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: true}})
	require.NoError(t, err)

	why := `MirrorMaker 2's default policy names A's topics "A.<topic>" on B; this transform, first in the chain, gives each record back its topic's name on A, ` +
		`so that transform "route" (RegexRouter), transform "tag" (InsertField$Value), predicate "isDb" (TopicNameMatches) stay as on A ` +
		`(FileStreamSinkTask writes record values to its file and leaves its offsets to the framework)`
	var rewrites []string
	for _, rw := range rep.Connectors[0].Rewrites {
		rewrites = append(rewrites, rw.String())
	}
	require.Equal(t, []string{
		`topics: "orders" -> "A.orders": MirrorMaker 2's default policy names A's topics so on B`,
		`transforms: "route,tag" -> "restoreTopicNamesOfA,route,tag": ` + why,
		`transforms.restoreTopicNamesOfA.type: (not set) -> "org.apache.kafka.connect.transforms.RegexRouter": ` + why,
		`transforms.restoreTopicNamesOfA.regex: (not set) -> "A\\.(.*)": ` + why,
		`transforms.restoreTopicNamesOfA.replacement: (not set) -> "$1": ` + why,
	}, rewrites, "the table shows them a line per reason (cmd/offsetagent's render)")

	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var got struct {
		Connectors []struct {
			Rewrites []map[string]any `json:"config_rewrites"`
		}
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &got))
	require.Len(t, got.Connectors, 1)
	last := got.Connectors[0].Rewrites[len(got.Connectors[0].Rewrites)-1]
	require.Equal(t, "transforms.restoreTopicNamesOfA.replacement", last["key"])
	require.Nil(t, last["from"], "not set before")
	require.Equal(t, "$1", last["to"])
	require.Contains(t, last["why"], "gives each record back its topic's name on A")

	// The cutover report of the moved connector keeps them.
	e := rep.Connectors[0]
	e.Outcome = apply.OutcomeSucceeded
	c := cutover.New(rep, "connect-offsets", nil)
	require.Len(t, c.Connectors, 1)
	require.Equal(t, e.Rewrites, c.Connectors[0].Rewrites)
	var cj bytes.Buffer
	require.NoError(t, json.NewEncoder(&cj).Encode(c))
	require.Contains(t, cj.String(), `"config_rewrites":[{"key":"topics","from":"orders","to":"A.orders"`)
	require.Contains(t, cj.String(), `"key":"transforms.restoreTopicNamesOfA.type","from":null,"to":"org.apache.kafka.connect.transforms.RegexRouter"`)
}
