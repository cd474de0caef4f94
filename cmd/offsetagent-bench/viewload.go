package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The view scenario loads a big offsets topic in child processes of this binary, one load per
// process, so that the process's resident memory holds that load alone: the store's offsets view
// (-load view) or a plain franz-go consumer reading the same topic and keeping nothing (-load
// franz). The child reads "brokers topic config-topic" from stdin, loads, and prints one line:
// the load's wall time, records read, and VmRSS before the load, after it, and after a forced
// collection that returns freed memory to the system (see loadResult).

// loadResult is one child's answer.
type loadResult struct {
	wall    time.Duration
	records int64
	// rss0 is VmRSS before the load; rssLoaded right after it (garbage not yet collected
	// included); rssLive after runtime.GC and debug.FreeOSMemory, what the load keeps.
	rss0, rssLoaded, rssLive uint64
	// cpu is the child's CPU time during the load; brokerCPU the embedded broker's while the
	// child ran (0 for a broker that is not the bench's child).
	cpu, brokerCPU time.Duration
}

// vmRSS reads this process's resident set size from /proc/self/status, in bytes.
func vmRSS() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read VmRSS: %w", err)
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest))
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("read VmRSS: unexpected %q", line)
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read VmRSS: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("read VmRSS: no VmRSS line")
}

// settledRSS collects garbage, returns freed memory to the system and reads VmRSS.
func settledRSS() (uint64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	return vmRSS()
}

// serveLoad is the child side: which is "view" or "franz".
func serveLoad(which, cpuProfile string, stdin io.Reader, stdout, stderr io.Writer) int {
	line, err := bufio.NewReader(stdin).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 {
		fmt.Fprintf(stderr, "load child: want \"brokers topic config-topic\" on stdin, got %q (%v)\n", line, err)
		return 2
	}
	brokers, topic, configTopic := strings.Split(f[0], ","), f[1], f[2]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var res loadResult
	if res.rss0, err = settledRSS(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var keep any // what the load keeps alive until the last RSS reading
	stopProfile := func() {}
	if cpuProfile != "" {
		if stopProfile, err = startCPUProfile(cpuProfile); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	cpu0 := processCPU(os.Getpid())
	switch which {
	case "view":
		keep, res.wall, res.records, err = loadView(ctx, brokers, topic, configTopic)
	case "franz":
		res.wall, res.records, err = loadFranz(ctx, brokers, topic)
	default:
		err = fmt.Errorf("unknown load %q", which)
	}
	res.cpu = processCPU(os.Getpid()) - cpu0
	stopProfile()
	if err != nil {
		fmt.Fprintf(stderr, "load child: %v\n", err)
		return 1
	}
	if res.rssLoaded, err = vmRSS(); err == nil {
		res.rssLive, err = settledRSS()
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	runtime.KeepAlive(keep)
	fmt.Fprintf(stdout, "%d %d %d %d %d %d\n", res.wall, res.records, res.rss0, res.rssLoaded, res.rssLive, res.cpu)
	return 0
}

// startCPUProfile profiles this process's CPU to path until the returned func is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// loadView starts a Store on the topics and returns it once its initial load is complete,
// with the time from New to ready. The store keeps running (its context is ctx).
func loadView(ctx context.Context, brokers []string, topic, configTopic string) (*offsetstore.Store, time.Duration, int64, error) {
	t0 := time.Now()
	s, err := offsetstore.New(offsetstore.Options{Brokers: brokers, ConfigTopic: configTopic, OffsetsTopic: topic})
	if err != nil {
		return nil, 0, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	ready := make(chan error, 1)
	go func() { ready <- s.WaitReady(ctx) }()
	select {
	case err = <-ready:
	case err = <-done:
		if err == nil {
			err = errors.New("store stopped before ready")
		}
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("load view: %w", err)
	}
	wall := time.Since(t0)
	ends, err := kafkaio.ListOffsets(ctx, kafkaio.NewClient(kafkaio.Options{Brokers: brokers}), topic, 25, kafka.LastOffset)
	if err != nil {
		return nil, 0, 0, err
	}
	var n int64
	for _, e := range ends {
		n += e
	}
	return s, wall, n, nil
}

// loadFranz reads every partition of topic from its start to the end offsets seen at start
// with one franz-go client (its defaults), keeping nothing, and returns the time from
// creating the client to the last record.
func loadFranz(ctx context.Context, brokers []string, topic string) (time.Duration, int64, error) {
	t0 := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, 0, fmt.Errorf("franz-go client: %w", err)
	}
	defer cl.Close()
	// The end offsets, as the view reads them before loading (same kind of request).
	ends, err := kafkaio.ListOffsets(ctx, kafkaio.NewClient(kafkaio.Options{Brokers: brokers}), topic, 25, kafka.LastOffset)
	if err != nil {
		return 0, 0, err
	}
	left := 0
	var total int64
	for _, e := range ends {
		if e > 0 {
			left++
			total += e
		}
	}
	var n int64
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, 0, fmt.Errorf("franz-go poll: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Offset+1 == ends[r.Partition] {
				left--
			}
		})
	}
	return time.Since(t0), n, nil
}

// startLoad runs one load child and returns its answer.
func (e *env) startLoad(ctx context.Context, which, topic, configTopic, cpuProfile string) (loadResult, error) {
	var res loadResult
	args := []string{"-load", which}
	if cpuProfile != "" {
		args = append(args, "-cpuprofile", cpuProfile)
	}
	c, err := startChild("load", args...)
	if err != nil {
		return res, err
	}
	defer c.stop(10 * time.Second)
	broker := startCPU(e.brokerPID)
	if _, err := fmt.Fprintf(c.stdin, "%s %s %s\n", strings.Join(e.brokers, ","), topic, configTopic); err != nil {
		return res, fmt.Errorf("load child: %w", err)
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() { l, err := c.out.ReadString('\n'); ch <- answer{l, err} }()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if a.err != nil {
		return res, fmt.Errorf("%s load child: %w", which, a.err)
	}
	res.brokerCPU = broker.elapsed()
	var wall, cpu int64
	if _, err := fmt.Sscan(a.line, &wall, &res.records, &res.rss0, &res.rssLoaded, &res.rssLive, &cpu); err != nil {
		return res, fmt.Errorf("%s load child answered %q: %w", which, a.line, err)
	}
	res.wall, res.cpu = time.Duration(wall), time.Duration(cpu)
	return res, nil
}

// viewScenario measures the offsets view at scale: the resident memory each live key costs
// above its own bytes, and the start-up load against a plain franz-go consumer, in
// interleaved rounds of one child process per load.
func viewScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "6 view"
	n := e.scaled(1_250_000, 2500) // 8 live keys in every 10 records: 1M live keys at scale 1
	cfg := e.config("view")
	live, avgKV, err := e.fillOffsetsTopic(ctx, cfg.ConfigTopic, cfg.OffsetsTopic, n)
	if err != nil {
		return nil, err
	}
	rounds := e.opts.rounds
	var perKey, perKeyLoaded, viewRate, franzRate, cpuRatio []float64
	for i := range rounds {
		var view, franz loadResult
		first, second := "view", "franz"
		if i%2 == 1 {
			first, second = second, first
		}
		for _, which := range []string{first, second} {
			profile := ""
			if which == "view" && e.opts.profiled == "view" && e.opts.cpuProfile != "" {
				// One profile per round (path, path.2, ...): one load is too short for a
				// profile of its own to say much; pprof merges them.
				profile = e.opts.cpuProfile
				if i > 0 {
					profile = fmt.Sprintf("%s.%d", profile, i+1)
				}
			}
			r, err := e.startLoad(ctx, which, cfg.OffsetsTopic, cfg.ConfigTopic, profile)
			if err != nil {
				return nil, err
			}
			if r.records < int64(n) {
				return nil, fmt.Errorf("%s load read %d of %d records", which, r.records, n)
			}
			if which == "view" {
				view = r
			} else {
				franz = r
			}
		}
		perKey = append(perKey, (float64(view.rssLive)-float64(view.rss0))/float64(max(live, 1))-avgKV)
		perKeyLoaded = append(perKeyLoaded, (float64(view.rssLoaded)-float64(view.rss0))/float64(max(live, 1))-avgKV)
		viewRate = append(viewRate, float64(n)/view.wall.Seconds())
		franzRate = append(franzRate, float64(n)/franz.wall.Seconds())
		cpuRatio = append(cpuRatio, float64(franz.cpu+franz.brokerCPU)/float64(max(view.cpu+view.brokerCPU, 1)))
		e.progress("round %d: view load %s (CPU %s + broker %s), RSS %d -> %d (settled %d) MiB; franz-go %s (CPU %s + broker %s)",
			i+1, view.wall.Round(time.Millisecond), view.cpu.Round(time.Millisecond), view.brokerCPU.Round(time.Millisecond),
			view.rss0>>20, view.rssLoaded>>20, view.rssLive>>20, franz.wall.Round(time.Millisecond),
			franz.cpu.Round(time.Millisecond), franz.brokerCPU.Round(time.Millisecond))
	}
	med, lo, hi := medianRange(perKey)
	ok := med <= 200
	medL, loL, hiL := medianRange(perKeyLoaded)
	suffix := ""
	if rounds > 1 {
		suffix = fmt.Sprintf(", median of %d rounds", rounds)
	}
	return []row{
		{scenario: sc, figure: fmt.Sprintf("RSS per live key above key+value bytes, %d keys, after a forced GC (B)%s", live, suffix),
			value: fmt.Sprintf("%.0f (%.0f-%.0f)", med, lo, hi), baseline: fmt.Sprintf("%.0f (key+value)", avgKV),
			ratio: nanRatio(), ratioLo: nanRatio(), ratioHi: nanRatio(), cpu: nanRatio(), cpuLo: nanRatio(), cpuHi: nanRatio(), target: "<= 200 B", pass: &ok},
		{scenario: sc, figure: fmt.Sprintf("the same, right after the load, garbage not yet collected (B)%s", suffix),
			value: fmt.Sprintf("%.0f (%.0f-%.0f)", medL, loL, hiL), baseline: fmt.Sprintf("%.0f (key+value)", avgKV),
			ratio: nanRatio(), ratioLo: nanRatio(), ratioHi: nanRatio(), cpu: nanRatio(), cpuLo: nanRatio(), cpuHi: nanRatio(), target: "-"},
		loadRow(sc, n, viewRate, franzRate, cpuRatio),
	}, nil
}

// loadRow is the start-up load row: the wall ratio of the rates and the CPU ratio (franz-go's
// load over the view's, the embedded broker's CPU counted in both), whose medians must both
// meet the target.
func loadRow(sc string, n int, viewRate, franzRate, cpuRatio []float64) row {
	const limit = 0.7
	r := roundsRow(sc, fmt.Sprintf("view start-up load of %d records vs a franz-go consumer (records/s)", n),
		viewRate, franzRate, "%.0f", ">=", limit)
	r.cpu, r.cpuLo, r.cpuHi = medianRange(cpuRatio)
	ok := r.ratio >= limit && r.cpu >= limit
	r.pass = &ok
	return r
}
