package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The fleet scenario migrates a fleet of connectors (by default 7,000 FileStream sources with 1
// to 10 partitions each and 3,000 FileStream sinks with 12 partitions each) from Connect
// cluster A to Connect cluster B, each on an embedded broker of its own, as `offsetagent
// migrate --stop-source --verify` does it: A's REST API is connectsim over A's topics (every
// connector of the fleet), B's is connectsim over B's, and B has fleetAgents agents, each a
// child process. migrate itself runs in a child process of its own (serveFleetMigrate), so
// that its peak RSS (VmHWM) is migrate's alone; it counts the Kafka requests it sends to each
// cluster by wrapping its connections (a dial function in its kafka-go transports: the
// brokers cannot tell migrate's requests from the agents'), and the driver counts the calls
// to each REST API with a handler wrapper. The phases are timed from outside migrate, by the
// calls and requests each phase makes. While the verification reads B, the driver plays B's
// workers: it commits, for every connector, one offset past the one placed, so that each
// partition gets a verdict.
//
// The baseline is the agents' own burst rate in the same run: as many requests, for the same
// connectors' shapes, published at once to a fresh request topic of as many fresh agents.

// fleetAgents is the number of B's agents (child processes) in the fleet scenario.
const fleetAgents = 2

// fleetSinkTopics is the number of topics the sinks read (12 partitions each): sink i reads
// topic i mod fleetSinkTopics, so that B's broker does not hold one topic per sink.
const fleetSinkTopics = 50

// fleetSinkRecords is the records each sink-topic partition holds, on A and on B.
const fleetSinkRecords = 40

// fleetSpec sizes one fleet run.
type fleetSpec struct {
	sources, sinks int
	agents         int
	// concurrency is migrate's --concurrency, and waveSize its --wave-size (0: concurrency).
	concurrency, waveSize int
	// timeout is migrate's --timeout; verify its --verify.
	timeout, verify time.Duration
	// profile, when set, is the path migrate's child writes its CPU profile to (and its heap
	// profile, with ".heap").
	profile string
}

func (s fleetSpec) total() int { return s.sources + s.sinks }

// fleetScenario runs the fleet migration at BENCH_SCALE and reports its figures.
// BENCH_FLEET_WAVE_SIZE sets migrate's --wave-size (default: its --concurrency, 1,000), and
// BENCH_FLEET_AGENTS the number of B's agents (default fleetAgents).
func fleetScenario(ctx context.Context, e *env) (_ []row, err error) {
	spec := fleetSpec{sources: e.scaled(7000, 14), sinks: e.scaled(3000, 6), agents: fleetAgents,
		concurrency: 1000, timeout: 4 * time.Minute, verify: 2 * time.Minute}
	if v := os.Getenv("BENCH_FLEET_AGENTS"); v != "" {
		if spec.agents, err = strconv.Atoi(v); err != nil || spec.agents < 1 {
			return nil, fmt.Errorf("BENCH_FLEET_AGENTS %q: want a number of agents", v)
		}
	}
	if v := os.Getenv("BENCH_FLEET_WAVE_SIZE"); v != "" {
		if spec.waveSize, err = strconv.Atoi(v); err != nil || spec.waveSize < 0 {
			return nil, fmt.Errorf("BENCH_FLEET_WAVE_SIZE %q: want a number of connectors", v)
		}
	}
	if e.opts.cpuProfile != "" && e.opts.profiled == "fleet" {
		spec.profile = e.opts.cpuProfile
	}
	if len(e.opts.brokers) > 0 {
		// A and B would be one cluster (the sinks' groups on A would be those on B): said in
		// the table, not failed, so that the other scenarios run there.
		r := ratioRow("7 fleet", "not run: it needs two Kafka clusters, A and B (the embedded brokers, without OFFSETAGENT_BENCH_BROKERS)", 0, 0, "%.0f", "", 0)
		r.value, r.baseline = "-", "-"
		return []row{r}, nil
	}
	f, err := runFleet(ctx, e, spec)
	if err != nil {
		return nil, err
	}
	return f.rows(), nil
}

// fleetFigures is what one fleet run measured.
type fleetFigures struct {
	spec fleetSpec
	m    fleetChildReport
	// burst is the agents' own rate (results/s) for as many requests published at once.
	burst float64
	// restA and restB are the calls to A's and B's REST APIs, by method and route.
	restA, restB map[string]int
	// stops are A's stop calls, start and end (Unix ns); callsB every call to B's REST API;
	// statusA A's status calls, callsA every call to A's.
	stops, callsB, statusA, callsA []span
	// agentHWM is the largest VmHWM of B's agents (bytes).
	agentHWM uint64
	load     string
	// cpu is each process's CPU time, sampled through the migration.
	cpu *fleetCPU
}

// waveGap joins the requests and results of one wave: the gaps it leaves out are those where
// no request was in flight (the next wave was not stopped yet).
const waveGap = 500 * time.Millisecond

// span is a start and end time (Unix ns).
type span struct{ From, To int64 }

// busy is the time covered by spans, those less than join apart joined: how long a phase
// whose calls (or, as points, whose requests and results) are spans was at work, the pauses
// between waves (at least migrate's stable pause, 1 s) left out when join is below them.
func busy(spans []span, join time.Duration) time.Duration {
	if len(spans) == 0 {
		return 0
	}
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b span) int { return int(a.From - b.From) })
	var total int64
	cur := s[0]
	for _, x := range s[1:] {
		if x.From-cur.To <= int64(join) {
			cur.To = max(cur.To, x.To)
			continue
		}
		total += cur.To - cur.From
		cur = x
	}
	total += cur.To - cur.From
	return time.Duration(total)
}

// spanOf is the first start and last end of spans.
func spanOf(spans []span) span {
	if len(spans) == 0 {
		return span{}
	}
	out := spans[0]
	for _, s := range spans[1:] {
		out.From, out.To = min(out.From, s.From), max(out.To, s.To)
	}
	return out
}

func (s span) dur() time.Duration { return time.Duration(s.To - s.From) }

// rows are the figures of the table.
func (f *fleetFigures) rows() []row {
	const sc = "7 fleet"
	n := f.spec.total()
	m := f.m
	info := func(figure, value string) row {
		r := ratioRow(sc, figure, 0, 0, "%.0f", "", 0)
		r.value, r.baseline = value, "-"
		return r
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
	stops := spanOf(f.stops)
	pubs := spanOf(m.Publish)
	res := spanOf(m.Results)
	rows := []row{
		info(fmt.Sprintf("%d connectors (%d sources x 1-10 partitions, %d sinks x 12), %d agents, waves of %d: wall time", n, f.spec.sources, f.spec.sinks, f.spec.agents, cmp.Or(f.spec.waveSize, f.spec.concurrency)),
			sec(time.Duration(m.End-m.Start))),
		info("read A (start to A's last fetch before the first stop)", sec(time.Duration(m.ReadA-m.Start))),
		info("prechecks and hazards (A read to the first stop on A)", sec(time.Duration(stops.From-m.ReadA))),
		info("calls to B's REST API (validate): busy (first..last)", fmt.Sprintf("%s (%s), from %s after the start", sec(busy(f.callsB, 0)), sec(spanOf(f.callsB).dur()), sec(time.Duration(spanOf(f.callsB).From-m.Start)))),
		info("stop on A: busy (first..last stop)", fmt.Sprintf("%s (%s)", sec(busy(f.stops, 0)), sec(stops.dur()))),
		info("the first wave's stop (first stop on A -> first request)", sec(time.Duration(m.Publishing-stops.From))),
		info("publish to the request topic: within waves (first..last)", fmt.Sprintf("%s (%s), %d produce requests", sec(busy(m.Publish, waveGap)), sec(pubs.dur()), len(m.Publish))),
		info("results: within waves (first..last)", fmt.Sprintf("%s (%s)", sec(busy(m.Results, waveGap)), sec(res.dur()))),
		info("after the waves (last result -> end: verification, A's history, the reports)", sec(time.Duration(m.End-m.Finished))),
		info("verify the cutover (B read once per pass)", fmt.Sprintf("%s, verdicts %v; requests reading B's offsets topic: %v", sec(time.Duration(m.VerifyEnd-m.VerifyStart)), m.Verdicts, m.VerifyReads)),
		info("outcomes", fmt.Sprint(m.Outcomes)),
	}
	if m.Finished > m.Publishing {
		rate := float64(n) / time.Duration(m.Finished-m.Publishing).Seconds()
		rows = append(rows, ratioRow(sc, "first request -> last result, all waves (connectors/s) vs the agents' burst", rate, f.burst, "%.1f", ">=", 0.8))
	}
	if inFlight := busy(append(slices.Clone(m.Publish), m.Results...), waveGap); inFlight > 0 {
		rows = append(rows, ratioRow(sc, "the same, within waves: each wave's first request -> its last result (connectors/s)", float64(n)/inFlight.Seconds(), f.burst, "%.1f", "", 0))
	}
	rows = append(rows,
		ratioRow(sc, "whole run (connectors/s) vs the agents' burst", float64(n)/time.Duration(m.End-m.Start).Seconds(), f.burst, "%.1f", "", 0),
		ratioRow(sc, "peak RSS of migrate, child process VmHWM (MiB)", float64(m.HWM)/(1<<20), 512, "%.0f", "<=", 1),
		info("migrate's Go heap: peak in use, peak live", fmt.Sprintf("%.0f MiB, %.0f MiB", float64(m.HeapPeak)/(1<<20), float64(m.LivePeak)/(1<<20))),
		info("peak RSS of one agent, child process VmHWM", fmt.Sprintf("%.0f MiB", float64(f.agentHWM)/(1<<20))),
		info("B's REST API calls per connector", perConnector(f.restB, n)),
		info("B's broker requests per connector (migrate's)", perConnector(m.KafkaB, n)),
		info("A's REST API calls per connector", perConnector(f.restA, n)),
		info("A's broker requests per connector (migrate's)", perConnector(m.KafkaA, n)),
		info("load average at the start", f.load),
	)
	rows = append(rows, f.cpu.rows(info, "during the waves (first stop on A -> last result)", stops.From, m.Finished, n)...)
	if stops.To > stops.From {
		// How busy A's REST API was while the waves stopped their connectors: migrate's
		// client makes at most connectrest.MaxCalls calls at once; an average near it says
		// the stop barriers queue for it.
		var inCalls time.Duration
		for _, c := range f.callsA {
			from, to := max(c.From, stops.From), min(c.To, stops.To)
			if to > from {
				inCalls += time.Duration(to - from)
			}
		}
		avg := func(spans []span) string {
			if len(spans) == 0 {
				return "-"
			}
			var d time.Duration
			for _, s := range spans {
				d += time.Duration(s.To - s.From)
			}
			return fmt.Sprintf("%.2f ms", float64(d)/float64(len(spans))/float64(time.Millisecond))
		}
		rows = append(rows, info(fmt.Sprintf("A's REST API from the first stop to the last: calls in flight on average (at most %d), answer time of a stop, of a status", connectrest.MaxCalls),
			fmt.Sprintf("%.1f; %s; %s", inCalls.Seconds()/stops.dur().Seconds(), avg(f.stops), avg(f.statusA))))
	}
	return rows
}

// perConnector writes counts per connector, the total first, then the largest five kinds
// (Kafka requests by API, whatever their topics).
func perConnector(counts map[string]int, n int) string {
	total := 0
	type kv struct {
		k string
		v int
	}
	byKind := map[string]int{}
	for k, v := range counts {
		total += v
		kind, _, _ := strings.Cut(k, ":")
		byKind[kind] += v
	}
	var all []kv
	for k, v := range byKind {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return b.v - a.v })
	b := fmt.Sprintf("%.2f (%d)", float64(total)/float64(n), total)
	for i, x := range all {
		if i == 5 {
			break
		}
		b += fmt.Sprintf("; %s %.2f", strings.TrimPrefix(x.k, "PUT /connector-plugins/{class}"), float64(x.v)/float64(n))
	}
	return b
}

// fleetNames are the connectors' names: sources first.
func fleetName(spec fleetSpec, i int) string {
	if i < spec.sources {
		return fmt.Sprintf("src-%05d", i)
	}
	return fmt.Sprintf("sink-%05d", i-spec.sources)
}

// sourcePartitions is how many partitions source i has (1 to 10).
func sourcePartitions(i int) int { return 1 + (i*7)%10 }

// sinkTopic is the topic sink j reads.
func sinkTopic(j int) string { return fmt.Sprintf("fleet-in-%03d", j%fleetSinkTopics) }

// sinkOffset is the committed offset of sink j on A in partition p.
func sinkOffset(j, p int) int64 { return int64(1 + (j+p)%(fleetSinkRecords-2)) }

const (
	fileSourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
)

// fleetConfig is connector i's config record value on A.
func fleetConfig(spec fleetSpec, i int) []byte {
	name := fleetName(spec, i)
	if i < spec.sources {
		return fmt.Appendf(nil, `{"properties":{"connector.class":%q,"file":"/data/in-%05d.txt","topic":"lines","tasks.max":"1","name":%q}}`, fileSourceClass, i, name)
	}
	j := i - spec.sources
	return fmt.Appendf(nil, `{"properties":{"connector.class":%q,"file":"/data/out-%05d.txt","topics":%q,"tasks.max":"1","name":%q}}`, fileSinkClass, j, sinkTopic(j), name)
}

// sourceRecords are source i's offsets-topic records: fileFamily's first k offsets, their
// positions plus bump (1 for what B's worker commits after the placed ones).
func sourceRecords(name string, k int, bump int, partitions int) []kafka.Message {
	msgs := make([]kafka.Message, k)
	for j := range msgs {
		p, o := fileFamily.entry(j)
		if bump != 0 {
			pos, _ := strconv.Atoi(string(o[0].Value.(jsonvalue.Number)))
			o = jsonvalue.Map{{Key: "position", Value: jsonvalue.Number(strconv.Itoa(pos + bump))}}
		}
		key := offsetstore.AppendKey(nil, name, offsetstore.JavaHashMapOrder(p))
		msgs[j] = kafka.Message{Key: key, Value: offsetstore.AppendMapJSON(nil, o), Partition: offsetstore.PartitionFor(key, partitions)}
	}
	return msgs
}

// connectTopicPartitions is the offsets topic's partitions offsetstore.CheckConnectTopics
// and the agents create (Connect's default, 25).
const connectTopicPartitions = 25

// fillFleet writes A's Connect topics with the fleet, the sink topics (on A and B) and the
// sinks' committed offsets on A.
func fillFleet(ctx context.Context, spec fleetSpec, brokersA, brokersB []string, cfgA agent.Config) error {
	clA := kafkaio.NewClient(kafkaio.Options{Brokers: brokersA, Transport: freshTransport()})
	clA.Timeout = time.Minute
	if err := offsetstore.CheckConnectTopics(ctx, clA, cfgA.ConfigTopic, cfgA.OffsetsTopic, true); err != nil {
		return fmt.Errorf("A's Connect topics: %w", err)
	}
	for _, brokers := range [][]string{brokersA, brokersB} {
		cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers, Transport: freshTransport()})
		cl.Timeout = time.Minute
		var msgs []kafka.Message
		for t := range min(fleetSinkTopics, spec.sinks) {
			topic := sinkTopic(t)
			if err := kafkaio.EnsureTopic(ctx, cl, topic, 12, nil); err != nil {
				return fmt.Errorf("create %q: %w", topic, err)
			}
			for p := range 12 {
				for r := range fleetSinkRecords {
					msgs = append(msgs, kafka.Message{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "line %d", r)})
				}
			}
		}
		w := bareWriter(brokers, "")
		w.Topic = ""
		err := w.WriteMessages(ctx, msgs...)
		_ = w.Close()
		if err != nil {
			return fmt.Errorf("fill the sink topics: %w", err)
		}
	}
	configs := make([]kafka.Message, 0, spec.total())
	var offsets []kafka.Message
	for i := range spec.total() {
		name := fleetName(spec, i)
		configs = append(configs, kafka.Message{Key: []byte("connector-" + name), Value: fleetConfig(spec, i)})
		if i < spec.sources {
			offsets = append(offsets, sourceRecords(name, sourcePartitions(i), 0, connectTopicPartitions)...)
		}
	}
	for topic, msgs := range map[string][]kafka.Message{cfgA.ConfigTopic: configs, cfgA.OffsetsTopic: offsets} {
		w := bareWriter(brokersA, topic)
		err := w.WriteMessages(ctx, msgs...)
		_ = w.Close()
		if err != nil {
			return fmt.Errorf("fill %q: %w", topic, err)
		}
	}
	return commitSinks(ctx, spec, brokersA, 0)
}

// commitSinks commits every sink's offsets in its group connect-<name>, plus bump, with a
// bounded number of commits in flight.
func commitSinks(ctx context.Context, spec fleetSpec, brokers []string, bump int64) error {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers, Transport: freshTransport()})
	cl.Timeout = 30 * time.Second
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for j := range spec.sinks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			name := fleetName(spec, spec.sources+j)
			parts := make([]kafka.OffsetCommit, 12)
			for p := range parts {
				parts[p] = kafka.OffsetCommit{Partition: p, Offset: sinkOffset(j, p) + bump}
			}
			resp, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "connect-" + name, GenerationID: -1,
				Topics: map[string][]kafka.OffsetCommit{sinkTopic(j): parts}})
			if err == nil {
				for _, ps := range resp.Topics {
					for _, p := range ps {
						err = errors.Join(err, p.Error)
					}
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("commit group connect-%s: %w", name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// countingHandler counts the calls h answers, by method and route (the connector's name
// left out).
type countingHandler struct {
	h     http.Handler
	mu    sync.Mutex
	calls map[string]int
	// stops are the stop calls' spans, all every call's, byRoute every call's by route.
	stops, all []span
	byRoute    map[string][]span
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + routeOf(r.URL.Path)
	from := time.Now().UnixNano()
	c.h.ServeHTTP(w, r)
	to := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[route]++
	c.all = append(c.all, span{from, to})
	if c.byRoute == nil {
		c.byRoute = map[string][]span{}
	}
	c.byRoute[route] = append(c.byRoute[route], span{from, to})
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/stop") {
		c.stops = append(c.stops, span{from, to})
	}
}

// routeSpans are the spans of the calls to route.
func (c *countingHandler) routeSpans(route string) []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byRoute[route])
}

func (c *countingHandler) counts() (map[string]int, []span, []span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out, slices.Clone(c.stops), slices.Clone(c.all)
}

// routeOf is a REST path with the connector's name replaced by {name}.
func routeOf(path string) string {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	if len(seg) >= 2 && (seg[0] == "connectors" || seg[0] == "connector-plugins") {
		seg[1] = map[string]string{"connectors": "{name}", "connector-plugins": "{class}"}[seg[0]]
	}
	return "/" + strings.Join(seg, "/")
}

// serveSim runs connectsim over a cluster's Connect topics on 127.0.0.1 and returns its URL,
// its call counter and a function that stops it.
func serveSim(ctx context.Context, brokers []string, configTopic, offsetsTopic string) (string, *countingHandler, func(), error) {
	sim, err := connectsim.New(connectsim.Config{Topics: offsetstore.Options{Brokers: brokers, ConfigTopic: configTopic, OffsetsTopic: offsetsTopic}})
	if err != nil {
		return "", nil, nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- sim.Run(sctx) }()
	stopSim := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	if err := sim.WaitReady(wctx); err != nil {
		stopSim()
		return "", nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stopSim()
		return "", nil, nil, err
	}
	ch := &countingHandler{h: sim, calls: map[string]int{}}
	srv := &http.Server{Handler: ch, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), ch, func() { _ = srv.Close(); stopSim() }, nil
}

// vmHWM is a process's peak resident set (VmHWM) in bytes; 0 when unknown.
func vmHWM(pid string) uint64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// startAgents starts n agent children sharing cfg (one group).
func startAgents(ctx context.Context, cfg agent.Config, n int) ([]*agentProc, error) {
	var out []*agentProc
	for range n {
		p, err := startAgentChild(ctx, cfg, "", false)
		if err != nil {
			for _, q := range out {
				q.stop()
			}
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// fleetBody is the create request of connector i, as migrate builds it for B (the burst's).
func fleetBody(spec fleetSpec, i int, name string) []byte {
	if i < spec.sources {
		f := fileFamily
		f.config = fmt.Sprintf(`"file":"/data/in-%05d.txt","topic":"lines","tasks.max":"1"`, i)
		return f.body(name, sourcePartitions(i))
	}
	j := i - spec.sources
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":%q,"config":{"connector.class":%q,"file":"/data/out-%05d.txt","topics":%q,"tasks.max":"1"},"initial_offsets":[`, name, fileSinkClass, j, sinkTopic(j))
	for p := range 12 {
		if p > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, sinkTopic(j), p, sinkOffset(j, p))
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// fleetBurst publishes the fleet's requests at once to fresh agents on B and returns their
// results' rate.
func fleetBurst(ctx context.Context, e *env, spec fleetSpec, brokersB []string, defaults agent.Config) (float64, error) {
	cfg := e.config("fleet-burst")
	cfg.Brokers = brokersB
	cfg.Concurrency, cfg.RequestTopicPartitions = defaults.Concurrency, defaults.RequestTopicPartitions
	agents, err := startAgents(ctx, cfg, spec.agents)
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, a := range agents {
			a.stop()
		}
	}()
	w, err := watchResults(ctx, brokersB, cfg.ResultTopic, cfg.RequestTopicPartitions, false)
	if err != nil {
		return 0, err
	}
	defer w.close()
	pub := newPublisher(brokersB, cfg.RequestTopic)
	defer pub.Close()
	n := spec.total()
	msgs := make([]kafka.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		ids[i] = fmt.Sprintf("burst-%d", i)
		if msgs[i], err = requestMsg(fleetBody(spec, i, "burst-"+fleetName(spec, i)), ids[i]); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	if err := pub.WriteMessages(ctx, msgs...); err != nil {
		return 0, fmt.Errorf("publish %d requests: %w", n, err)
	}
	got := w.wait(ctx, ids, spec.timeout)
	if err := checkResults(got, n); err != nil {
		return 0, fmt.Errorf("burst: %w", err)
	}
	var last time.Time
	for _, r := range got {
		if r.at.After(last) {
			last = r.at
		}
	}
	return float64(n) / last.Sub(t0).Seconds(), nil
}

// runFleet runs the fleet scenario of spec on e's broker (A) and a second one (B).
func runFleet(ctx context.Context, e *env, spec fleetSpec) (*fleetFigures, error) {
	f := &fleetFigures{spec: spec, load: loadAverage()}
	if len(e.opts.brokers) > 0 {
		// A and B would be one cluster: the sinks' groups on A would be those on B.
		return nil, errors.New("the fleet scenario needs two Kafka clusters, A and B: it runs on the embedded brokers only (without OFFSETAGENT_BENCH_BROKERS)")
	}
	brokersA := e.brokers
	b, err := startBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer b.close()
	brokersB := []string{b.addr}
	defaults, err := agentDefaults(ctx)
	if err != nil {
		return nil, err
	}
	cfgA := e.config("fleet-a")
	if err := fillFleet(ctx, spec, brokersA, brokersB, cfgA); err != nil {
		return nil, err
	}
	e.progress("fleet: A holds %d connectors", spec.total())
	if f.burst, err = fleetBurst(ctx, e, spec, brokersB, defaults); err != nil {
		return nil, err
	}
	e.progress("fleet: the agents' burst: %.0f requests/s", f.burst)

	cfgB := e.config("fleet-b")
	cfgB.Brokers = brokersB
	cfgB.Concurrency, cfgB.RequestTopicPartitions = defaults.Concurrency, defaults.RequestTopicPartitions
	agents, err := startAgents(ctx, cfgB, spec.agents)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, a := range agents {
			a.stop()
		}
	}()
	var urlA, urlB string
	var restA, restB *countingHandler
	var stopA, stopB func()
	labelled(ctx, "A's REST API", func(ctx context.Context) {
		urlA, restA, stopA, err = serveSim(ctx, brokersA, cfgA.ConfigTopic, cfgA.OffsetsTopic)
	})
	if err != nil {
		return nil, fmt.Errorf("A's REST API: %w", err)
	}
	defer stopA()
	labelled(ctx, "B's REST API", func(ctx context.Context) {
		urlB, restB, stopB, err = serveSim(ctx, brokersB, cfgB.ConfigTopic, cfgB.OffsetsTopic)
	})
	if err != nil {
		return nil, fmt.Errorf("B's REST API: %w", err)
	}
	defer stopB()
	f.cpu = startFleetCPU()
	defer f.cpu.finish()
	f.cpu.add("the driver (A's and B's REST stand-ins)", os.Getpid())
	f.cpu.add("A's broker", e.brokerPID)
	f.cpu.add("B's broker (B's agents' requests too)", b.cmd.Process.Pid)
	for i, a := range agents {
		f.cpu.add(fmt.Sprintf("B's agent %d", i+1), a.cmd.Process.Pid)
	}
	stopProfile := func() {}
	if spec.profile != "" {
		stopProfile = startDriverProfile(spec.profile + ".driver")
	}
	e.progress("fleet: REST APIs of A (%s) and B (%s) ready; migrating", urlA, urlB)

	job := fleetJob{FromBrokers: brokersA, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic, FromURL: urlA,
		ToBrokers: brokersB, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic, ToConfigTopic: cfgB.ConfigTopic,
		ToOffsetsTopic: cfgB.OffsetsTopic, ToURL: urlB, Concurrency: spec.concurrency, Timeout: spec.timeout, Verify: spec.verify,
		WaveSize: spec.waveSize, StateTopic: e.name("fleet-states"), Profile: spec.profile}
	played := make(chan error, 1)
	m, err := runFleetChild(ctx, e, job, func(pid int) { f.cpu.add("migrate", pid) }, func() {
		// B's workers start the connectors and commit past the placed offsets.
		go func() { played <- playWorkersOfB(ctx, spec, brokersB, cfgB.OffsetsTopic) }()
	})
	stopProfile()
	f.cpu.finish()
	if err != nil {
		return nil, err
	}
	select {
	case err := <-played:
		if err != nil {
			return nil, fmt.Errorf("B's workers: %w", err)
		}
	case <-time.After(time.Minute):
		return nil, errors.New("B's workers: no commit within 1m (the verification never waited)")
	}
	f.m = m
	for _, a := range agents {
		f.agentHWM = max(f.agentHWM, vmHWM(strconv.Itoa(a.cmd.Process.Pid)))
	}
	f.restA, f.stops, f.callsA = restA.counts()
	f.statusA = restA.routeSpans("GET /connectors/{name}/status")
	f.restB, _, f.callsB = restB.counts()
	if m.Outcomes[string(apply.OutcomeSucceeded)] != spec.total() {
		return f, fmt.Errorf("migrate: outcomes %v, want %d succeeded; first failure: %s", m.Outcomes, spec.total(), m.FirstFailure)
	}
	return f, nil
}

// playWorkersOfB commits, as B's workers would once the connectors run, one offset past every
// placed one: a source's position plus one in B's offsets topic, a sink's offsets plus one in
// its group.
func playWorkersOfB(ctx context.Context, spec fleetSpec, brokersB []string, offsetsTopic string) error {
	var recs []kafka.Message
	for i := range spec.sources {
		recs = append(recs, sourceRecords(fleetName(spec, i), sourcePartitions(i), 1, connectTopicPartitions)...)
	}
	w := bareWriter(brokersB, offsetsTopic)
	err := w.WriteMessages(ctx, recs...)
	_ = w.Close()
	if err != nil {
		return fmt.Errorf("commit sources' offsets: %w", err)
	}
	return commitSinks(ctx, spec, brokersB, 1)
}

// fleetJob is what the driver hands migrate's child process.
type fleetJob struct {
	FromBrokers               []string
	ConfigTopic, OffsetsTopic string
	FromURL                   string
	ToBrokers                 []string
	RequestTopic, ResultTopic string
	ToConfigTopic             string
	ToOffsetsTopic            string
	ToURL                     string
	StateTopic                string
	Concurrency, WaveSize     int
	Timeout, Verify           time.Duration
	Profile                   string
}

// fleetChildReport is what migrate's child process measured; times are Unix ns.
type fleetChildReport struct {
	Start, End             int64
	Publishing, Finished   int64
	VerifyStart, VerifyEnd int64
	// ReadA is the end of A's last Kafka request before the first stop.
	ReadA int64
	// Publish are the produce requests to the request topic; Results when each outcome
	// was known.
	Publish, Results []span
	// VerifyReads are the requests naming B's offsets topic during the verification.
	VerifyReads  map[string]int
	Verdicts     map[string]int
	Outcomes     map[string]int
	FirstFailure string
	// KafkaA and KafkaB are migrate's Kafka requests to A and B, by API (and topic).
	KafkaA, KafkaB map[string]int
	HWM            uint64
	// HeapPeak and LivePeak are the largest Go heap in use, and found live by a collection,
	// sampled every 2 ms while Migrate ran.
	HeapPeak, LivePeak uint64
	Error              string
}

// runFleetChild runs migrate in a child process and returns what it measured; waves is
// called once, when the verification has read B once and waits; started once the process
// is, with its id.
func runFleetChild(ctx context.Context, e *env, job fleetJob, started func(pid int), waves func()) (fleetChildReport, error) {
	var rep fleetChildReport
	c, err := startChild("migrate", "-fleet-migrate")
	if err != nil {
		return rep, err
	}
	started(c.cmd.Process.Pid)
	defer c.stop(30 * time.Second)
	b, _ := json.Marshal(job)
	if _, err := fmt.Fprintf(c.stdin, "%s\n", b); err != nil {
		return rep, fmt.Errorf("migrate process: %w", err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		for {
			s, err := c.out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSpace(s)
		}
	}()
	deadline := time.After(3*job.Timeout + job.Verify + time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return rep, errors.New("migrate process ended without a report")
			}
			switch {
			case line == "waves":
				e.progress("fleet: every wave answered; the cutover is verified")
			case strings.HasPrefix(line, "verify: ") && waves != nil:
				// The verification read B once and waits: B's workers commit now, so that
				// it reads B more than once.
				e.progress("fleet: %s", line)
				e.progress("fleet: B's workers commit past the placed offsets")
				waves()
				waves = nil
			case strings.HasPrefix(line, "report "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "report ")), &rep); err != nil {
					return rep, fmt.Errorf("migrate process: %w", err)
				}
				if rep.Error != "" {
					return rep, fmt.Errorf("migrate: %s", rep.Error)
				}
				return rep, nil
			default:
				e.progress("fleet: %s", line)
			}
		case <-deadline:
			return rep, errors.New("migrate process: no report in time")
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}
}

// serveFleetMigrate is migrate's child process: it reads a fleetJob, runs migrate.Migrate
// with --stop-source and --verify, and prints "waves" once the waves are done, progress
// lines, and "report <json>" at the end.
func serveFleetMigrate(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench migrate: read job: %v\n", err)
		return 1
	}
	var job fleetJob
	if err := json.Unmarshal([]byte(line), &job); err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench migrate: job: %v\n", err)
		return 1
	}
	out := &lockedWriter{w: stdout}
	rep := runFleetMigrate(job, out)
	b, _ := json.Marshal(rep)
	out.printf("report %s\n", b)
	_, _ = io.Copy(io.Discard, in) // until the driver closes stdin
	return 0
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// verifyProgress prints a line per report of the cutover's verification (the driver lets
// B's workers commit once the first arrives: the verification read B once and waits).
func (l *lockedWriter) verifyProgress(v cutover.Waiting) {
	l.printf("verify: %d of %d partitions open after %s: %v\n", v.Open, v.Total, v.Elapsed.Round(time.Millisecond), v.Counts)
}

func runFleetMigrate(job fleetJob, out *lockedWriter) (rep fleetChildReport) {
	if job.Profile != "" {
		if f, err := os.Create(job.Profile); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() {
					pprof.StopCPUProfile()
					_ = f.Close()
					if h, err := os.Create(job.Profile + ".heap"); err == nil {
						_ = pprof.Lookup("allocs").WriteTo(h, 0)
						_ = h.Close()
					}
				}()
			}
		}
	}
	ctx := context.Background()
	countA, countB := newRequestCounter(), newRequestCounter()
	sel, err := source.NewSelection(source.SelectionFlags{})
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	prog := &fleetProgress{out: out}
	peak := samplePeak()
	rep.Start = time.Now().UnixNano()
	mrep, cut, err := migrate.Migrate(ctx, migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:     &source.TopicsSource{Brokers: job.FromBrokers, ConfigTopic: job.ConfigTopic, OffsetsTopic: job.OffsetsTopic, Transport: countA.transport()},
			ConnectURL: job.FromURL, Selection: sel, StopSource: true,
			States: &source.StateStore{Topic: job.StateTopic},
		},
		To: target.Target{Brokers: job.ToBrokers, RequestTopic: job.RequestTopic, ResultTopic: job.ResultTopic,
			ConfigTopic: job.ToConfigTopic, OffsetsTopic: job.ToOffsetsTopic, ConnectURL: job.ToURL, Transport: countB.transport()},
		Concurrency: job.Concurrency, WaveSize: job.WaveSize, Timeout: job.Timeout, Verify: job.Verify,
		Progress: prog, VerifyProgress: out.verifyProgress,
	})
	rep.End = time.Now().UnixNano()
	rep.HeapPeak, rep.LivePeak = peak.finish(), peak.live.Load()
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	rep.Publishing, rep.Finished = mrep.Publishing.UnixNano(), mrep.Finished.UnixNano()
	rep.Outcomes = map[string]int{}
	for _, e := range mrep.Connectors {
		rep.Outcomes[string(e.Outcome)]++
		if e.Outcome != apply.OutcomeSucceeded && rep.FirstFailure == "" {
			rep.FirstFailure = fmt.Sprintf("%s: %s at %s: %s", e.Name, e.Outcome, e.FailedStep, e.Message)
		}
	}
	if c := cut; c != nil {
		rep.VerifyStart, rep.VerifyEnd = c.VerifyStarted.UnixNano(), c.VerifyFinished.UnixNano()
		rep.Verdicts = map[string]int{}
		for v, n := range c.Counts {
			rep.Verdicts[string(v)] = n
		}
		if c.Error != "" {
			rep.FirstFailure += "; cutover: " + c.Error
		}
	}
	rep.Results = prog.spans()
	rep.VerifyReads = map[string]int{}
	rep.KafkaA, _ = countA.counts()
	var times map[string][]int64
	rep.KafkaB, times = countB.counts()
	_, aTimes := countA.counts()
	firstStop := rep.Finished
	if ts := times["Produce:"+job.RequestTopic]; len(ts) > 0 {
		firstStop = min(firstStop, ts[0])
		for _, t := range ts {
			rep.Publish = append(rep.Publish, span{t, t})
		}
	}
	// the state records are written before each wave's stops: the first is the first stop's
	if ts := times["Produce:"+job.StateTopic]; len(ts) > 0 {
		firstStop = min(firstStop, ts[0])
	}
	for _, ts := range aTimes {
		for _, t := range ts {
			if t < firstStop {
				rep.ReadA = max(rep.ReadA, t)
			}
		}
	}
	for k, ts := range times {
		if !strings.Contains(k, job.ToOffsetsTopic) {
			continue
		}
		for _, t := range ts {
			if t >= rep.VerifyStart && t <= rep.VerifyEnd {
				rep.VerifyReads[k]++
			}
		}
	}
	runtime.GC()
	rep.HWM = vmHWM("self")
	return rep
}

// fleetProgress notes when each connector's outcome was known and tells the driver when the
// waves are done.
type fleetProgress struct {
	out  *lockedWriter
	mu   sync.Mutex
	done []span
}

func (p *fleetProgress) Start(total int) { p.out.printf("migrating %d connectors\n", total) }
func (p *fleetProgress) Done(*apply.Entry) {
	t := time.Now().UnixNano()
	p.mu.Lock()
	p.done = append(p.done, span{t, t})
	p.mu.Unlock()
}
func (p *fleetProgress) Waiting(w apply.Wait) {
	p.out.printf("waiting: %d in, %d awaited\n", w.In, w.Awaited)
}
func (p *fleetProgress) Finish() { p.out.printf("waves\n") }

func (p *fleetProgress) spans() []span {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.done)
}

// requestCounter counts the Kafka requests sent over the connections its transport dials, by
// API key (and topic, for Produce, Fetch and ListOffsets), with the time each was sent.
type requestCounter struct {
	mu    sync.Mutex
	times map[string][]int64
	n     atomic.Int64
}

func newRequestCounter() *requestCounter { return &requestCounter{times: map[string][]int64{}} }

// transport is a kafka-go transport whose connections are counted.
func (rc *requestCounter) transport() *kafka.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &kafka.Transport{MetadataTTL: time.Second, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countedConn{Conn: c, rc: rc}, nil
	}}
}

func (rc *requestCounter) counts() (map[string]int, map[string][]int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.times))
	times := make(map[string][]int64, len(rc.times))
	for k, v := range rc.times {
		out[k] = len(v)
		times[k] = slices.Clone(v)
	}
	return out, times
}

// note counts one request frame (without its size prefix).
func (rc *requestCounter) note(frame []byte, at int64) {
	r := kbin.Reader{Src: frame}
	key, version := r.Int16(), r.Int16()
	_ = r.Int32()
	_ = r.NullableString()
	if r.Complete() != nil {
		return
	}
	name := kmsg.NameForKey(key)
	if req := kmsg.RequestForKey(key); req != nil && (key == 0 || key == 1 || key == 2) {
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		if req.ReadFrom(r.Src) == nil {
			var topics []string
			switch q := req.(type) {
			case *kmsg.ProduceRequest:
				for _, t := range q.Topics {
					topics = append(topics, t.Topic)
				}
			case *kmsg.FetchRequest:
				for _, t := range q.Topics {
					topics = append(topics, t.Topic)
				}
			case *kmsg.ListOffsetsRequest:
				for _, t := range q.Topics {
					topics = append(topics, t.Topic)
				}
			}
			if len(topics) > 0 {
				name += ":" + strings.Join(topics, ",")
			}
		}
	}
	rc.mu.Lock()
	rc.times[name] = append(rc.times[name], at)
	rc.mu.Unlock()
}

// countedConn cuts what is written to a connection into request frames and counts them.
type countedConn struct {
	net.Conn
	rc  *requestCounter
	buf []byte
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.buf = append(c.buf, p[:n]...)
		now := time.Now().UnixNano()
		for len(c.buf) >= 4 {
			size := int(binary.BigEndian.Uint32(c.buf))
			if len(c.buf) < 4+size {
				break
			}
			c.rc.note(c.buf[4:4+size], now)
			c.buf = c.buf[4+size:]
		}
		c.buf = append([]byte(nil), c.buf...)
	}
	return n, err
}
