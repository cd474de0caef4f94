package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
)

// env is what every scenario shares: the broker and the run's options.
type env struct {
	brokers []string
	opts    options
	stderr  io.Writer
	seq     atomic.Int64
	// brokerPID is the embedded broker's process, whose CPU time the bulk scenario counts; 0 on
	// an external cluster.
	brokerPID int
	// run prefixes every topic and group name on an external cluster, which keeps what earlier
	// runs wrote; empty on the run's own kfake.
	run string
	// profileTaken is set once the one profile of -cpuprofile was started (latency).
	profileTaken *atomic.Bool
}

// name is a topic or group name for tag, unique in this run (and across runs on an external
// cluster).
func (e *env) name(tag string) string {
	return fmt.Sprintf("%s%s-%d", e.run, tag, e.seq.Add(1))
}

// pids are the local processes every measurement counts the CPU time of: this driver and the
// embedded broker.
func (e *env) pids() []int { return []int{os.Getpid(), e.brokerPID} }

func (e *env) progress(format string, args ...any) {
	if e.opts.verbose {
		fmt.Fprintf(e.stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// scaled is n times BENCH_SCALE, at least floor.
func (e *env) scaled(n, floor int) int {
	return max(floor, int(math.Round(float64(n)*e.opts.scale)))
}

// config is the agent's default configuration with topics and group unique to tag.
func (e *env) config(tag string) agent.Config {
	s := e.name(tag)
	return agent.Config{
		Brokers:                e.brokers,
		RequestTopic:           "requests-" + s,
		ResultTopic:            "results-" + s,
		GroupID:                "offsetagent-" + s,
		ConfigTopic:            "connect-configs-" + s,
		OffsetsTopic:           "connect-offsets-" + s,
		IntentTopic:            "intents-" + s,
		CreateConnectTopics:    true,
		RequestTopicPartitions: 6,
		HTTPAddr:               "127.0.0.1:0",
		LogLevel:               "warn",
		LogFormat:              "json",
		Concurrency:            16,
		MaxRequestBytes:        16 << 20,
		ShutdownTimeout:        10 * time.Second,
	}
}

// runningAgent is an in-process agent with the times its start took.
type runningAgent struct {
	*agent.Agent
	cfg    agent.Config
	cancel context.CancelFunc
	done   chan error
	// viewReady is the time from Run to the views being loaded, ready to Ready().
	viewReady, ready time.Duration
	watcher          *resultWatcher
}

// startAgent runs an agent and waits until it is ready (bounded by two minutes). stages
// replaces the staged creation when not nil.
func (e *env) startAgent(ctx context.Context, cfg agent.Config, stages agent.Processor) (*runningAgent, error) {
	a, err := agent.New(cfg, agent.Options{Stages: stages, Version: "bench"})
	if err != nil {
		return nil, fmt.Errorf("build agent: %w", err)
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runningAgent{Agent: a, cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	start := time.Now()
	go func() { r.done <- a.Run(actx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for !a.Ready() {
		if r.viewReady == 0 && a.Store().Ready() {
			r.viewReady = time.Since(start)
		}
		select {
		case err := <-r.done:
			cancel()
			return nil, fmt.Errorf("agent stopped before it was ready: %w", err)
		case <-ctx.Done():
			r.stop()
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, errors.New("agent not ready within 2m")
		}
	}
	r.ready = time.Since(start)
	if r.viewReady == 0 {
		r.viewReady = r.ready
	}
	r.watcher, err = watchResults(ctx, e.brokers, cfg.ResultTopic, cfg.RequestTopicPartitions, e.opts.verbose)
	if err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// stop shuts the agent and its result watcher down.
func (r *runningAgent) stop() {
	if r.watcher != nil {
		r.watcher.close()
	}
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
	}
}

// resultInfo is what the driver keeps of one result record.
type resultInfo struct {
	at      time.Time
	typ     string
	message string // the failure's data, only for failed results
	// stages are the result's stage reports (decoded only in verbose runs).
	stages []events.StageReport
	// raw is the result record, kept by a watcher that keeps them (keep) for decoding after
	// the measurement.
	raw *kafka.Message
}

// resultWatcher reads the result topic from its start with one plain reader per partition and
// notes when each request's result arrived, by the ce_requestid header the agent adds.
type resultWatcher struct {
	// closers close the watcher's consumers (each waits for its long poll).
	closers []func()
	decode  bool
	keep    bool
	wg      sync.WaitGroup
	cancel  context.CancelFunc

	mu      sync.Mutex
	got     map[string]resultInfo
	waiters []*waiter
}

func watchResults(ctx context.Context, brokers []string, topic string, partitions int, decode bool) (*resultWatcher, error) {
	wctx, cancel := context.WithCancel(ctx)
	w := &resultWatcher{cancel: cancel, decode: decode, got: map[string]resultInfo{}}
	for p := range partitions {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p,
			MinBytes: 1, MaxWait: 1500 * time.Millisecond, MaxBytes: 1 << 20})
		w.closers = append(w.closers, func() { _ = r.Close() })
		w.wg.Go(func() {
			for {
				m, err := r.ReadMessage(wctx)
				if err != nil {
					if wctx.Err() != nil {
						return
					}
					continue
				}
				w.note(&m)
			}
		})
	}
	return w, nil
}

func (w *resultWatcher) note(m *kafka.Message) {
	at := time.Now()
	info := resultInfo{at: at}
	id, _ := events.Header(m, events.HeaderRequestID)
	info.typ, _ = events.Header(m, events.HeaderType)
	if info.typ == events.TypeCreateFailed {
		info.message = string(m.Value)
	}
	if w.decode {
		if _, res, err := events.DecodeResult(m); err == nil {
			info.stages = res.Stages
		}
	}
	if w.keep {
		info.raw = m
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.got[id]; dup {
		return
	}
	w.got[id] = info
	for _, wt := range w.waiters {
		if _, ok := wt.want[id]; ok {
			if wt.left--; wt.left == 0 {
				close(wt.done)
			}
		}
	}
}

// wait returns the results of ids once all arrived or when timeout passed (then only those
// that did). The watcher counts arrivals for it, so waiting for thousands of results costs
// nothing per result beyond a map lookup (the agent and broker are measured on this CPU).
func (w *resultWatcher) wait(ctx context.Context, ids []string, timeout time.Duration) map[string]resultInfo {
	wt := &waiter{want: make(map[string]struct{}, len(ids)), done: make(chan struct{})}
	w.mu.Lock()
	for _, id := range ids {
		if _, ok := w.got[id]; !ok {
			wt.want[id] = struct{}{}
		}
	}
	wt.left = len(wt.want)
	waiting := wt.left > 0 // wt.left is note's once wt is among the waiters, under w.mu
	if waiting {
		w.waiters = append(w.waiters, wt)
	}
	w.mu.Unlock()
	if waiting {
		deadline := time.NewTimer(timeout)
		select {
		case <-wt.done:
		case <-deadline.C:
		case <-ctx.Done():
		}
		deadline.Stop()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiters = slices.DeleteFunc(w.waiters, func(o *waiter) bool { return o == wt })
	out := make(map[string]resultInfo, len(ids))
	for _, id := range ids {
		if r, ok := w.got[id]; ok {
			out[id] = r
		}
	}
	return out
}

// waiter is one wait call's count of the results it still misses.
type waiter struct {
	want map[string]struct{}
	left int
	done chan struct{}
}

func (w *resultWatcher) close() {
	w.cancel()
	var closing sync.WaitGroup
	for _, c := range w.closers {
		closing.Go(c)
	}
	closing.Wait()
	w.wg.Wait()
}

// freshTransport is a kafka-go Transport of one client. The shared kafka.DefaultTransport
// caches metadata (MetadataTTL, 6 s), so a writer using it reports "Unknown Topic Or
// Partition" for a topic created after the cache was filled, as every scenario's topics are.
func freshTransport() *kafka.Transport {
	return &kafka.Transport{MetadataTTL: time.Second}
}

// newPublisher is the client that publishes requests: acks=all, no batching delay, room for a
// request of the broker's maximum size.
func newPublisher(brokers []string, topic string) *kafka.Writer {
	// Requests go compressed as offsetagent's own publishers send them by default.
	codec, _ := events.DefaultRequestCompression.Codec()
	return &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 10_000,
		BatchBytes: maxMessageBytes, WriteTimeout: time.Minute, Transport: freshTransport(), Compression: codec}
}

// checkResults counts results that are not succeeded and describes the first.
// failureText is the failed step, error and cleanup of a failed result's data, or the data
// itself when it does not decode.
func failureText(data string) string {
	var f events.Result
	if err := json.Unmarshal([]byte(data), &f); err != nil || f.FailedStep == "" {
		return fmt.Sprintf("%.600s", data)
	}
	cleanup := ""
	if f.Cleanup != nil {
		cleanup = f.Cleanup.Summary
	}
	return fmt.Sprintf("%s failed at %s: %d %s (cleanup: %s)", f.Name, f.FailedStep, f.ErrorCode, f.Message, cleanup)
}

func checkResults(got map[string]resultInfo, want int) error {
	if len(got) < want {
		return fmt.Errorf("only %d of %d results arrived in time", len(got), want)
	}
	for _, r := range got {
		if r.typ != events.TypeCreateSucceeded {
			return fmt.Errorf("a request ended %s: %s", r.typ, failureText(r.message))
		}
	}
	return nil
}

// noopStages answers every request succeeded at once: the request/result loop's floor.
type noopStages struct{}

func (noopStages) Create(_ context.Context, req *events.Request) *handlers.Outcome {
	stages := make([]events.StageReport, 0, len(handlers.Steps()))
	for _, s := range handlers.Steps() {
		stages = append(stages, events.StageReport{Stage: string(s), Outcome: events.OutcomeOK})
	}
	zero := 0
	return &handlers.Outcome{EventType: events.TypeCreateSucceeded, Result: events.Result{
		RequestID: req.ID, RequestSource: req.Source, Name: req.Data.Name, Stages: stages,
		Type: "source", OffsetsWritten: &zero, OffsetsWiped: &zero,
	}}
}

// percentile is the nearest-rank p-quantile (0 < p <= 1) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// heapInUse is the bytes of heap objects, live or not yet swept.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// markedLive is the heap the last garbage collection found reachable.
func markedLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap collects garbage and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapInUse()
}

// peakSampler records the largest heapInUse seen every few milliseconds until stopped.
type peakSampler struct {
	peak atomic.Uint64
	// live is the largest heap a collection found reachable meanwhile.
	live atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func samplePeak() *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if h := heapInUse(); h > p.peak.Load() {
				p.peak.Store(h)
			}
			if l := markedLive(); l > p.live.Load() {
				p.live.Store(l)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) finish() uint64 {
	close(p.stop)
	<-p.done
	return p.peak.Load()
}

// stageMeans averages the stage durations of results (verbose runs only), for the progress log.
func stageMeans(rs []resultInfo) string {
	sum := map[string]float64{}
	var order []string
	for _, r := range rs {
		for _, s := range r.stages {
			if _, ok := sum[s.Stage]; !ok {
				order = append(order, s.Stage)
			}
			sum[s.Stage] += s.DurationSeconds
		}
	}
	var b []byte
	for _, st := range order {
		b = fmt.Appendf(b, " %s=%.2fms", st, 1000*sum[st]/float64(len(rs)))
	}
	return string(b)
}
