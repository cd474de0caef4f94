package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/race"
)

// peakRSS returns a process's peak resident set size (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// OFFSETAGENT_MAX_INFLIGHT_BYTES bounds what the agent holds, the records it has fetched and
// not yet processed and what their requests hold while they are processed included: with
// twenty requests of 5 MiB each (dry runs of 61,300 MirrorMaker 2 offsets each, so that the
// offsets view does not grow) on six partitions, the process's peak RSS stays under 256 MiB
// without GOMEMLIMIT, at a bound of 16 MiB (one such request at a time, the case make test runs) and at
// 64 MiB (three at a time), and every request is answered. The requests wait in the topic
// before the agent starts, or are published all at once to an agent that is running; and the
// machine is idle, or busy: a sibling process burns every core for the whole run, so that
// the agent's garbage collector gets a share of the CPU, not the CPU. The memory model of
// docs/operations.md comes from these runs.
func TestMemoryBoundedByInflightBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; writes 1.2 million offsets")
	}
	if race.Enabled {
		// The agent process is built without it either way; the test's own broker under it
		// took 141 s to serve the 1.2 million offsets on a busy machine.
		t.Skip("measures an agent process's memory: make test runs it without the race detector")
	}
	tests := []struct {
		name   string
		bound  int
		create bool // create the connectors (their offsets stay in the offsets view), not dry runs
		// running publishes the requests to a running agent at once, as one producer does
		// (offsetagent publish's settings: snappy batches of up to 17 MiB, three requests
		// each), not one record per batch before the agent starts.
		running bool
		busy    bool // burn every core in a sibling process while the agent works
		// matrix: run only with OFFSETAGENT_TEST_MEMORY_MATRIX=1 (make test-memory); make test
		// runs the 16 MiB case (dry runs published at once) without the CPU burner: make
		// test runs the real-Kafka tier's JVMs beside it, and a burner on top of them starves
		// every package of the run (the busy case stays in make test-memory).
		matrix bool
	}{
		{name: "16 MiB, backlog, idle machine", bound: 16 << 20, matrix: true},
		{name: "16 MiB, backlog, busy machine", bound: 16 << 20, busy: true, matrix: true},
		{name: "16 MiB, published at once, idle machine", bound: 16 << 20, running: true},
		{name: "16 MiB, published at once, busy machine", bound: 16 << 20, running: true, busy: true, matrix: true},
		{name: "16 MiB, creations published at once, busy machine", bound: 16 << 20, create: true, running: true, busy: true, matrix: true},
		{name: "64 MiB, backlog, idle machine", bound: 64 << 20, matrix: true},
		{name: "64 MiB, published at once, busy machine", bound: 64 << 20, running: true, busy: true, matrix: true},
	}
	matrix := os.Getenv("OFFSETAGENT_TEST_MEMORY_MATRIX") == "1"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.matrix && !matrix {
				t.Skip("OFFSETAGENT_TEST_MEMORY_MATRIX=1 (make test-memory) runs it")
			}
			peak := runLargeRequests(t, tt.bound, tt.create, tt.running, tt.busy)
			require.Less(t, peak, int64(256<<20), "peak RSS")
		})
	}
}

// largeRequests is the load the memory bound is proven under: twenty requests of 5 MiB of
// MirrorMaker 2 offsets (61,300 offsets make a body of 5 MiB and 7 KiB).
const largeRequests, largeRequestOffsets = 20, 61_300

// runLargeRequests publishes twenty dry-run requests of 5 MiB on six partitions and runs the
// agent binary with OFFSETAGENT_MAX_INFLIGHT_BYTES bound and no GOMEMLIMIT until every request
// is answered; it returns the process's peak RSS. With running, the agent starts first and
// answers a small request before the twenty are published at once; with busy, a sibling
// process burns every core from before the agent starts until it is stopped.
func runLargeRequests(t *testing.T, bound int, create, running, busy bool) int64 {
	t.Helper()
	c := crashCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 6
	cl := newFreshClient(t, cfg)
	createTopicWith(t, cl, cfg.RequestTopic, 6, map[string]string{"max.message.bytes": fmt.Sprint(cfg.MaxRequestBytes + 1<<20)})
	seedConnectTopics(t, cl, cfg)

	var ids []string
	var msgs []kafka.Message
	for i := range largeRequests {
		body := mm2Body(fmt.Sprintf("mem-%02d", i), largeRequestOffsets)
		require.InDelta(t, 5<<20+32<<10, len(body), 32<<10, "a request of 5 MiB")
		id := uuid.NewString()
		msg, err := events.RequestMessage(cfg.RequestTopic, body, events.RequestOptions{ID: id, Source: "/memory-test", DryRun: !create})
		require.NoError(t, err)
		msg.Topic = ""
		msgs = append(msgs, msg)
		ids = append(ids, id)
	}
	// One writer, one record per batch (uncompressed), a bound generous enough for a busy
	// machine (the in-process broker checks 100 MiB of records under the race detector); or,
	// published at once, offsetagent publish's batches.
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Balancer: &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1, BatchBytes: 32 << 20,
		Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}
	if running {
		w.BatchSize, w.BatchBytes, w.Compression = 100, int64(cfg.MaxRequestBytes)+1<<20, kafka.Snappy
	}
	t.Cleanup(func() { _ = w.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// publish writes the twenty at once: one call, the writer sends each partition's batches
	// side by side.
	publish := func() {
		require.NoError(t, w.WriteMessages(ctx, msgs...))
		msgs = nil
	}
	if !running {
		publish()
	}

	if busy {
		burnCPU(t, 5*time.Minute)
	}
	cmd := exec.Command(plainAgentBinary(t), "run")
	// No GOMEMLIMIT: the bound alone must keep the process small (processEnv passes no GO*
	// variable of the test's environment either).
	cmd.Env = append(processEnv(cfg, ""), fmt.Sprintf("OFFSETAGENT_MAX_INFLIGHT_BYTES=%d", bound))
	p := startAgentProcess(t, cmd)

	want := largeRequests
	if running {
		// A small request answered: the agent has joined and polls every partition.
		id := uuid.NewString()
		msg, err := events.RequestMessage(cfg.RequestTopic, mm2Body("mem-ready", 10), events.RequestOptions{ID: id, Source: "/memory-test", DryRun: true})
		require.NoError(t, err)
		msg.Topic = ""
		require.NoError(t, w.WriteMessages(ctx, msg))
		cl.waitResult(id, 2*time.Minute)
		publish()
		want++
	}

	start := time.Now()
	results := cl.waitResults(want, 5*time.Minute)
	elapsed := time.Since(start)
	peak := peakRSS(t, cmd.Process.Pid)
	t.Logf("%d requests of %d offsets answered in %s; peak RSS %.0f MiB", largeRequests, largeRequestOffsets, elapsed, float64(peak)/(1<<20))
	byID := map[string]result{}
	for _, r := range results {
		byID[r.Data.RequestID] = r
	}
	wantType := events.TypeCreatePlanned
	if create {
		wantType = events.TypeCreateSucceeded
	}
	for _, id := range ids {
		require.Equal(t, wantType, byID[id].Type, byID[id].Data.Message)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", p.out)
	return peak
}

// cpuBurnerEnv makes the test binary a CPU burner (TestCPUBurner) for the duration it holds.
const cpuBurnerEnv = "OFFSETAGENT_TEST_CPU_BURNER"

// burnCPU runs this test binary as a sibling process that keeps every core busy (four spinning
// threads per core, so that the agent's threads get about a fifth of the machine) until the test
// ends or for at most d, whichever comes first.
func burnCPU(t *testing.T, d time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUBurner$", "-test.count=1")
	cmd.Env = append(os.Environ(), cpuBurnerEnv+"="+d.String())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// TestCPUBurner is burnCPU's sibling process: it is skipped unless cpuBurnerEnv holds how long
// to burn.
func TestCPUBurner(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(cpuBurnerEnv))
	if err != nil {
		t.Skip("a CPU burner for burnCPU only")
	}
	threads := 4 * runtime.NumCPU()
	runtime.GOMAXPROCS(threads)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			x := uint64(1)
			for time.Now().Before(deadline) {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}
	wg.Wait()
}

// createTopicWith creates a topic with configs.
func createTopicWith(t *testing.T, cl *client, topic string, partitions int, configs map[string]string) {
	t.Helper()
	var entries []kafka.ConfigEntry
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}}})
	require.NoError(t, err)
	require.NoError(t, res.Errors[topic])
}
