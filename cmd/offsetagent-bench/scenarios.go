package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// requestMsg is a binary-mode request record for body with the given id.
func requestMsg(body []byte, id string) (kafka.Message, error) {
	m, err := events.RequestMessage("", body, events.RequestOptions{ID: id, Source: "/offsetagent/bench"})
	if err != nil {
		return kafka.Message{}, fmt.Errorf("build request %q: %w", id, err)
	}
	m.Topic = ""
	return m, nil
}

// roundTrip publishes one request and waits for its result; the latency is publish to result.
func roundTrip(ctx context.Context, w *resultWatcher, pub *kafka.Writer, body []byte, id string, timeout time.Duration) (time.Duration, error) {
	msg, err := requestMsg(body, id)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := pub.WriteMessages(ctx, msg); err != nil {
		return 0, fmt.Errorf("publish request %q: %w", id, err)
	}
	got := w.wait(ctx, []string{id}, timeout)
	if err := checkResults(got, 1); err != nil {
		return 0, fmt.Errorf("request %q: %w", id, err)
	}
	return got[id].at.Sub(t0), nil
}

// startProfile starts the CPU profile of -cpuprofile when scenario is the one to profile; the
// returned func stops it.
func (e *env) startProfile(scenario string) (func(), error) {
	if e.opts.cpuProfile == "" || e.opts.profiled != scenario {
		return func() {}, nil
	}
	f, err := os.Create(e.opts.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		// Beside the CPU profile, the allocations so far (go tool pprof -sample_index=alloc_space).
		if hf, err := os.Create(e.opts.cpuProfile + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(hf, 0)
			_ = hf.Close()
		}
	}, nil
}

// partitionField is a balancer that sends each message to its Partition field.
type partitionField struct{}

func (partitionField) Balance(m kafka.Message, _ ...int) int { return m.Partition }

// bareWriter is the baseline producer: acks=all and offsetstore's batch settings (2,000
// records, 1 MiB, 1 ms). BatchSize stays moderate because kafka-go preallocates BatchSize
// messages (about 150 bytes each) for every partition batch it opens.
func bareWriter(brokers []string, topic string) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: partitionField{},
		RequiredAcks: kafka.RequireAll, BatchSize: 2_000, BatchBytes: 1 << 20, BatchTimeout: time.Millisecond,
		Transport: freshTransport()}
}

// bareWrite creates a fresh 25-partition topic and times a bare kafka-go Writer producing msgs
// to it, after the warm-up (warmTopic, by the same writer, so that both sides start with
// metadata, connections and a topic that already holds records), with the CPU time of this
// process and the broker's meanwhile.
func (e *env) bareWrite(ctx context.Context, msgs []kafka.Message) (bulkSample, error) {
	topic := e.name("bare")
	if err := e.createTopic(ctx, topic, 25); err != nil {
		return bulkSample{}, err
	}
	w := bareWriter(e.brokers, topic)
	defer w.Close()
	if err := warmTopic(ctx, w, len(msgs)); err != nil {
		return bulkSample{}, fmt.Errorf("warm up the bare writer: %w", err)
	}
	cpu := startCPU(e.pids()...)
	t0 := time.Now()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return bulkSample{}, fmt.Errorf("bare write to %q: %w", topic, err)
	}
	wall := time.Since(t0)
	return bulkSample{wall: wall, cpu: cpu.elapsed(), procs: cpu.each()}, nil
}

// warmTopic writes n MirrorMaker 2 offsets of a connector no request names through w (a
// bareWriter of a 25-partition offsets topic), unmeasured. A bulk scenario's offsets topics
// are new, unlike a Connect cluster's, and Apache Kafka takes several times longer for the
// first megabytes appended to a new topic's partitions (measured with make bench-real: the
// agent's first request wrote in 150-1,400 ms, its next ones in 40-80 ms, and a warm-up of a
// few thousand records did not change that): every measured write, the baseline's, the
// agent's and the floor's, goes to a topic that already holds such a write.
func warmTopic(ctx context.Context, w *kafka.Writer, n int) error {
	return w.WriteMessages(ctx, mm2Family.records("", "bulk-warm-up", n)...)
}

func (e *env) createTopic(ctx context.Context, topic string, partitions int) error {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: e.brokers}) // the bench's brokers know no users
	cl.Timeout = 30 * time.Second
	if err := kafkaio.EnsureTopic(ctx, cl, topic, partitions, map[string]string{"cleanup.policy": "compact"}); err != nil {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	return nil
}

// singleLatencies sends n single-offset requests one at a time (after a few warm-ups), within
// budget, and returns their publish->result latencies.
func (e *env) singleLatencies(ctx context.Context, a *runningAgent, prefix string, n int, budget time.Duration) ([]time.Duration, error) {
	pub := newPublisher(a.cfg.Brokers, a.cfg.RequestTopic)
	defer pub.Close()
	for i := range 3 {
		name := fmt.Sprintf("%s-warmup-%d", prefix, i)
		if _, err := roundTrip(ctx, a.watcher, pub, mm2Body(name, 1), name, 30*time.Second); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	deadline := time.Now().Add(budget)
	lat := make([]time.Duration, 0, n)
	ids := make([]string, 0, n)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		d, err := roundTrip(ctx, a.watcher, pub, mm2Body(name, 1), name, 30*time.Second)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		ids = append(ids, name)
	}
	if a.watcher.decode {
		got := a.watcher.wait(ctx, ids, time.Second)
		rs := make([]resultInfo, 0, len(got))
		for _, r := range got {
			rs = append(rs, r)
		}
		e.progress("%s: mean stage durations:%s", prefix, stageMeans(rs))
	}
	return lat, nil
}
