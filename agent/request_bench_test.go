package agent

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
)

// benchAgent is an agent with the real stages on an in-process broker, its views running and
// loaded, for the request path's benchmarks: requests are handed to process as the fetch loop
// hands them over (no fetch of the request topic, no commit).
func benchAgent(b *testing.B, concurrency int) (*Agent, *brokerRequests) {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(b, err)
	b.Cleanup(c.Close)
	counts := &brokerRequests{}
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		counts.add(req.Key())
		return nil, nil, false // counted only: the broker answers
	})
	cfg := Config{
		Brokers: c.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results", GroupID: "offsetagent",
		ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", IntentTopic: "intents", CreateConnectTopics: true,
		RequestTopicPartitions: 6, HTTPAddr: "127.0.0.1:0", LogLevel: "info", LogFormat: "json",
		Concurrency: concurrency, MaxRequestBytes: 1 << 20, ShutdownTimeout: 5 * time.Second, SessionTimeout: 10 * time.Second,
		DedupeWindow: time.Hour, DedupeMaxEntries: 1 << 20,
	}
	a, err := New(cfg, Options{})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	require.NoError(b, a.prepareTopics(ctx))
	for _, run := range []func(context.Context) error{a.store.Run, a.results.log.Run, a.intents.log.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	require.NoError(b, a.store.WaitReady(wctx))
	require.NoError(b, a.results.log.WaitReady(wctx))
	require.NoError(b, a.intents.log.WaitReady(wctx))
	return a, counts
}

// brokerRequests counts the requests the broker answers, by API key.
type brokerRequests struct {
	mu     sync.Mutex
	counts map[int16]int
}

func (r *brokerRequests) add(key int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[int16]int{}
	}
	r.counts[key]++
}

// reset forgets the counts so far.
func (r *brokerRequests) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = nil
}

// processCPU is the CPU time this process (the agent and the in-process broker) ran so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleCPU is the time the Go scheduler's processors were idle so far (no goroutine to run):
// a run whose processors idle while its wall time exceeds its CPU time waits on round trips,
// not on the machine.
func idleCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(s)
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// report reports the Produce, Fetch and other requests per operation of b, and the process's
// CPU time and its processors' idle time per operation since cpu0 and idle0.
func (r *brokerRequests) report(b *testing.B, cpu0, idle0 time.Duration) {
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(idleCPU()-idle0)/float64(time.Microsecond)/float64(b.N), "idle-us/op")
	r.mu.Lock()
	defer r.mu.Unlock()
	other := 0
	for k, n := range r.counts {
		if k != int16(kmsg.Produce) && k != int16(kmsg.Fetch) {
			other += n
		}
	}
	b.ReportMetric(float64(r.counts[int16(kmsg.Produce)])/float64(b.N), "produces/op")
	b.ReportMetric(float64(r.counts[int16(kmsg.Fetch)])/float64(b.N), "fetches/op")
	b.ReportMetric(float64(other)/float64(b.N), "others/op")
}

// benchRequest is the latency scenario's request: a MirrorMaker 2 source connector with one
// offset.
func benchRequest(b *testing.B, name string) kafka.Message {
	b.Helper()
	body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector",`+
		`"source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*","tasks.max":"4"},`+
		`"initial_offsets":[{"partition":{"cluster":"src","topic":"mirrored-00000","partition":0},"offset":{"offset":1000}}]}`, name)
	msg, err := events.RequestMessage("requests", []byte(body), events.RequestOptions{ID: name, Source: "/bench", Key: name})
	require.NoError(b, err)
	return msg
}

// benchProcess hands msg to process as the fetch loop would and reports whether its result
// went out.
func benchProcess(ctx context.Context, b *testing.B, a *Agent, tr *tracker, msg kafka.Message) {
	weight := recordWeight(&msg)
	reserved, err := a.inflight.reserve(ctx, 0, weight)
	require.NoError(b, err)
	a.inflight.settle(reserved, []int64{weight})
	a.metrics.InFlight.Inc()
	it := tr.add(msg.Offset)
	a.process(ctx, job{msg: msg, item: it, received: time.Now(), weight: weight})
}

// BenchmarkRequestPath runs one-offset requests for distinct connectors one at a time through
// the agent's process (decode, the stages with their claim, intent and writes, the result,
// the intent's removal): the CPU and allocations a request pays between its fetch and its
// commit, the in-process broker's included.
//
//	go test -run '^$' -bench BenchmarkRequestPath -benchmem -count 6 ./agent/
func BenchmarkRequestPath(b *testing.B) {
	a, counts := benchAgent(b, 1)
	ctx := context.Background()
	tr := newTracker()
	msgs := make([]kafka.Message, b.N+1)
	for i := range msgs {
		msgs[i] = benchRequest(b, fmt.Sprintf("bench-%d", i))
		msgs[i].Offset = int64(i)
	}
	benchProcess(ctx, b, a, tr, msgs[0]) // warm-up: connections, metadata
	a.intents.wait()
	counts.reset()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, idle0 := processCPU(), idleCPU()
	for i := 1; i <= b.N; i++ {
		benchProcess(ctx, b, a, tr, msgs[i])
	}
	a.intents.wait()
	b.StopTimer()
	counts.report(b, cpu0, idle0)
	requireSucceeded(b, a, b.N+1)
}

// BenchmarkRequestPathConcurrent runs the same requests 128 at a time (the default
// OFFSETAGENT_CONCURRENCY), each on its own goroutine as lanes of distinct connectors run.
//
//	go test -run '^$' -bench BenchmarkRequestPathConcurrent -benchmem -count 6 ./agent/
func BenchmarkRequestPathConcurrent(b *testing.B) {
	const lanes = 128
	a, counts := benchAgent(b, lanes)
	ctx := context.Background()
	tr := newTracker()
	msgs := make([]kafka.Message, b.N+1)
	for i := range msgs {
		msgs[i] = benchRequest(b, fmt.Sprintf("bench-%d", i))
		msgs[i].Offset = int64(i)
	}
	benchProcess(ctx, b, a, tr, msgs[0])
	a.intents.wait()
	counts.reset()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, idle0 := processCPU(), idleCPU()
	var wg sync.WaitGroup
	next := make(chan int)
	for range lanes {
		wg.Go(func() {
			for i := range next {
				benchProcess(ctx, b, a, tr, msgs[i])
			}
		})
	}
	for i := 1; i <= b.N; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	a.intents.wait()
	b.StopTimer()
	counts.report(b, cpu0, idle0)
	requireSucceeded(b, a, b.N+1)
}

// requireSucceeded checks that n requests succeeded and have their results out.
func requireSucceeded(b *testing.B, a *Agent, n int) {
	b.Helper()
	require.Equal(b, float64(n), testutil.ToFloat64(a.metrics.Requests.WithLabelValues(ResultSucceeded)), "every request succeeded")
	require.Equal(b, n, a.results.size(), "every request has its result")
}
