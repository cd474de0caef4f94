package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// fakeProcessor answers every request with a succeeded outcome and remembers the requests.
type fakeProcessor struct {
	requests []*events.Request
}

func (p *fakeProcessor) Create(_ context.Context, req *events.Request) *handlers.Outcome {
	p.requests = append(p.requests, req)
	written, wiped := 2, 1
	return &handlers.Outcome{
		EventType: events.TypeCreateSucceeded,
		Result: events.Result{RequestID: req.ID, RequestSource: req.Source, Name: req.Data.Name, Type: "source",
			Stages:         []events.StageReport{{Stage: string(handlers.StepValidateConfig), Outcome: events.OutcomeOK, DurationSeconds: 0.001}},
			OffsetsWritten: &written, OffsetsWiped: &wiped},
		ConnectorType:  "source",
		OffsetsWritten: written,
		OffsetsWiped:   wiped,
	}
}

// testAgent is an agent on an in-process kfake broker with its topics created, not running:
// tests call its processing and commit steps directly.
func testAgent(t *testing.T, proc Processor, allowed ...string) (*Agent, *prometheus.Registry) {
	t.Helper()
	a, reg, _ := testAgentCluster(t, proc, allowed...)
	return a, reg
}

// testAgentCluster is testAgent that also returns the broker, for faults.
func testAgentCluster(t *testing.T, proc Processor, allowed ...string) (*Agent, *prometheus.Registry, *kfake.Cluster) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cfg := Config{
		Brokers: c.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results", GroupID: "offsetagent",
		ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", IntentTopic: "intents",
		RequestTopicPartitions: 1, HTTPAddr: "127.0.0.1:0", LogLevel: "info", LogFormat: "json",
		Concurrency: 2, MaxRequestBytes: 1 << 20, ShutdownTimeout: 5 * time.Second, SessionTimeout: 10 * time.Second,
		DedupeWindow: time.Hour, DedupeMaxEntries: 1000, AllowedSources: allowed,
	}
	reg := prometheus.NewRegistry()
	a, err := New(cfg, Options{Registry: reg, Gatherer: reg, Stages: proc})
	require.NoError(t, err)
	cl := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...)}
	for _, topic := range []string{cfg.RequestTopic, cfg.ResultTopic, cfg.IntentTopic} {
		require.NoError(t, kafkaio.EnsureTopic(testContext(t), cl, topic, 1, nil))
	}
	return a, reg, c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// requestRecord is a binary-mode create request for connector name.
func requestRecord(t *testing.T, id, source, name string) kafka.Message {
	t.Helper()
	msg, err := events.RequestMessage("requests", []byte(`{"name":"`+name+`","config":{"connector.class":"x"}}`),
		events.RequestOptions{ID: id, Source: source})
	require.NoError(t, err)
	return msg
}

// readResults returns the records of the result topic.
func readResults(t *testing.T, a *Agent, want int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: a.cfg.Brokers, Topic: a.cfg.ResultTopic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []kafka.Message
	ctx, cancel := context.WithTimeout(testContext(t), 10*time.Second)
	defer cancel()
	for len(out) < want {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

// runJob processes msg as the fetch loop would hand it over and returns its tracker item.
func runJob(t *testing.T, a *Agent, msg kafka.Message) *item {
	t.Helper()
	tr := newTracker()
	weight := recordWeight(&msg)
	reserved, err := a.inflight.reserve(testContext(t), 0, weight)
	require.NoError(t, err)
	require.Equal(t, 1, a.inflight.settle(reserved, []int64{weight}))
	a.metrics.InFlight.Inc()
	it := tr.add(msg.Offset)
	a.process(testContext(t), job{msg: msg, item: it, received: time.Now(), weight: weight})
	return it
}

func TestProcess(t *testing.T) {
	tests := []struct {
		name      string
		allowed   []string
		msg       func(t *testing.T) kafka.Message
		wantType  string
		wantCode  int
		wantRuns  int
		resultLbl string
		wantID    string // the result's request_id, when the case names one
	}{
		{name: "request runs", msg: func(t *testing.T) kafka.Message { return requestRecord(t, "id-1", "/src", "conn-a") },
			wantType: events.TypeCreateSucceeded, wantRuns: 1, resultLbl: ResultSucceeded},
		{name: "undecodable record", msg: func(*testing.T) kafka.Message {
			return kafka.Message{Topic: "requests", Offset: 7, Key: []byte("conn-b"), Value: []byte("not a cloudevent"),
				Headers: []kafka.Header{{Key: events.HeaderID, Value: []byte("id-2")}}}
		}, wantType: events.TypeCreateFailed, wantCode: 400, resultLbl: ResultFailed},
		{name: "structured event with undecodable data", msg: func(*testing.T) kafka.Message {
			return kafka.Message{Topic: "requests", Offset: 8, Key: []byte("conn-d"),
				Value: []byte(`{"specversion":"1.0","id":"id-4","source":"/src","type":"` + events.TypeCreateRequest +
					`","data":{"name":"conn-d","config":{"p":"pw-Zq8" "q":1}}}`),
				Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
		}, wantType: events.TypeCreateFailed, wantCode: 400, resultLbl: ResultFailed, wantID: "id-4"},
		{name: "source not allowed", allowed: []string{"/other"},
			msg:      func(t *testing.T) kafka.Message { return requestRecord(t, "id-3", "/src", "conn-c") },
			wantType: events.TypeCreateFailed, wantCode: 403, resultLbl: ResultFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proc := &fakeProcessor{}
			a, _ := testAgent(t, proc, tc.allowed...)
			it := runJob(t, a, tc.msg(t))

			require.Equal(t, stateDone, it.state.Load(), "the item is done once its result is acknowledged")
			require.Len(t, proc.requests, tc.wantRuns)
			recs := readResults(t, a, 1)
			typ, res, err := events.DecodeResult(&recs[0])
			require.NoError(t, err)
			require.Equal(t, tc.wantType, typ)
			require.Equal(t, tc.wantCode, res.ErrorCode)
			if tc.wantID != "" {
				require.Equal(t, tc.wantID, res.RequestID)
				require.NotContains(t, string(recs[0].Value), "Zq8", "the result quotes the request")
			}
			id, source := events.RequestIdentity(&recs[0])
			require.Equal(t, res.RequestID, id)
			require.Equal(t, res.RequestSource, source)
			if tc.wantType == events.TypeCreateFailed {
				require.Equal(t, string(handlers.StepDecode), res.FailedStep)
				require.Equal(t, handlers.StepNames(), stageNamesOf(res.Stages))
				require.Equal(t, events.OutcomeFailed, res.Stages[0].Outcome)
				require.Equal(t, events.NothingUndone, res.Cleanup.Summary)
				require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.StageFailures.WithLabelValues(string(handlers.StepDecode), strconv.Itoa(tc.wantCode))))
			} else {
				require.Equal(t, 2.0, testutil.ToFloat64(a.metrics.OffsetsWritten.WithLabelValues("source")))
				require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.OffsetsWiped.WithLabelValues("source")))
			}
			require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.Requests.WithLabelValues(tc.resultLbl)))
			require.Zero(t, testutil.ToFloat64(a.metrics.InFlight))
			require.Zero(t, testutil.ToFloat64(a.metrics.InFlightBytes))
			require.Zero(t, testutil.ToFloat64(a.metrics.ResultsUnpublished), "the result is out")
			require.Zero(t, a.running.oldest(), "nothing runs once the result is out")
			require.Equal(t, float64(a.inflight.size), testutil.ToFloat64(a.metrics.MaxInflightBytes))
			require.True(t, a.results.seen(res.RequestSource, res.RequestID), "the dedupe view knows the result")
		})
	}
}

// A request whose result is already out is not run again and gets no second result.
func TestProcessDuplicate(t *testing.T) {
	proc := &fakeProcessor{}
	a, _ := testAgent(t, proc)
	msg := requestRecord(t, "id-1", "/src", "conn-a")
	runJob(t, a, msg)
	it := runJob(t, a, msg)
	require.Equal(t, stateDone, it.state.Load())
	require.Len(t, proc.requests, 1)
	require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.Requests.WithLabelValues(ResultDuplicate)))
	require.Equal(t, 1.0, testutil.ToFloat64(a.metrics.Requests.WithLabelValues(ResultSucceeded)))
}

func stageNamesOf(reports []events.StageReport) []string {
	out := make([]string, len(reports))
	for i, r := range reports {
		out[i] = r.Stage
	}
	return out
}

// joinGeneration joins the agent's consumer group on the request topic and returns its
// generation, as the consume loop gets it.
func joinGeneration(t *testing.T, a *Agent) *kafka.Generation {
	t.Helper()
	g, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: a.cfg.GroupID, Brokers: a.cfg.Brokers,
		Topics: []string{a.cfg.RequestTopic}, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	gen, err := g.Next(testContext(t))
	require.NoError(t, err)
	return gen
}

// committed returns the group's committed offset of the request topic's partition 0.
func committed(t *testing.T, a *Agent) int64 {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(a.cfg.Brokers...)}
	res, err := cl.OffsetFetch(testContext(t), &kafka.OffsetFetchRequest{GroupID: a.cfg.GroupID,
		Topics: map[string][]int{a.cfg.RequestTopic: {0}}})
	require.NoError(t, err)
	return res.Topics[a.cfg.RequestTopic][0].CommittedOffset
}

// The commit loop commits the finished prefix of a partition as it grows: never past a request
// whose result is not acknowledged, and up to the last one once every earlier one is done.
func TestCommitLoopCommitsFinishedPrefix(t *testing.T) {
	a, _ := testAgent(t, &fakeProcessor{})
	gen := joinGeneration(t, a)
	tr := newTracker()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.commitLoop(ctx, gen, a.cfg.RequestTopic, 0, tr)
	}()
	items := []*item{tr.add(0), tr.add(1), tr.add(2)}
	for _, it := range items {
		require.True(t, it.start())
	}
	items[1].done()
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, int64(-1), committed(t, a), "offset 0 is not done: nothing is committed")
	items[0].done()
	require.Eventually(t, func() bool { return committed(t, a) == 2 }, 5*time.Second, 20*time.Millisecond)
	items[2].done()
	require.Eventually(t, func() bool { return committed(t, a) == 3 }, 5*time.Second, 20*time.Millisecond)
	cancel()
	<-done

	// The final commit of a partition the agent stops owning.
	it := tr.add(3)
	require.True(t, it.start())
	it.done()
	next, ok := tr.committable()
	require.True(t, ok)
	require.NoError(t, commitFinal(gen, a.cfg.RequestTopic, 0, next))
	require.Equal(t, int64(4), committed(t, a))
}

// aheadProcessor is a fakeProcessor that reads requests' deferred offsets itself, as
// handlers.Creator does: settle takes the text (as a single pass that read it would), else it
// gives up and finishes the decoding.
type aheadProcessor struct {
	fakeProcessor
	settle bool
	reads  int
}

func (p *aheadProcessor) ReadAhead(_ context.Context, req *events.Request) (time.Duration, error) {
	p.reads++
	if p.settle && req.Deferred() {
		req.Settle()
		return time.Millisecond, nil
	}
	return 0, req.Check()
}

// A large request's offsets are checked before any stage runs, by the Processor's read ahead
// or, for a Processor without one, by the agent: a malformed array fails at decode_request with
// DecodeRequest's words, and a request that runs reaches the Processor settled.
func TestProcessLargeRequest(t *testing.T) {
	var body strings.Builder
	body.WriteString(`{"name":"big","config":{"connector.class":"x"},"initial_offsets":[`)
	for i := range 2000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"partition":{"cluster":"a","topic":"t","partition":%d},"offset":{"offset":%d}}`, i, i)
	}
	body.WriteString("]}")
	valid := body.String()
	require.Greater(t, len(valid), events.RawOffsetsBytes)
	malformed := strings.Replace(valid, `"offset":1000}`, `"offset":01000}`, 1)
	tests := []struct {
		name  string
		proc  func() Processor
		body  string
		reads int
	}{
		{name: "valid, no read ahead", proc: func() Processor { return &fakeProcessor{} }, body: valid},
		{name: "malformed, no read ahead", proc: func() Processor { return &fakeProcessor{} }, body: malformed},
		{name: "valid, read ahead", proc: func() Processor { return &aheadProcessor{settle: true} }, body: valid, reads: 1},
		{name: "valid, read ahead gives up", proc: func() Processor { return &aheadProcessor{} }, body: valid, reads: 1},
		{name: "malformed, read ahead gives up", proc: func() Processor { return &aheadProcessor{} }, body: malformed, reads: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proc := tc.proc()
			a, _ := testAgent(t, proc)
			msg, err := events.RequestMessage("requests", []byte(tc.body), events.RequestOptions{ID: "id-big", Source: "/src"})
			require.NoError(t, err)
			msg.Offset = 3
			_, wantErr := events.DecodeRequest(&msg, a.cfg.MaxRequestBytes)
			runJob(t, a, msg)
			recs := readResults(t, a, 1)
			typ, res, err := events.DecodeResult(&recs[0])
			require.NoError(t, err)
			var runs []*events.Request
			switch p := proc.(type) {
			case *fakeProcessor:
				runs = p.requests
			case *aheadProcessor:
				runs = p.requests
				require.Equal(t, tc.reads, p.reads)
			}
			if wantErr != nil {
				require.Equal(t, events.TypeCreateFailed, typ)
				require.Equal(t, string(handlers.StepDecode), res.FailedStep)
				require.Equal(t, "record requests/0@3 is not a decodable request: "+wantErr.Error(), res.Message)
				require.Empty(t, runs)
				return
			}
			require.Equal(t, events.TypeCreateSucceeded, typ)
			require.Len(t, runs, 1)
			require.False(t, runs[0].Deferred(), "the Processor gets a settled request")
			require.NotNil(t, runs[0].Data.RawOffsets)
		})
	}
}
