package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table. A row without a target is information only.
type row struct {
	scenario, figure string
	value, baseline  string
	// ratio is value/baseline (over rounds: the median of the rounds' ratios, between ratioLo
	// and ratioHi); NaN when the row has none.
	ratio, ratioLo, ratioHi float64
	// cpu is the ratio of CPU times, baseline's over the value's, all processes counted (the
	// median of the rounds, between cpuLo and cpuHi); NaN when not measured.
	cpu, cpuLo, cpuHi float64
	target            string
	// pass is nil for information rows.
	pass *bool
}

// ratioRow compares value with baseline: want ">=" or "<=" limit (the ratio's bound); limit 0
// makes an information row.
func ratioRow(scenario, figure string, value, baseline float64, format, want string, limit float64) row {
	r := row{scenario: scenario, figure: figure, value: fmt.Sprintf(format, value),
		baseline: fmt.Sprintf(format, baseline), ratio: math.NaN(), ratioLo: math.NaN(), ratioHi: math.NaN(),
		cpu: math.NaN(), cpuLo: math.NaN(), cpuHi: math.NaN()}
	if baseline > 0 {
		r.ratio = value / baseline
	}
	if limit > 0 {
		r.target = fmt.Sprintf("%s %gx", want, limit)
		ok := !math.IsNaN(r.ratio) && ((want == ">=" && r.ratio >= limit) || (want == "<=" && r.ratio <= limit))
		r.pass = &ok
	}
	return r
}

// ms formats a duration in milliseconds for ratioRow.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r row) cells() []string {
	ratio := ratioText(r.ratio, r.ratioLo, r.ratioHi)
	cpu := ratioText(r.cpu, r.cpuLo, r.cpuHi)
	result := "info"
	if r.pass != nil {
		result = "FAIL"
		if *r.pass {
			result = "pass"
		}
	}
	target := r.target
	if target == "" {
		target = "-"
	}
	return []string{r.scenario, r.figure, r.value, r.baseline, ratio, cpu, target, result}
}

// ratioText is a ratio with its range when it has one, "-" for none.
func ratioText(x, lo, hi float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsNaN(lo) || lo == hi:
		return fmt.Sprintf("%.2fx", x)
	default:
		return fmt.Sprintf("%.2fx (%.2f-%.2f)", x, lo, hi)
	}
}

// header names the table's columns.
func header() []string {
	return []string{"scenario", "figure", "value", "baseline", "ratio", "CPU ratio", "target", "result"}
}

func printTable(w io.Writer, rows []row, scale float64, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", strings.Join(header(), "\t"))
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\n", strings.Join(r.cells(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print table: %w", err)
	}
	_, err := fmt.Fprintf(w, "BENCH_SCALE=%g, %s, total %s\n", scale, machine(), elapsed.Round(time.Second))
	return err
}

// readingHeading starts the hand-written part of the Markdown file, which writeMarkdown keeps.
const readingHeading = "## Reading these numbers"

// writeMarkdown writes the table with the date and machine to path.
func writeMarkdown(path string, rows []row, scale float64, elapsed time.Duration, broker string) error {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Output of `make bench` (`go run ./cmd/offsetagent-bench -out docs/benchmarks.md`): the load\n")
	b.WriteString("scenarios, each against a baseline measured in the same run. See\n")
	b.WriteString("`cmd/offsetagent-bench` for what each figure measures.\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", time.Now().UTC().Format("Mon Jan _2 15:04:05 UTC 2006"))
	fmt.Fprintf(&b, "- Machine: %s\n", machine())
	fmt.Fprintf(&b, "- BENCH_SCALE=%g, run time %s\n", scale, elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- Broker: %s; agent in-process (bulk, latency: in a child process)\n\n", broker)
	fmt.Fprintf(&b, "| %s |\n", strings.Join(header(), " | "))
	fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(header())))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r.cells(), " | "))
	}
	b.WriteString(methodNotes)
	// The hand-written reading of the numbers, after the generated part, is kept.
	if old, err := os.ReadFile(path); err == nil {
		if i := strings.Index(string(old), readingHeading); i >= 0 {
			b.WriteString("\n")
			b.WriteString(string(old[i:]))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return nil
}

// machine describes the host: CPU count and model, Go version.
func machine() string {
	return fmt.Sprintf("%d CPUs (%s), %s %s/%s", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

const methodNotes = `
## What is measured

1. **bulk**: requests of N source offsets each, from publish to the acknowledged result, as
   offsets per second, for three families: MirrorMaker 2 (` + "`{\"cluster\",\"topic\",\"partition\"}` -> `{\"offset\":N}`" + `),
   FileStream (` + "`{\"filename\"}` -> `{\"position\":N}`" + `) and Debezium SQL Server (` + "`{\"server\",\"database\"}`" + ` ->
   LSNs and a serial number). Baseline: a bare kafka-go Writer (acks=all, explicit murmur2
   partitions, BatchSize 2,000, BatchBytes 1 MiB, BatchTimeout 1 ms) producing the same N
   pre-encoded offsets-topic records to a fresh 25-partition topic. Every measured write (the
   baseline's, the agent's, the floor's) goes to an offsets topic that already holds an
   unmeasured write of N records, as a Connect cluster's does (Apache Kafka appends the first
   megabytes of a new topic's partitions several times slower). Requests are published as
   offsetagent's own publishers send them (snappy). The scenario runs in
   interleaved rounds (-rounds, default 5): each round runs every measurement once, each on a
   fresh broker with no other agent alive, in an order rotated by the round; the table shows
   the medians and, in brackets, the range of the per-round ratios. CPU ratio: the CPU time of
   every local process (this driver, the broker and the agent or floor, summed from
   /proc/PID/task/*/schedstat) during the baseline over that during the measured request, so
   that above 1x means cheaper, like the wall ratio; an agent's CPU time runs on after the
   result until its offsets view has read the topic to its end, so that the view taking in
   the request's records counts whenever it happens. A second MirrorMaker 2 request is sent as
   soon as the first's result arrives. Peak memory: the largest heap in use of the agent's
   process (runtime/metrics /memory/classes/heap/objects, sampled every 2 ms) during the first
   request, above its live heap when idle, against the request record's size. Floors, each
   timed like the agent: request transit only (a child process that reads the request record
   and publishes a result, decoding nothing), transit plus Store.Write of the pre-encoded
   records, and the agent with stages that answer at once (transit plus decoding).
2. **latency**: single-offset requests, one at a time, publish to result, as a user sees them:
   the driver publishes with a franz-go producer (no linger, acks=all, snappy) and reads the
   results with a franz-go consumer; the agent runs in a child process. The floor is the echo,
   a franz-go loop in a child process that consumes each request record and produces one
   result record (acks=all), decoding nothing, measured the same way; the agent with stages
   that answer at once is measured too. Each of the -rounds rounds runs the three, each on a
   fresh broker whose connections are tapped, in an order rotated by the round; the targets
   hold for the medians of the per-round ratios (p50 and p99). The tap notes when the broker
   read each request and wrote its response: the phase rows cut the requests that took the
   most common way into the publish, the broker until the service's fetch is answered, the
   service's time (its own work before each round trip, and each round trip as the broker saw
   it, overlapping ones together), the broker until the driver's fetch is answered, and the
   driver's read; the agent's beside the echo's, medians over every round. The round-trip
   rows count every request each client made per request (Fetch "(no wait)": a read of where
   partitions end). CPU rows: CPU time per request of the service's process, the broker's and
   the driver's during the measured requests. The stage rows are the durations the agent's
   results report.
3. **many**: N requests for distinct connectors (10 offsets each) published at once, by the
   latency scenario's franz-go driver, to the agent as shipped (its default
   OFFSETAGENT_CONCURRENCY and request-topic partitions) in a child process; the baseline is the
   same agent with Concurrency=1 and a 1-partition request topic. Latencies are from the publish
   to each result. CPU rows: CPU time per request of the agent's process, the broker's and the
   driver's from the publish to the last result; allocation rows: the agent's heap objects and
   bytes allocated per request meanwhile (runtime/metrics /gc/heap/allocs).
4. **flat**: an offsets topic pre-filled with other connectors' records (10% tombstones);
   single-request p50 against the same with an empty topic; the view's start-up load rate (agent
   start until its views are loaded) against 25 plain kafka-go Readers (MaxBytes 1 MiB, as the
   view's fetches) consuming the same topic, best of three interleaved tries each; memory per live key = live heap delta of the agent
   over the empty-topic agent / live keys, less the average key+value size. The load row is
   information since scenario 6 compares the load with a franz-go consumer.
6. **view**: an offsets topic of N records (1.25M at scale 1: 1M live keys, the flat scenario's
   records and tombstones) loaded, in interleaved rounds, by two child processes of the bench
   each: the store's offsets view (offsetstore.New, Run, WaitReady) and a plain franz-go
   consumer (kgo defaults) reading every partition to its end and keeping nothing. Memory per
   live key: the view child's VmRSS (/proc/self/status) after the load, after runtime.GC and
   debug.FreeOSMemory, less the same before the load, over the live keys, less their average
   key+value size; the information row is the same reading taken right after the load, before
   the forced collection (garbage and the collector's headroom included). Load rate: records
   over the time from New (client creation) to ready (the last record), median and range of
   the per-round ratios. CPU ratio: the franz-go child's CPU time during its load plus the
   broker's while that child ran, over the same for the view (an external cluster's broker is
   counted when OFFSETAGENT_BENCH_BROKER_PID names its process, as make bench-real does); the
   target holds for the median wall and CPU ratios alike.
`

// nanRatio marks a row without a ratio.
func nanRatio() float64 { return math.NaN() }

// rateRow compares the rate of n records in samples with that of baseline, round by round:
// the ratio of wall times and the ratio of CPU times (baseline's over the sample's, so that
// above 1 is faster or cheaper), with their medians and ranges. The target, when limit > 0,
// holds for both medians.
func rateRow(scenario, figure string, n int, samples, baseline []bulkSample, want string, limit float64) row {
	vals, bases := make([]float64, len(samples)), make([]float64, len(samples))
	cpus := make([]float64, len(samples))
	for i := range samples {
		vals[i] = float64(n) / samples[i].wall.Seconds()
		bases[i] = float64(n) / baseline[i].wall.Seconds()
		cpus[i] = math.NaN()
		if samples[i].cpu > 0 && baseline[i].cpu > 0 {
			cpus[i] = baseline[i].cpu.Seconds() / samples[i].cpu.Seconds()
		}
	}
	r := roundsRow(scenario, figure, vals, bases, "%.0f", want, limit)
	r.cpu, r.cpuLo, r.cpuHi = medianRange(cpus)
	if r.pass != nil && !math.IsNaN(r.cpu) {
		ok := *r.pass && ((want == ">=" && r.cpu >= limit) || (want == "<=" && r.cpu <= limit))
		r.pass = &ok
	}
	return r
}

// roundsRow is ratioRow over rounds: the medians of values and baselines, and the median and
// range of the per-round ratios.
func roundsRow(scenario, figure string, values, baselines []float64, format, want string, limit float64) row {
	ratios := make([]float64, len(values))
	for i := range values {
		ratios[i] = math.NaN()
		if baselines[i] > 0 {
			ratios[i] = values[i] / baselines[i]
		}
	}
	v, _, _ := medianRange(values)
	b, _, _ := medianRange(baselines)
	r := ratioRow(scenario, figure, v, b, format, want, limit)
	r.ratio, r.ratioLo, r.ratioHi = medianRange(ratios)
	if r.pass != nil {
		ok := !math.IsNaN(r.ratio) && ((want == ">=" && r.ratio >= limit) || (want == "<=" && r.ratio <= limit))
		r.pass = &ok
	}
	if len(values) > 1 {
		r.figure += fmt.Sprintf(", median of %d rounds", len(values))
	}
	return r
}

// medianRange is the median, least and greatest of the values that are not NaN (all NaN when
// none is). The median of an even count is the mean of the middle two.
func medianRange(xs []float64) (median, lo, hi float64) {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return median, s[0], s[len(s)-1]
}
