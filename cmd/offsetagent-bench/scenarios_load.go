package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/sethvargo/go-envconfig"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// agentDefaults is the agent's configuration with nothing set: its shipped defaults.
func agentDefaults(ctx context.Context) (agent.Config, error) {
	var cfg agent.Config
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &cfg, Lookuper: envconfig.MapLookuper(nil)}); err != nil {
		return cfg, fmt.Errorf("agent defaults: %w", err)
	}
	return cfg, nil
}

// manySample is what one run of the many scenario measured: the results' rate, each
// request's publish->result latency and the CPU time per request of the agent's process, the
// broker's and the driver's (this process) from the publish to the last result.
type manySample struct {
	rate float64
	lat  []time.Duration
	cpu  [3]time.Duration
	// objects and bytes are the agent's heap allocations per request.
	objects, bytes float64
}

// manyRun publishes n requests for distinct connectors (10 offsets each) at once (franz-go,
// as the latency scenario's driver) to an agent in a child process with the given
// concurrency and request-topic partitions. Results missing after budget are left out.
func (e *env) manyRun(ctx context.Context, tag string, n, concurrency, partitions int, budget time.Duration) (manySample, error) {
	var s manySample
	cfg := e.config(tag)
	cfg.Concurrency, cfg.RequestTopicPartitions = concurrency, partitions
	profile := ""
	if concurrency > 1 && e.opts.profiled == "many" {
		profile = e.opts.cpuProfile
	}
	a, err := startAgentChild(ctx, cfg, profile, false)
	if err != nil {
		return s, err
	}
	defer a.stop()
	w, err := watchResultsFranz(ctx, e.brokers, cfg.ResultTopic, false)
	if err != nil {
		return s, err
	}
	defer w.close()
	pub, err := newFranzPublisher(e.brokers, cfg.RequestTopic)
	if err != nil {
		return s, err
	}
	defer pub.close()
	warm, err := requestMsg(mm2Body(tag+"-warmup", 1), tag+"-warmup")
	if err != nil {
		return s, err
	}
	if err := pub.publish(ctx, warm); err != nil {
		return s, fmt.Errorf("warm-up: %w", err)
	}
	if err := checkResults(w.wait(ctx, []string{tag + "-warmup"}, 30*time.Second), 1); err != nil {
		return s, fmt.Errorf("warm-up: %w", err)
	}
	msgs := make([]kafka.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		ids[i] = fmt.Sprintf("%s-%d", tag, i)
		if msgs[i], err = requestMsg(mm2Body(ids[i], 10), ids[i]); err != nil {
			return s, err
		}
	}
	if _, err := a.mark(ctx); err != nil {
		return s, err
	}
	clocks := [3]*cpuClock{startCPU(a.cmd.Process.Pid), startCPU(e.brokerPID), startCPU(os.Getpid())}
	t0 := time.Now()
	if err := pub.publishAll(ctx, msgs); err != nil {
		return s, fmt.Errorf("publish %d requests: %w", n, err)
	}
	got := w.wait(ctx, ids, budget)
	for i, c := range clocks {
		s.cpu[i] = c.elapsed() / time.Duration(max(len(got), 1))
	}
	_, _, objects, bytes, err := a.peakAllocs(ctx)
	if err != nil {
		return s, err
	}
	s.objects, s.bytes = float64(objects)/float64(max(len(got), 1)), float64(bytes)/float64(max(len(got), 1))
	if len(got) == 0 {
		return s, fmt.Errorf("no result within %s", budget)
	}
	for id, r := range got {
		if err := checkResults(map[string]resultInfo{id: r}, 1); err != nil {
			return s, err
		}
	}
	s.lat = make([]time.Duration, 0, len(got))
	var last time.Time
	for _, r := range got {
		s.lat = append(s.lat, r.at.Sub(t0))
		if r.at.After(last) {
			last = r.at
		}
	}
	s.rate = float64(len(got)) / last.Sub(t0).Seconds()
	return s, nil
}

// manyScenario measures 2,000 connectors at once against one at a time.
func manyScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "3 many"
	n := e.scaled(2000, 40)
	// The agent as shipped: its default concurrency (OFFSETAGENT_CONCURRENCY) and request
	// topic partitions.
	defaults, err := agentDefaults(ctx)
	if err != nil {
		return nil, err
	}
	many, err := e.manyRun(ctx, "many", n, defaults.Concurrency, defaults.RequestTopicPartitions, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	e.progress("many: %d of %d results, %.0f req/s", len(many.lat), n, many.rate)
	if len(many.lat) < n {
		return nil, fmt.Errorf("only %d of %d results within the budget", len(many.lat), n)
	}
	serial, err := e.manyRun(ctx, "serial", n, 1, 1, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	e.progress("serial: %d of %d results, %.0f req/s", len(serial.lat), n, serial.rate)
	rows := []row{
		ratioRow(sc, fmt.Sprintf("%d connectors x 10 offsets (requests/s)", n), many.rate, serial.rate, "%.1f", ">=", 8),
		ratioRow(sc, "p50 publish->result (ms)", ms(percentile(many.lat, 0.5)), ms(percentile(serial.lat, 0.5)), "%.0f", "", 0),
		ratioRow(sc, "p99 publish->result (ms)", ms(percentile(many.lat, 0.99)), ms(percentile(serial.lat, 0.99)), "%.0f", "", 0),
	}
	for i, who := range []string{"the agent's process", "the broker", "the driver"} {
		rows = append(rows, ratioRow(sc, fmt.Sprintf("CPU per request of %s (us)", who),
			float64(many.cpu[i])/float64(time.Microsecond), float64(serial.cpu[i])/float64(time.Microsecond), "%.0f", "", 0))
	}
	rows = append(rows,
		ratioRow(sc, "agent's heap allocations per request (objects)", many.objects, serial.objects, "%.0f", "", 0),
		ratioRow(sc, "agent's heap allocations per request (bytes)", many.bytes, serial.bytes, "%.0f", "", 0))
	return rows, nil
}

// foreignRecord is the i-th record of another connector in a pre-filled offsets topic: 1,000
// connectors, half MM2-shaped and half FileStream-shaped.
func foreignRecord(i int) (key, value []byte) {
	c := i % 1000
	if c%2 == 0 {
		return fmt.Appendf(nil, `["other-%04d",{"cluster":"src","partition":%d,"topic":"t-%d"}]`, c, i%100, i),
			fmt.Appendf(nil, `{"offset":%d}`, i)
	}
	return fmt.Appendf(nil, `["other-%04d",{"filename":"/data/file-%08d.txt"}]`, c, i),
		fmt.Appendf(nil, `{"position":%d}`, i)
}

// fill writes n records to the 25-partition offsets topic in blocks of ten: nine new keys,
// then a tombstone for the block's first key. It returns the live keys and their average
// key+value size.
func (e *env) fill(ctx context.Context, topic string, n int) (live int, avgKV float64, err error) {
	w := bareWriter(e.brokers, topic)
	defer w.Close()
	const chunk = 50_000
	var liveBytes int
	batch := make([]kafka.Message, 0, chunk)
	for i := 0; i < n; i++ {
		block, j := i/10, i%10
		var m kafka.Message
		if j == 9 {
			m.Key, _ = foreignRecord(block * 9) // the block's first key: tombstoned
		} else {
			m.Key, m.Value = foreignRecord(block*9 + j)
			if j > 0 {
				live++
				liveBytes += len(m.Key) + len(m.Value)
			}
		}
		if j == 0 && i+9 >= n { // the block's tombstone will not be written: the key stays live
			live++
			liveBytes += len(m.Key) + len(m.Value)
		}
		m.Partition = offsetstore.PartitionFor(m.Key, 25)
		batch = append(batch, m)
		if len(batch) == chunk || i == n-1 {
			if err := w.WriteMessages(ctx, batch...); err != nil {
				return 0, 0, fmt.Errorf("fill %q: %w", topic, err)
			}
			batch = batch[:0]
		}
	}
	if live == 0 {
		return 0, 0, nil
	}
	return live, float64(liveBytes) / float64(live), nil
}

// fillOffsetsTopic creates Connect's topics and fills the offsets topic with n records (see
// fill).
func (e *env) fillOffsetsTopic(ctx context.Context, configTopic, offsetsTopic string, n int) (live int, avgKV float64, err error) {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: e.brokers}) // the bench's brokers know no users
	cl.Timeout = 30 * time.Second
	if err := offsetstore.CheckConnectTopics(ctx, cl, configTopic, offsetsTopic, true); err != nil {
		return 0, 0, fmt.Errorf("create Connect topics: %w", err)
	}
	t := time.Now()
	if live, avgKV, err = e.fill(ctx, offsetsTopic, n); err != nil {
		return 0, 0, err
	}
	e.progress("filled %d records (%d live keys, %.0f B each) in %s", n, live, avgKV, time.Since(t))
	return live, avgKV, nil
}

// rawConsume times 25 plain kafka-go Readers reading the whole topic in parallel.
func (e *env) rawConsume(ctx context.Context, topic string) (time.Duration, int, error) {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: e.brokers}) // the bench's brokers know no users
	cl.Timeout = 30 * time.Second
	reqs := make([]kafka.OffsetRequest, 25)
	for p := range reqs {
		reqs[p] = kafka.LastOffsetOf(p)
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, 0, fmt.Errorf("list offsets of %q: %w", topic, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	total := 0
	t0 := time.Now()
	for _, po := range lo.Topics[topic] {
		end := po.LastOffset
		if end <= 0 {
			continue
		}
		total += int(end)
		wg.Go(func() {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: topic, Partition: po.Partition,
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				if m.Offset+1 >= end {
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, fmt.Errorf("raw consume %q: %w", topic, firstErr)
	}
	return time.Since(t0), total, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// flatScenario measures the cost of a request and of start-up with an
// offsets topic full of other connectors' records.
func flatScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "4 flat"
	n := e.scaled(1_000_000, 2000)
	samples := e.scaled(200, 20)

	empty, err := e.startAgent(ctx, e.config("flat-empty"), nil)
	if err != nil {
		return nil, err
	}
	emptyLat, err := e.singleLatencies(ctx, empty, "flat-empty", samples, 60*time.Second)
	h0 := liveHeap()
	empty.stop()
	if err != nil {
		return nil, fmt.Errorf("empty topic: %w", err)
	}

	cfg := e.config("flat-full")
	live, avgKV, err := e.fillOffsetsTopic(ctx, cfg.ConfigTopic, cfg.OffsetsTopic, n)
	if err != nil {
		return nil, err
	}
	// The machine is shared: both loads are timed three times, interleaved, and the best of
	// each is compared.
	const tries = 3
	var raw, viewReady time.Duration
	var total int
	var full *runningAgent
	for i := range tries {
		d, n, err := e.rawConsume(ctx, cfg.OffsetsTopic)
		if err != nil {
			return nil, err
		}
		if raw == 0 || d < raw {
			raw, total = d, n
		}
		c := cfg
		c.GroupID = fmt.Sprintf("%s-%d", cfg.GroupID, i)
		stopProfile := func() {}
		if i == 0 {
			if stopProfile, err = e.startProfile("flat"); err != nil {
				return nil, err
			}
		}
		a, err := e.startAgent(ctx, c, nil)
		stopProfile()
		if err != nil {
			return nil, err
		}
		e.progress("raw consume of %d records: %s; agent views loaded after %s, ready after %s", n, d, a.viewReady, a.ready)
		if viewReady == 0 || a.viewReady < viewReady {
			viewReady = a.viewReady
		}
		if i < tries-1 {
			a.stop()
			continue
		}
		full = a
	}
	defer full.stop()
	fullLat, err := e.singleLatencies(ctx, full, "flat-full", samples, 60*time.Second)
	if err != nil {
		return nil, fmt.Errorf("full topic: %w", err)
	}
	h1 := liveHeap()
	perKey := (float64(h1) - float64(h0)) / float64(max(live, 1))
	overhead := perKey - avgKV
	ok := overhead <= 200
	return []row{
		ratioRow(sc, fmt.Sprintf("p50 single request, %d records vs empty (ms)", n),
			ms(percentile(fullLat, 0.5)), ms(percentile(emptyLat, 0.5)), "%.2f", "<=", 1.5),
		// Information: scenario 6 holds the load's target, against a franz-go consumer.
		ratioRow(sc, "view start-up load vs kafka-go raw readers (records/s)",
			float64(total)/viewReady.Seconds(), float64(total)/raw.Seconds(), "%.0f", "", 0),
		ratioRow(sc, "agent start->Ready vs raw read time, last try (s)", full.ready.Seconds(), raw.Seconds(), "%.2f", "", 0),
		{scenario: sc, figure: fmt.Sprintf("heap per live key above key+value, %d keys (B)", live),
			value: fmt.Sprintf("%.0f", overhead), baseline: fmt.Sprintf("%.0f (key+value)", avgKV),
			ratio: nanRatio(), ratioLo: nanRatio(), ratioHi: nanRatio(), cpu: nanRatio(), cpuLo: nanRatio(), cpuHi: nanRatio(), target: "<= 200 B", pass: &ok},
	}, nil
}
