// Command offsetagent-bench runs the load scenarios (big requests near the broker's limit,
// many connectors at once, single-request latency, flat cost as Connect's topics grow, a
// migration of a fleet of 10,000 connectors) and prints one table: each figure, the
// baseline measured in the same run, their ratio, the target and whether it was met.
//
// The broker is franz-go's kfake, started in a child process of this binary on 127.0.0.1 so
// that the agent's heap and CPU profile hold only the agent (and this driver), not the broker's
// copy of the data. The agent runs in-process, except in the bulk scenario, which runs it in a
// child process of its own so that the memory figure is the agent's heap alone (agentproc.go),
// in interleaved rounds against its baseline and floors (bulk.go, transit.go). The fleet
// scenario runs two brokers (A and B), B's agents and migrate each in a child process
// (scenarios_fleet.go).
// BENCH_SCALE (default 1) scales every count. OFFSETAGENT_BENCH_BROKERS (host:port,...) runs
// every scenario on that cluster instead, with topic names unique to the run; it must allow
// 20 MiB messages (message.max.bytes) and auto-create nothing the scenarios do not create.
// OFFSETAGENT_BENCH_BROKER_PID, the process id of that cluster's broker when it runs on this
// machine (make bench-real sets it), puts the broker's CPU time in the CPU columns, as the
// embedded broker's is.
//
//	BENCH_SCALE=0.05 go run ./cmd/offsetagent-bench
//	go run ./cmd/offsetagent-bench -out docs/benchmarks.md -cpuprofile /tmp/bulk.pprof
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the driver's settings from its flags and BENCH_SCALE.
type options struct {
	scale      float64
	out        string
	cpuProfile string
	// profiled is the scenario whose measured phase -cpuprofile covers.
	profiled  string
	scenarios map[string]bool
	timeout   time.Duration
	verbose   bool
	// rounds is how many interleaved rounds the bulk scenario runs.
	rounds int
	// brokers is OFFSETAGENT_BENCH_BROKERS: an external cluster instead of kfake; brokerText
	// says which broker the table came from.
	brokers    []string
	brokerText string
	// brokerPID is OFFSETAGENT_BENCH_BROKER_PID: the external broker's process, 0 if unknown.
	brokerPID int
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("offsetagent-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "also write the table, date and machine to this Markdown file")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of one scenario's measured phase to this file")
	profiled := fs.String("profile", "bulk", "the scenario -cpuprofile covers: bulk, latency (the agent of the first round, in its child process), many, flat (the first agent start-up on the full topic), fleet (migrate's child process, and its allocations to path.heap) or view (every view load, the rounds after the first to path.N)")
	only := fs.String("scenarios", "bulk,latency,many,flat,migrate,view,fleet", "comma-separated scenarios to run")
	scaleFlag := fs.String("scale", "", "scale every count by this factor (default $BENCH_SCALE, else 1)")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up on the whole run after this long")
	verbose := fs.Bool("v", false, "print progress to stderr")
	broker := fs.Bool("broker", false, "internal: serve the embedded broker until stdin closes")
	tapped := fs.Bool("tap", false, "internal: with -broker, tap the broker's connections (tap.go)")
	echo := fs.Bool("echo", false, "internal: answer requests as a franz-go echo (the latency scenario's floor, echo.go)")
	agentChild := fs.Bool("agent", false, "internal: run one agent for the driver (see agentproc.go)")
	noop := fs.Bool("noop", false, "internal: with -agent, stages that answer succeeded at once")
	transit := fs.Bool("transit", false, "internal: answer requests without an agent (the bulk scenario's transit floors, transit.go)")
	rounds := fs.Int("rounds", 5, "interleaved rounds of the bulk and view scenarios (median and range)")
	fleetMigrate := fs.Bool("fleet-migrate", false, "internal: run migrate for the fleet scenario (scenarios_fleet.go)")
	load := fs.String("load", "", "internal: load an offsets topic in this process, view or franz (the view scenario, viewload.go)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *broker {
		return serveBroker(stdin, stdout, stderr, *tapped)
	}
	if *echo {
		return serveEcho(stdin, stdout, stderr)
	}
	if *transit {
		return serveTransit(stdin, stdout, stderr)
	}
	if *load != "" {
		return serveLoad(*load, *cpu, stdin, stdout, stderr)
	}
	if *fleetMigrate {
		return serveFleetMigrate(stdin, stdout, stderr)
	}
	if *agentChild {
		return serveAgent(stdin, stdout, stderr, *cpu, *noop)
	}
	scaleText := *scaleFlag
	if scaleText == "" {
		scaleText = os.Getenv("BENCH_SCALE")
	}
	scale, err := parseScale(scaleText)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench: %v\n", err)
		return 2
	}
	o := options{scale: scale, out: *out, cpuProfile: *cpu, profiled: *profiled, scenarios: map[string]bool{}, timeout: *timeout, verbose: *verbose, rounds: max(1, *rounds)}
	o.brokerText = "embedded kfake in a child process on 127.0.0.1 (message.max.bytes 20 MiB), a fresh one per scenario (bulk: per measurement)"
	if v := os.Getenv("OFFSETAGENT_BENCH_BROKERS"); v != "" {
		o.brokers = strings.Split(v, ",")
		o.brokerText = fmt.Sprintf("external cluster at %s (OFFSETAGENT_BENCH_BROKERS), topics unique to the run", v)
		if pid := os.Getenv("OFFSETAGENT_BENCH_BROKER_PID"); pid != "" {
			if o.brokerPID, err = strconv.Atoi(pid); err != nil || o.brokerPID <= 0 {
				fmt.Fprintf(stderr, "offsetagent-bench: OFFSETAGENT_BENCH_BROKER_PID: %q is not a process id\n", pid)
				return 2
			}
			o.brokerText += fmt.Sprintf("; the CPU columns count its broker process (pid %d)", o.brokerPID)
		} else {
			o.brokerText += "; the CPU columns count this bench's own processes only"
		}
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if scenarioByName(s) == nil {
			fmt.Fprintf(stderr, "offsetagent-bench: unknown scenario %q (known: bulk, latency, many, flat, migrate, view, fleet)\n", s)
			return 2
		}
		o.scenarios[s] = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := bench(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench: %v\n", err)
		return 1
	}
	return 0
}

// parseScale reads BENCH_SCALE: a positive float, default 1.
func parseScale(s string) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("parse BENCH_SCALE %q: %w", s, err)
	}
	if f <= 0 || f > 10 {
		return 0, fmt.Errorf("parse BENCH_SCALE %q: must be in (0, 10]", s)
	}
	return f, nil
}

// scenario is one of the four load measurements.
type scenario struct {
	name string
	run  func(context.Context, *env) ([]row, error)
}

// scenarios lists the scenarios in the order they run.
func scenarios() []scenario {
	return []scenario{
		{"bulk", bulkScenario},
		{"latency", latencyScenario},
		{"many", manyScenario},
		{"flat", flatScenario},
		{"migrate", migrateScenario},
		{"view", viewScenario},
		{"fleet", fleetScenario},
	}
}

func scenarioByName(name string) *scenario {
	for _, s := range scenarios() {
		if s.name == name {
			return &s
		}
	}
	return nil
}

func bench(ctx context.Context, o options, stdout, stderr io.Writer) error {
	started := time.Now()
	var rows []row
	var failed []error
	for _, sc := range scenarios() {
		name := sc.name
		if !o.scenarios[name] {
			continue
		}
		e := &env{brokers: o.brokers, brokerPID: o.brokerPID, opts: o, stderr: stderr, run: fmt.Sprintf("b%d-", started.Unix()), profileTaken: &atomic.Bool{}}
		closeBroker := func() {}
		if len(o.brokers) == 0 {
			// Every scenario gets a broker of its own, so that none is measured on the data and
			// connections the ones before it left behind (kfake keeps every record in its heap).
			b, err := startBroker(ctx)
			if err != nil {
				return err
			}
			e.brokers, e.run, e.brokerPID, closeBroker = []string{b.addr}, "", b.cmd.Process.Pid, b.close
		}
		e.progress("scenario %s", name)
		t := time.Now()
		rs, err := sc.run(ctx, e)
		closeBroker()
		rows = append(rows, rs...)
		if err != nil {
			failed = append(failed, fmt.Errorf("scenario %s: %w", name, err))
			fmt.Fprintf(stderr, "scenario %s failed: %v\n", name, err)
		}
		e.progress("scenario %s took %s", name, time.Since(t).Round(time.Millisecond))
	}
	elapsed := time.Since(started)
	if err := printTable(stdout, rows, o.scale, elapsed); err != nil {
		return err
	}
	if o.out != "" && len(failed) == 0 {
		if err := writeMarkdown(o.out, rows, o.scale, elapsed, o.brokerText); err != nil {
			return err
		}
	}
	return errors.Join(failed...)
}
