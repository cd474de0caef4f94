package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/race"
)

// Anyone may publish to the request topic, and a few KiB of compressed bytes can inflate to
// GiBs. A compressed batch that inflates beyond twice OFFSETAGENT_MAX_REQUEST_BYTES is not
// inflated: each of its records gets a failed result that says why, named by its place, and
// the partition goes on. A compressed request within the bound is read as any other.
func TestCompressedBatchBeyondInflateLimit(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.MaxRequestBytes = 64 << 10 // a batch may inflate to 128 KiB
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	startAgent(t, cfg, agent.Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(codec kafka.Compression, msgs ...kafka.Message) {
		t.Helper()
		w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Compression: codec,
			RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: len(msgs), BatchBytes: 64 << 20,
			Transport: &kafka.Transport{MetadataTTL: time.Second}}
		defer w.Close()
		require.NoError(t, w.WriteMessages(ctx, msgs...))
	}
	// Offsets 0 and 1: two records of zeros in one zstd batch, 16 MiB inflated, a few KiB on the
	// broker (the reader's shared buffer would have grown to hold them all).
	zeros := make([]byte, 8<<20)
	write(kafka.Zstd, kafka.Message{Key: []byte("bomb-a"), Value: zeros}, kafka.Message{Key: []byte("bomb-b"), Value: zeros})
	// Offset 2: one record of 400 kB of letters in an lz4 batch of its own (the exact-size path).
	rnd := rand.New(rand.NewPCG(3, 4))
	letters := make([]byte, 400_000)
	for i := range letters {
		letters[i] = "abcdefghijklmnopqrstuvwxyz"[rnd.IntN(26)]
	}
	write(kafka.Lz4, kafka.Message{Key: []byte("bomb-c"), Value: letters})
	// Offset 3: a request, compressed, well within the bound.
	msg, err := events.RequestMessage(cfg.RequestTopic, []byte(readFile(t, "testdata/file-src-1.json")),
		events.RequestOptions{ID: "after-the-bombs", Source: "/integration-test"})
	require.NoError(t, err)
	msg.Topic = ""
	write(kafka.Lz4, msg)

	for offset := range 3 {
		res := cl.waitResult(fmt.Sprintf("%s/0@%d", cfg.RequestTopic, offset), resultWait)
		require.Equal(t, events.TypeCreateFailed, res.Type)
		require.Equal(t, "decode_request", res.Data.FailedStep, "%+v", res.Data)
		require.Contains(t, res.Data.Message, "compressed record batch inflates beyond 131072 bytes")
	}
	res := cl.waitResult("after-the-bombs", resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Len(t, cl.allResults(), 4, "one result per record")
}

// gaugeStages answers every request succeeded at once and notes the largest reading of
// offsetagent_requests_in_flight_bytes while requests run; the request named "blocker" waits
// until release is closed.
type gaugeStages struct {
	release chan struct{}
	mu      sync.Mutex
	gauge   func() float64
	max     float64
	blocked bool
}

func (s *gaugeStages) Create(_ context.Context, req *events.Request) *handlers.Outcome {
	if req.Data.Name == "blocker" {
		s.mu.Lock()
		s.blocked = true
		s.mu.Unlock()
		<-s.release
	}
	s.mu.Lock()
	if s.gauge != nil {
		s.max = max(s.max, s.gauge())
	}
	s.mu.Unlock()
	return &handlers.Outcome{EventType: events.TypeCreateSucceeded, Result: events.Result{
		RequestID: req.ID, RequestSource: req.Source, Name: req.Data.Name, Stages: []events.StageReport{}}}
}

// A backlog of compressed requests that inflate to many times OFFSETAGENT_MAX_INFLIGHT_BYTES,
// all of it a few KiB on the broker: the agent's fetches inflate no more than their
// reservations (the first batch aside), so the heap stays far below the backlog's inflated
// size (one fetch used to inflate all of it at once), every request gets its result, and the
// in-flight bytes never exceed the bound. The backlog is published while a first request
// holds the whole bound, so that the agent fetches none of it before the heap is measured.
func TestCompressedBacklogWithinInflightBytes(t *testing.T) {
	if race.Enabled {
		// Under the race detector the 80 MiB of zstd and JSON took 50 CPU-seconds and, on a
		// busy machine, more than the minute the results get.
		t.Skip("measures the heap of 80 MiB of inflated requests: make test runs it without the race detector")
	}
	const (
		requests = 160
		pad      = 512 << 10 // a request inflates to 512 KiB: 80 MiB in all
	)
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.MaxRequestBytes = 1 << 20
	cfg.MaxInflightBytes = 4 << 20 // two backlog requests at once (each weighs 4 x 512 KiB)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	stages := &gaugeStages{release: make(chan struct{})}
	r := startAgent(t, cfg, agent.Options{Stages: stages})
	stages.mu.Lock()
	stages.gauge = func() float64 { return r.gauge("offsetagent_requests_in_flight_bytes") }
	stages.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Compression: kafka.Zstd,
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1, BatchBytes: 4 << 20,
		Transport: &kafka.Transport{MetadataTTL: time.Second}}
	defer w.Close()
	request := func(name string, pad int) kafka.Message {
		body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","pad":%q},"initial_offsets":[]}`,
			name, strings.Repeat("x", pad))
		msg, err := events.RequestMessage(cfg.RequestTopic, []byte(body), events.RequestOptions{ID: name, Source: "/integration-test"})
		require.NoError(t, err)
		msg.Topic = ""
		return msg
	}
	// The blocker weighs 4 x 900 KiB of the 4 MiB: no fetch starts until it is done.
	require.NoError(t, w.WriteMessages(ctx, request("blocker", 900<<10)))
	require.Eventually(t, func() bool { stages.mu.Lock(); defer stages.mu.Unlock(); return stages.blocked },
		30*time.Second, 5*time.Millisecond)
	backlog := make([]kafka.Message, requests)
	for i := range backlog {
		backlog[i] = request(fmt.Sprintf("backlog-%d", i), pad)
	}
	require.NoError(t, w.WriteMessages(ctx, backlog...)) // one batch each (BatchSize)
	backlog = nil

	// The heap of objects (live and not yet swept) from the release of the blocker on, with
	// little room for garbage, against the same after a collection before it.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	idle := heap()
	var peak atomic.Uint64
	sampling, stopSampling := context.WithCancel(ctx)
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for sampling.Err() == nil {
			if h := heap(); h > peak.Load() {
				peak.Store(h)
			}
			time.Sleep(time.Millisecond)
		}
	})
	close(stages.release)
	got := cl.waitResults(requests+1, time.Minute)
	stopSampling()
	sampled.Wait()

	ids := map[string]bool{}
	for _, res := range got {
		require.Equal(t, events.TypeCreateSucceeded, res.Type, "%+v", res.Data)
		ids[res.Data.RequestID] = true
	}
	require.Len(t, ids, requests+1, "one result per request")
	stages.mu.Lock()
	defer stages.mu.Unlock()
	require.Positive(t, stages.max)
	require.LessOrEqual(t, stages.max, float64(cfg.MaxInflightBytes))
	grew := int64(peak.Load()) - int64(idle)
	t.Logf("heap peak %.1f MiB above %.1f MiB at the blocker's release; the backlog inflates to %d MiB",
		float64(grew)/(1<<20), float64(idle)/(1<<20), requests*pad>>20)
	require.Less(t, grew, int64(40<<20), "heap peak above idle")
}

// requestCodecs counts the first n records of topic by the compression type of their batch
// (kgo's: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func requestCodecs(t *testing.T, brokers []string, topic string, n int) map[uint8]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := map[uint8]int{}
	for n > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got[r.Attrs.CompressionType()]++
			n--
		})
	}
	require.NoError(t, ctx.Err())
	return got
}
