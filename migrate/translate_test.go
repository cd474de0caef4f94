package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/mm2"
)

// startMM2Target starts a kfake broker holding B's checkpoints topic with the checkpoints cps,
// written with the project's own encoder.
func startMM2Target(t *testing.T, topic string, cps ...mm2.Checkpoint) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for _, cp := range cps {
		k, err := cp.Key()
		require.NoError(t, err)
		v, err := cp.Value()
		require.NoError(t, err)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	return c.ListenAddrs()
}

// The verdicts decide the outcome: exact is planned; replay and missing fail the connector at
// translate_sink_offsets unless replay is allowed, and then a missing partition gets no offset.
// Topics are renamed in the offsets and the config (topics.regex flagged, the DLQ untouched),
// and a group without any checkpoint gets the group filter trap; without --allow-replay such a
// group (connect-<name>, which MM2's default groups.exclude matches) is refused before anything
// is stopped (mm2health.go).
func TestMM2SinksVerdictsAndOutcomes(t *testing.T) {
	policy := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "A"}
	b := startMM2Target(t, policy.CheckpointsTopic(),
		mm2.Checkpoint{Group: "connect-sink-exact", Topic: "A.orders", Partition: 0, UpstreamOffset: 10, Offset: 7},
		mm2.Checkpoint{Group: "connect-sink-replay", Topic: "A.orders", Partition: 0, UpstreamOffset: 15, Offset: 12},
		mm2.Checkpoint{Group: "connect-sink-regex", Topic: "A.orders-eu", Partition: 1, UpstreamOffset: 4, Offset: 4},
		mm2.Checkpoint{Group: "some-app", Topic: "A.orders", Partition: 0, UpstreamOffset: 1, Offset: 1})
	const class = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	sink := func(name string, cfg map[string]string, offsets ...string) *fakeConnector {
		cfg["connector.class"], cfg["name"] = class, name
		return &fakeConnector{typ: "sink", state: fleet.StateRunning, stopAt: -1, config: cfg, offsets: offsets}
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"sink-exact": sink("sink-exact", map[string]string{"topics": "orders"},
			`{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":10}}`),
		"sink-replay": sink("sink-replay", map[string]string{"topics": "orders"},
			`{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":20}}`),
		"sink-missing": sink("sink-missing", map[string]string{"topics": "orders"},
			`{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":5}}`),
		"sink-regex": sink("sink-regex", map[string]string{"topics.regex": "orders-.*", "errors.deadletterqueue.topic.name": "orders-dlq"},
			`{"partition":{"kafka_partition":1,"kafka_topic":"orders-eu"},"offset":{"kafka_offset":4}}`),
	}}
	url := fc.serve(t)
	type want struct {
		outcome apply.Outcome
		message string
		body    string
	}
	tests := []struct {
		name        string
		allowReplay bool
		want        map[string]want
	}{
		{name: "without --allow-replay", want: map[string]want{
			"sink-exact": {outcome: apply.OutcomePlanned,
				body: `{"name":"sink-exact","config":{"connector.class":"` + class + `","name":"sink-exact","topics":"A.orders"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"A.orders"},"offset":{"kafka_offset":7}}]}`},
			"sink-replay":  {outcome: apply.OutcomeFailed, message: "1 of 1 partitions replay (an unknown number of records delivered again); AllowReplay accepts them"},
			"sink-missing": {outcome: apply.OutcomeSkipped, message: "refused before anything was stopped (mm2): groups.exclude: "},
			"sink-regex": {outcome: apply.OutcomePlanned,
				body: `{"name":"sink-regex","config":{"connector.class":"` + class + `","errors.deadletterqueue.topic.name":"orders-dlq","name":"sink-regex","topics.regex":"A\\.(?:orders-.*)"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":1,"kafka_topic":"A.orders-eu"},"offset":{"kafka_offset":4}}]}`},
		}},
		{name: "with --allow-replay", allowReplay: true, want: map[string]want{
			"sink-replay": {outcome: apply.OutcomePlanned,
				body: `{"name":"sink-replay","config":{"connector.class":"` + class + `","name":"sink-replay","topics":"A.orders"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"A.orders"},"offset":{"kafka_offset":12}}]}`},
			"sink-missing": {outcome: apply.OutcomePlanned,
				body: `{"name":"sink-missing","config":{"connector.class":"` + class + `","name":"sink-missing","topics":"A.orders"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"A.orders"},"offset":null}]}`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: b}, Policy: policy})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := Export(ctx, Options{ConnectURL: url, SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2: &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: tt.allowReplay}})
			require.NoError(t, err)
			require.Equal(t, tt.allowReplay, rep.OK(), "replay or missing fails the run unless allowed")
			for _, e := range rep.Connectors {
				w, ok := tt.want[e.Name]
				if !ok {
					continue
				}
				require.Equal(t, w.outcome, e.Outcome, e.Name+": "+e.Message.String())
				require.Contains(t, e.Message.String(), w.message, e.Name)
				if w.outcome == apply.OutcomeSkipped {
					require.Nil(t, e.Body)
					continue
				}
				if w.outcome == apply.OutcomeFailed {
					require.Equal(t, apply.StepTranslateSinkOffsets, e.FailedStep)
					require.Nil(t, e.Body)
					continue
				}
				require.Empty(t, e.FailedStep)
				b, err := e.Body.MarshalJSON()
				require.NoError(t, err)
				require.Equal(t, w.body, string(b), e.Name)
			}

			// The report's translation objects: the counts, then the details.
			var buf bytes.Buffer
			require.NoError(t, rep.WriteJSON(&buf))
			var got struct {
				Connectors []struct {
					Name        string
					Translation map[string]any
				}
			}
			require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
			byName := map[string]map[string]any{}
			for _, c := range got.Connectors {
				byName[c.Name] = c.Translation
			}
			counts := func(name string) map[string]any {
				out := map[string]any{}
				for _, k := range []string{"policy", "partitions", "exact", "replay", "missing", "replay_bound", "missing_partitions"} {
					v, ok := byName[name][k]
					require.True(t, ok, "%s: translation lacks %q", name, k)
					out[k] = v
				}
				return out
			}
			require.Equal(t, map[string]any{"policy": "default", "partitions": 1.0, "exact": 1.0, "replay": 0.0, "missing": 0.0,
				"replay_bound": 0.0, "missing_partitions": []any{}}, counts("sink-exact"))
			require.Equal(t, map[string]any{"policy": "default", "partitions": 1.0, "exact": 0.0, "replay": 1.0, "missing": 0.0,
				"replay_bound": nil, "missing_partitions": []any{}}, counts("sink-replay"))
			if tt.allowReplay {
				require.Equal(t, map[string]any{"policy": "default", "partitions": 1.0, "exact": 0.0, "replay": 0.0, "missing": 1.0,
					"replay_bound": 0.0, "missing_partitions": []any{"A.orders-0"}}, counts("sink-missing"))
				require.Contains(t, byName["sink-missing"]["group_filter_trap"], `none for "connect-sink-missing"`)
			}
			require.Equal(t, `orders-.* -> A\.(?:orders-.*): topics.regex rewritten to match the topics renamed by the default policy; check it`,
				byName["sink-regex"]["topics_regex"])
			notExact := byName["sink-replay"]["not_exact"].([]any)
			require.Len(t, notExact, 1)
			require.Equal(t, "checkpoint lags: upstreamOffset 15, committed offset 20", notExact[0].(map[string]any)["reason"])
		})
	}
}
