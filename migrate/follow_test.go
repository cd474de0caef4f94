package migrate

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// followCluster is a kfake cluster with topic "T" holding n records (none: no topic).
func followCluster(t *testing.T, ctx context.Context, n int, connect bool) ([]string, *kafka.Client) {
	t.Helper()
	brokers := startKfake(t)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	if connect {
		require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	}
	if n == 0 {
		return brokers, cl
	}
	_, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "T", NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Transport: cl.Transport, BatchTimeout: time.Millisecond, Topic: "T"}
	defer w.Close()
	for range n {
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Value: []byte("r")}))
	}
	return brokers, cl
}

// writeConfigs writes a connector record per config (its "name") to connect-configs.
func writeConfigs(t *testing.T, ctx context.Context, cl *kafka.Client, cfgs ...map[string]string) {
	t.Helper()
	w := &kafka.Writer{Addr: cl.Addr, Transport: cl.Transport, BatchTimeout: time.Millisecond}
	defer w.Close()
	for _, cfg := range cfgs {
		v, err := json.Marshal(map[string]any{"properties": cfg})
		require.NoError(t, err)
		require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-configs", Key: []byte("connector-" + cfg["name"]), Value: v}))
	}
}

// followPair is a source "src" that writes T and a sink "sink" that reads it: their configs
// in A's config topic, and A's Connect REST API serving both, running.
type followPair struct {
	fc *fakeConnect
	// srcStopped is closed when the migration stops the source on A.
	srcStopped chan struct{}
}

func newFollowPair(t *testing.T, ctx context.Context, clA *kafka.Client) *followPair {
	t.Helper()
	srcCfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "in", "topic": "T", "name": "src"}
	sinkCfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": "out", "topics": "T", "name": "sink"}
	writeConfigs(t, ctx, clA, srcCfg, sinkCfg)
	p := &followPair{srcStopped: make(chan struct{}), fc: &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"src":  {typ: "source", state: fleet.StateRunning, stopAt: -1, config: srcCfg, topics: []string{"T"}},
		"sink": {typ: "sink", state: fleet.StateRunning, stopAt: -1, config: sinkCfg},
	}}}
	p.fc.onStop = func(name string) {
		if name == "src" {
			close(p.srcStopped)
		}
	}
	return p
}

// export moves the pair from A to B with --stop-source, --sink-offsets translate and
// --sink-follows-source, within timeout (the run's --timeout).
func (p *followPair) export(t *testing.T, ctx context.Context, brokersA, brokersB []string, timeout time.Duration) *apply.Report {
	t.Helper()
	policy := mm2.Policy{SourceAlias: "A"}
	tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokersB}, Policy: policy})
	require.NoError(t, err)
	runCtx, cancelRun := context.WithTimeout(ctx, timeout)
	defer cancelRun()
	rep, err := Export(runCtx, Options{
		Topics:     &source.TopicsSource{Brokers: brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		ConnectURL: p.fc.serve(t), StopSource: true, States: &source.StateStore{Brokers: brokersB},
		StablePause: 50 * time.Millisecond, StopPoll: 20 * time.Millisecond, StopTimeout: 10 * time.Second,
		SinkOffsets: fleet.SinkOffsetsTranslate, MM2: &fleet.MM2{Translator: tr, Policy: policy}, SinkFollowsSource: true,
	})
	require.NoError(t, err)
	return rep
}

// With --sink-follows-source the pair moves: the source stops first, A's sink stops once its
// group has committed the end of T on A (lag 0), and the sink on B reads T (not A.T) from
// T's end on B, or from its first record when B has no T yet.
func TestSinkFollowsSource(t *testing.T) {
	tests := []struct {
		name      string
		onB       int           // records of T on B (0: no topic)
		catchUp   time.Duration // when A's sink commits the end of T; 0 for never
		timeout   time.Duration
		want      string // the sink's body; "" when skipped
		skipped   string
		wantStops []string
	}{
		{name: "T on B: from its end", onB: 2, catchUp: 500 * time.Millisecond, timeout: 20 * time.Second, wantStops: []string{"src", "sink"},
			want: `{"name":"sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"out","name":"sink","topics":"T"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"T"},"offset":{"kafka_offset":2}}]}`},
		{name: "no T on B: from its first record", catchUp: 500 * time.Millisecond, timeout: 20 * time.Second, wantStops: []string{"src", "sink"},
			want: `{"name":"sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"out","name":"sink","topics":"T"},"initial_state":"RUNNING"}`},
		{name: "A's sink never catches up: it stays on A", onB: 2, timeout: 2 * time.Second, wantStops: []string{"src"},
			skipped: `stop on A: not stopped: group "connect-sink" did not consume all its sources wrote on A within the run's Timeout: lag 2 (T-0: 2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			brokersA, clA := followCluster(t, ctx, 5, true)
			brokersB, _ := followCluster(t, ctx, tt.onB, false)
			pair := newFollowPair(t, ctx, clA)
			fc := pair.fc
			// A's sink has delivered 3 of T's 5 records when the migration starts.
			require.NoError(t, kafkaio.CommitGroupOffsets(ctx, clA, "connect-sink", []kafkaio.GroupOffset{{Topic: "T", Offset: 3}}))
			caughtUp := make(chan time.Time, 1)
			if tt.catchUp > 0 {
				go func() {
					<-pair.srcStopped
					time.Sleep(tt.catchUp)
					_ = kafkaio.CommitGroupOffsets(ctx, clA, "connect-sink", []kafkaio.GroupOffset{{Topic: "T", Offset: 5}})
					caughtUp <- time.Now()
				}()
			}
			rep := pair.export(t, ctx, brokersA, brokersB, tt.timeout)
			done := time.Now()
			byName := map[string]*apply.Entry{}
			for _, e := range rep.Connectors {
				byName[e.Name] = e
			}
			require.Equal(t, apply.OutcomePlanned, byName["src"].Outcome, byName["src"].Message)
			sink := byName["sink"]
			fc.mu.Lock()
			require.Equal(t, tt.wantStops, fc.stops, "the source stops first; the sink once it has caught up")
			fc.mu.Unlock()
			if tt.skipped != "" {
				require.Equal(t, apply.OutcomeSkipped, sink.Outcome)
				require.Equal(t, tt.skipped, sink.Message.String())
				return
			}
			require.Equal(t, apply.OutcomePlanned, sink.Outcome, sink.Message)
			require.True(t, done.After(<-caughtUp), "the run waited until A's sink had consumed everything")
			b, err := sink.Body.MarshalJSON()
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(b))
			d, ok := sink.Translation.(*apply.FollowedSources)
			require.True(t, ok, "%T", sink.Translation)
			require.Equal(t, []string{"src"}, d.FollowsSources)
			require.Equal(t, []string{"T"}, d.Topics)
			_, err = time.ParseDuration(d.Drained)
			require.NoError(t, err)
			require.True(t, slices.Contains(fc.stops, "sink"))
		})
	}
}

func TestSinkFollowsSourceRefusals(t *testing.T) {
	brokers := startKfake(t)
	policy := mm2.Policy{SourceAlias: "A"}
	tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokers}, Policy: policy})
	require.NoError(t, err)
	src := &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, topics: []string{"T"},
		config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "in", "topic": "T", "name": "src"}}
	sink := func(kv ...string) *fakeConnector {
		cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": "out", "name": "sink"}
		cfg[kv[0]] = kv[1]
		return &fakeConnector{typ: "sink", state: fleet.StateRunning, stopAt: -1, config: cfg}
	}
	tests := []struct {
		name string
		sink *fakeConnector
		stop bool
		want string
	}{
		{name: "needs --stop-source", sink: sink("topics", "T"), want: "SinkFollowsSource cannot move it: it needs StopSource"},
		{name: "topics.regex", sink: sink("topics.regex", "T|U"), stop: true, want: "SinkFollowsSource cannot move it: the sink subscribes with topics.regex"},
		{name: "other renamed topics", sink: sink("topics", "T,U"), stop: true,
			want: "SinkFollowsSource cannot move it: the sink also reads U, which no selected source writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{"src": src, "sink": tt.sink}}
			opts := Options{ConnectURL: fc.serve(t), SinkOffsets: fleet.SinkOffsetsTranslate, MM2: &fleet.MM2{Translator: tr, Policy: policy},
				SinkFollowsSource: true, StopSource: tt.stop, States: &source.StateStore{Brokers: brokers}}
			if tt.stop {
				// A's brokers, which the lag is read from.
				brokersA, cl := followCluster(t, context.Background(), 0, true)
				writeConfigs(t, context.Background(), cl, src.config, tt.sink.config)
				opts.Topics = &source.TopicsSource{Brokers: brokersA, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"}
			}
			rep, err := Export(context.Background(), opts)
			require.NoError(t, err)
			for _, e := range rep.Connectors {
				require.Equal(t, apply.OutcomeSkipped, e.Outcome, e.Name)
				if e.Name == "sink" {
					require.Contains(t, e.Message.String(), tt.want)
				}
			}
			require.Empty(t, fc.stops)
		})
	}
}
