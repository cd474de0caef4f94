package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// mm2Class is the connector of every benchmark request: MirrorMaker 2's source, whose
// partitions are {"cluster","topic","partition"} and offsets {"offset": N}.
const mm2Class = "org.apache.kafka.connect.mirror.MirrorSourceConnector"

// mm2Partition is the i-th upstream topic-partition: 100 partitions per topic.
func mm2Partition(i int) (topic string, partition int) {
	return fmt.Sprintf("mirrored-%05d", i/100), i % 100
}

// mm2Body is a create request for connector name with n MM2 source offsets.
func mm2Body(name string, n int) []byte {
	var b bytes.Buffer
	b.Grow(200 + 80*n)
	fmt.Fprintf(&b, `{"name":%q,"config":{"connector.class":%q,"source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*","tasks.max":"4"},"initial_offsets":[`, name, mm2Class)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		topic, p := mm2Partition(i)
		fmt.Fprintf(&b, `{"partition":{"cluster":"src","topic":%q,"partition":%d},"offset":{"offset":%d}}`, topic, p, 1000+7*i)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// mm2Records are the offsets-topic records Connect would hold for mm2Body(name, n): the key in
// HashMap order, the value, and the murmur2 partition of a 25-partition topic.
func mm2Records(topic, name string, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	var key []byte
	for i := range msgs {
		t, p := mm2Partition(i)
		part := offsetstore.JavaHashMapOrder(jsonvalue.Map{
			{Key: "cluster", Value: "src"}, {Key: "topic", Value: t},
			{Key: "partition", Value: jsonvalue.Number(strconv.Itoa(p))},
		})
		key = offsetstore.AppendKey(key[:0], name, part)
		k := bytes.Clone(key)
		msgs[i] = kafka.Message{Topic: topic, Key: k, Value: fmt.Appendf(nil, `{"offset":%d}`, 1000+7*i),
			Partition: offsetstore.PartitionFor(k, 25)}
	}
	return msgs
}

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

// bulkScenario measures one request with 100,000 MM2 offsets.
func bulkScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "1 bulk"
	n := e.scaled(100_000, 100)
	name := "mm2-bulk"
	base, err := e.bareWrite(ctx, mm2Records("", name, n))
	if err != nil {
		return nil, err
	}
	e.progress("bare writer: %d records in %s", n, base)

	// The agent runs in a child process: its heap is then the agent's alone.
	cfg := e.config("bulk")
	profile := ""
	if e.opts.profiled == "bulk" {
		profile = e.opts.cpuProfile
	}
	a, err := e.startAgentProcess(ctx, cfg, profile, false)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	pub := newPublisher(e.brokers, cfg.RequestTopic)
	defer pub.Close()
	if _, err := roundTrip(ctx, a.watcher, pub, mm2Body("mm2-warmup", 1), "bulk-warmup", 30*time.Second); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	msg, err := requestMsg(mm2Body(name, n), "bulk-1")
	if err != nil {
		return nil, err
	}
	size := len(msg.Value)
	if size > cfg.MaxRequestBytes {
		return nil, fmt.Errorf("the request is %d bytes, above the %d-byte limit", size, cfg.MaxRequestBytes)
	}
	idle, err := a.mark(ctx)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	err = pub.WriteMessages(ctx, msg)
	var got map[string]resultInfo
	if err == nil {
		got = a.watcher.wait(ctx, []string{"bulk-1"}, 4*time.Minute)
	}
	peak, live, perr := a.peak(ctx)
	if err != nil {
		return nil, fmt.Errorf("publish the bulk request: %w", err)
	}
	if perr != nil {
		return nil, perr
	}
	if err := checkResults(got, 1); err != nil {
		return nil, err
	}
	took := got["bulk-1"].at.Sub(t0)
	e.progress("agent: %d offsets in %s, peak heap %d above idle %d;%s", n, took, peak-idle, idle,
		stageMeans([]resultInfo{got["bulk-1"]}))
	floor, err := e.bulkFloor(ctx, msg.Value)
	if err != nil {
		return nil, err
	}
	e.progress("the same request to an agent with no-op stages: %s", floor)
	const mib = 1 << 20
	return []row{
		ratioRow(sc, fmt.Sprintf("%d offsets, publish->result (records/s)", n),
			float64(n)/took.Seconds(), float64(n)/base.Seconds(), "%.0f", ">=", 0.8),
		ratioRow(sc, "agent's peak heap above idle (MiB) vs request size", float64(peak-idle)/mib, float64(size)/mib, "%.1f", "<=", 5),
		ratioRow(sc, "agent's peak reachable heap (GC-marked) above idle (MiB)", float64(live-min(idle, live))/mib, float64(size)/mib, "%.1f", "", 0),
		ratioRow(sc, "the same request, agent with no-op stages, fresh broker (records/s)",
			float64(n)/floor.Seconds(), float64(n)/base.Seconds(), "%.0f", "", 0),
		ratioRow(sc, "the agent against that no-op agent (records/s)",
			float64(n)/took.Seconds(), float64(n)/floor.Seconds(), "%.0f", "", 0),
	}, nil
}

// bulkFloor is publish->result for a request with body on a broker of its own, sent to an
// agent process whose stages answer at once (the latency scenario's floor): the request's
// transit, its decoding and the result, with nothing validated or written, on the same cold
// broker and process as the real run. It bounds what any agent could reach here.
func (e *env) bulkFloor(ctx context.Context, body []byte) (time.Duration, error) {
	fe := e
	if len(e.opts.brokers) == 0 {
		b, err := startBroker(ctx)
		if err != nil {
			return 0, err
		}
		defer b.close()
		fe = &env{brokers: []string{b.addr}, opts: e.opts, stderr: e.stderr}
	}
	cfg := fe.config("bulk-floor")
	a, err := fe.startAgentProcess(ctx, cfg, "", true)
	if err != nil {
		return 0, err
	}
	defer a.stop()
	pub := newPublisher(fe.brokers, cfg.RequestTopic)
	defer pub.Close()
	if _, err := roundTrip(ctx, a.watcher, pub, mm2Body("mm2-warmup", 1), "floor-warmup", 30*time.Second); err != nil {
		return 0, fmt.Errorf("floor warm-up: %w", err)
	}
	return roundTrip(ctx, a.watcher, pub, body, "bulk-floor", 4*time.Minute)
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
// to it (after one warm-up record, so that both sides start with metadata and connections).
func (e *env) bareWrite(ctx context.Context, msgs []kafka.Message) (time.Duration, error) {
	topic := e.name("bare")
	if err := e.createTopic(ctx, topic, 25); err != nil {
		return 0, err
	}
	w := bareWriter(e.brokers, topic)
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("warm-up"), Value: []byte("{}")}); err != nil {
		return 0, fmt.Errorf("warm up the bare writer: %w", err)
	}
	t0 := time.Now()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return 0, fmt.Errorf("bare write to %q: %w", topic, err)
	}
	return time.Since(t0), nil
}

func (e *env) createTopic(ctx context.Context, topic string, partitions int) error {
	cl := &kafka.Client{Addr: kafka.TCP(e.brokers...), Timeout: 30 * time.Second}
	if err := offsetstore.EnsureTopic(ctx, cl, topic, partitions, map[string]string{"cleanup.policy": "compact"}); err != nil {
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

// latencyScenario measures single-offset requests one at a time, against
// the same agent with no-op stages.
func latencyScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "2 latency"
	n := e.scaled(400, 20)
	measure := func(tag string, stages agent.Processor) ([]time.Duration, error) {
		a, err := e.startAgent(ctx, e.config(tag), stages)
		if err != nil {
			return nil, err
		}
		defer a.stop()
		return e.singleLatencies(ctx, a, tag, n, 90*time.Second)
	}
	floor, err := measure("floor", noopStages{})
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	real, err := measure("single", nil)
	if err != nil {
		return nil, err
	}
	e.progress("latency: %d real, %d floor samples", len(real), len(floor))
	return []row{
		ratioRow(sc, fmt.Sprintf("p50 publish->result, %d requests (ms)", len(real)),
			ms(percentile(real, 0.5)), ms(percentile(floor, 0.5)), "%.2f", "<=", 2),
		ratioRow(sc, "p99 publish->result (ms)", ms(percentile(real, 0.99)), ms(percentile(floor, 0.99)), "%.2f", "", 0),
	}, nil
}
