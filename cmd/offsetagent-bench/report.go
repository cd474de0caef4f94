package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table. A row without a target is information only.
type row struct {
	scenario, figure string
	value, baseline  string
	// ratio is value/baseline; NaN when the row has none.
	ratio  float64
	target string
	// pass is nil for information rows.
	pass *bool
}

// ratioRow compares value with baseline: want ">=" or "<=" limit (the ratio's bound); limit 0
// makes an information row.
func ratioRow(scenario, figure string, value, baseline float64, format, want string, limit float64) row {
	r := row{scenario: scenario, figure: figure, value: fmt.Sprintf(format, value),
		baseline: fmt.Sprintf(format, baseline), ratio: math.NaN()}
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
	ratio := "-"
	if !math.IsNaN(r.ratio) {
		ratio = fmt.Sprintf("%.2fx", r.ratio)
	}
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
	return []string{r.scenario, r.figure, r.value, r.baseline, ratio, target, result}
}

// header names the table's columns.
func header() []string {
	return []string{"scenario", "figure", "value", "baseline", "ratio", "target", "result"}
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
	fmt.Fprintf(&b, "- Broker: %s; agent in-process (bulk: in a child process)\n\n", broker)
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

1. **bulk**: one MirrorSourceConnector request with N source offsets
   (` + "`{\"cluster\",\"partition\",\"topic\"}` -> `{\"offset\":N}`" + `), from publish to the acknowledged
   result, as offsets per second. Baseline: a bare kafka-go Writer (acks=all, explicit murmur2
   partitions, BatchSize 2,000, BatchBytes 1 MiB, BatchTimeout 1 ms) producing the same N
   pre-encoded offsets-topic records to a fresh 25-partition topic. Peak memory: the largest
   heap in use of the agent's process (runtime/metrics /memory/classes/heap/objects, collected
   or not, sampled every 2 ms) above its live heap when idle, against the request record's
   size. Two information rows: the ceiling, the same request sent to an agent process whose
   stages answer succeeded at once (the latency floor's processor: the request's transit, its
   decoding and the result, nothing validated or written), on a fresh broker of its own so that
   it runs as cold as the real one; and the agent's rate against that ceiling.
2. **latency**: single-offset requests, one at a time, publish to result; the floor is the same
   agent with its stages replaced by a processor that answers succeeded at once.
3. **many**: N requests for distinct connectors (10 offsets each) published in one write to the
   agent as shipped (its default OFFSETAGENT_CONCURRENCY and request-topic partitions); the
   baseline is the same agent with Concurrency=1 and a 1-partition request topic. Latencies are
   from the publish to each result.
4. **flat**: an offsets topic pre-filled with other connectors' records (10% tombstones);
   single-request p50 against the same with an empty topic; the view's start-up load rate (agent
   start until its views are loaded) against 25 plain kafka-go Readers (MaxBytes 1 MiB, as the
   view's fetches) consuming the same topic, best of three interleaved tries each; memory per live key = live heap delta of the agent
   over the empty-topic agent / live keys, less the average key+value size.
`

// nanRatio marks a row without a ratio.
func nanRatio() float64 { return math.NaN() }
