package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/agent"
)

// The bulk scenario runs the agent in a child process of this binary, so that its memory
// figure is the agent's heap alone: the driver's copy of a 9.4 MiB request (and its producer
// buffers) would otherwise sit in the same heap and raise the garbage collector's goal.
//
// The child reads the agent's configuration as one JSON line on stdin, prints "ready" once the
// agent is, and then answers commands, one per line:
//
//	mark  collect garbage, note the live heap, start sampling the peak (and the CPU profile);
//	      prints "idle <bytes>"
//	peak  stop sampling; prints "peak <bytes> <live bytes> <objects> <allocated bytes>": the
//	      largest heap in use and the largest heap a garbage collection found reachable, and
//	      the heap objects and bytes allocated since mark
//	sync  wait until the agent's offsets view has read its topic to the end; prints "synced"
//
// Closing stdin stops the agent and the child. With a CPU profile, the child also writes the
// allocations of its marked phase (sampled every 32 KiB) to the profile's name with ".mem", and
// its block and mutex profiles (every event) with ".block" and ".mutex".

// serveAgent is the child's side.
// waitReady waits up to 2 minutes for a to be ready; false if it stopped or did not get there.
func waitReady(a *agent.Agent, done <-chan error, stderr io.Writer) bool {
	deadline := time.Now().Add(2 * time.Minute)
	for !a.Ready() {
		select {
		case err := <-done:
			fmt.Fprintf(stderr, "offsetagent-bench agent: stopped before it was ready: %v\n", err)
			return false
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(stderr, "offsetagent-bench agent: not ready within 2m")
			return false
		}
	}
	return true
}

func serveAgent(stdin io.Reader, stdout, stderr io.Writer, cpuProfile string, noop bool) int {
	if cpuProfile != "" {
		runtime.MemProfileRate = 32 << 10
	}
	in := bufio.NewReader(stdin)
	cfg, err := readAgentConfig(in)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench agent: %v\n", err)
		return 1
	}
	opts := agent.Options{Version: "bench"}
	if noop {
		opts.Stages = noopStages{}
	}
	a, err := agent.New(cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench agent: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	if !waitReady(a, done, stderr) {
		return 1
	}
	fmt.Fprintln(stdout, "ready")

	ph := &markedPhase{cpuProfile: cpuProfile}
	for {
		cmd, err := in.ReadString('\n')
		if err != nil {
			break // stdin closed: stop
		}
		switch strings.TrimSpace(cmd) {
		case "mark":
			ph.mark(stdout, stderr)
		case "peak":
			ph.peak(stdout)
		case "sync":
			syncOffsets(ctx, a, cfg.OffsetsTopic, stdout, stderr)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	return 0
}

// readAgentConfig reads the agent's configuration, one line of JSON.
func readAgentConfig(in *bufio.Reader) (agent.Config, error) {
	var cfg agent.Config
	line, err := in.ReadString('\n')
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal([]byte(line), &cfg); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// markedPhase is the phase of the run between "mark" and "peak": its heap sampler and, with
// cpuProfile, its CPU, block and mutex profiles.
type markedPhase struct {
	cpuProfile string
	sampler    *peakSampler
	profile    *os.File
	// objects and bytes are the heap's allocations at mark.
	objects, bytes uint64
}

// mark starts the phase: it writes the idle live heap.
func (ph *markedPhase) mark(stdout, stderr io.Writer) {
	idle := liveHeap()
	if ph.cpuProfile != "" {
		var err error
		if ph.profile, err = os.Create(ph.cpuProfile); err == nil {
			err = pprof.StartCPUProfile(ph.profile)
		}
		if err != nil {
			fmt.Fprintf(stderr, "offsetagent-bench agent: CPU profile: %v\n", err)
		}
		// What the goroutines waited on meanwhile: every blocking event and every contended
		// lock (written beside the CPU profile, ".block" and ".mutex").
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
	}
	ph.sampler = samplePeak()
	ph.objects, ph.bytes = heapAllocs()
	fmt.Fprintf(stdout, "idle %d\n", idle)
}

// peak ends the phase: it writes the peak and live heap it saw.
func (ph *markedPhase) peak(stdout io.Writer) {
	var peak, live uint64
	objects, bytes := heapAllocs()
	if ph.sampler != nil {
		peak = ph.sampler.finish()
		live = ph.sampler.live.Load()
		ph.sampler = nil
	}
	if ph.profile != nil {
		if f, err := os.Create(ph.cpuProfile + ".mem"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
		for _, name := range []string{"block", "mutex"} {
			if f, err := os.Create(ph.cpuProfile + "." + name); err == nil {
				_ = pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
		}
		pprof.StopCPUProfile()
		_ = ph.profile.Close()
		ph.profile = nil
	}
	fmt.Fprintf(stdout, "peak %d %d %d %d\n", peak, live, objects-ph.objects, bytes-ph.bytes)
}

// heapAllocs returns the heap objects and bytes allocated so far.
func heapAllocs() (objects, bytes uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// syncOffsets reads the offsets topic to its end into the agent's store.
func syncOffsets(ctx context.Context, a *agent.Agent, topic string, stdout, stderr io.Writer) {
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	if err := a.Store().Sync(sctx, topic); err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench agent: sync: %v\n", err)
	}
	scancel()
	fmt.Fprintln(stdout, "synced")
}

// agentProc is the driver's handle on an agent child process.
type agentProc struct {
	*child
	cfg     agent.Config
	watcher *resultWatcher
}

// startAgentProcess starts an agent child with cfg (and a CPU profile of its marked phase when
// cpuProfile is set; with noop, stages that answer at once) and waits until it is ready, then
// watches its result topic.
func (e *env) startAgentProcess(ctx context.Context, cfg agent.Config, cpuProfile string, noop bool) (*agentProc, error) {
	p, err := startAgentChild(ctx, cfg, cpuProfile, noop)
	if err != nil {
		return nil, err
	}
	if p.watcher, err = watchResults(ctx, e.brokers, cfg.ResultTopic, cfg.RequestTopicPartitions, e.opts.verbose); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// startAgentChild starts an agent child with cfg and waits until it is ready; its results are
// not watched.
func startAgentChild(ctx context.Context, cfg agent.Config, cpuProfile string, noop bool) (*agentProc, error) {
	args := []string{"-agent"}
	if noop {
		args = append(args, "-noop")
	}
	if cpuProfile != "" {
		args = append(args, "-cpuprofile", cpuProfile)
	}
	c, err := startChild("agent", args...)
	if err != nil {
		return nil, err
	}
	p := &agentProc{child: c, cfg: cfg}
	b, err := json.Marshal(cfg)
	if err == nil {
		_, err = fmt.Fprintf(p.stdin, "%s\n", b)
	}
	if err == nil {
		err = p.expect(ctx, "ready")
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// expect reads the child's next line, which must start with word; ns get the numbers after it.
func (p *agentProc) expect(ctx context.Context, word string, ns ...*uint64) error {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			return fmt.Errorf("agent process: %w", a.err)
		}
		fields := strings.Fields(a.line)
		if len(fields) == 0 || fields[0] != word {
			return fmt.Errorf("agent process: want %q, got %q", word, a.line)
		}
		if len(fields) < 1+len(ns) {
			return fmt.Errorf("agent process: %q: want %d numbers", a.line, len(ns))
		}
		for i, n := range ns {
			v, err := strconv.ParseUint(fields[1+i], 10, 64)
			if err != nil {
				return fmt.Errorf("agent process: %q: %w", a.line, err)
			}
			*n = v
		}
		return nil
	case <-time.After(3 * time.Minute):
		return errors.New("agent process: no answer in 3m")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mark starts the child's peak sampling and returns its idle live heap.
func (p *agentProc) mark(ctx context.Context) (uint64, error) {
	var idle uint64
	if _, err := io.WriteString(p.stdin, "mark\n"); err != nil {
		return 0, fmt.Errorf("agent process: %w", err)
	}
	return idle, p.expect(ctx, "idle", &idle)
}

// peak stops the child's sampling and returns the largest heap in use it saw since mark and
// the largest heap a collection found reachable.
func (p *agentProc) peak(ctx context.Context) (heap, live uint64, err error) {
	heap, live, _, _, err = p.peakAllocs(ctx)
	return heap, live, err
}

// peakAllocs is peak with the heap objects and bytes the child allocated since mark.
func (p *agentProc) peakAllocs(ctx context.Context) (heap, live, objects, bytes uint64, err error) {
	if _, err := io.WriteString(p.stdin, "peak\n"); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("agent process: %w", err)
	}
	err = p.expect(ctx, "peak", &heap, &live, &objects, &bytes)
	return heap, live, objects, bytes, err
}

// sync waits until the child's offsets view has read the topic to its end: the records a
// request wrote are then in it, however the view got them.
func (p *agentProc) sync(ctx context.Context) error {
	if _, err := io.WriteString(p.stdin, "sync\n"); err != nil {
		return fmt.Errorf("agent process: %w", err)
	}
	return p.expect(ctx, "synced")
}

// stop closes the watcher and the child's stdin and waits for it (killing it after 30 s).
func (p *agentProc) stop() {
	if p.watcher != nil {
		p.watcher.close()
	}
	p.child.stop(30 * time.Second)
}
