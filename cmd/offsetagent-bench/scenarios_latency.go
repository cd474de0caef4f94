package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// The latency scenario: single-offset requests, one at a time, publish to result, as a user
// sees them: a driver of its own (franz-go, echo.go) publishing on the embedded broker, the
// agent in a child process. Its floor is the echo, a franz-go loop that consumes one record
// and produces one (echo.go), measured the same way; the agent with stages that answer at once
// is measured too. Each round runs the three, each on a fresh broker whose connections are
// tapped (tap.go), in an order rotated by the round; the targets hold for the median of the
// rounds' ratios. The tap's spans cut every request into phases (timeline.go): the table gives
// each phase's median, the agent's beside the echo's, and the round trips each client made per
// request.

// latencyKinds are the services of the latency scenario.
const (
	kindEcho  = "echo"
	kindAgent = "agent"
	kindNoop  = "no-op agent"
)

// latencyRun is one measurement of one service.
type latencyRun struct {
	lat []time.Duration
	// cpu is the CPU time per request of the service's process, the broker's and the driver's
	// (this process) during the measured requests.
	cpu [3]time.Duration
	ph  phases
	// stages holds the agent's stage durations from its results (decoded), by stage.
	stages map[string][]time.Duration
}

// latencyScenario measures single-offset requests one at a time against the echo.
func latencyScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "2 latency"
	n := e.scaled(400, 20)
	kinds := []string{kindEcho, kindAgent, kindNoop}
	runs := map[string][]latencyRun{}
	for r := range e.opts.rounds {
		for i := range kinds {
			kind := kinds[(i+r)%len(kinds)]
			err := e.withTappedBroker(ctx, func(be *env, b *brokerProc) error {
				run, err := be.latencyRun(ctx, b, kind, n)
				if err == nil {
					runs[kind] = append(runs[kind], run)
				}
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, kind, err)
			}
		}
		last := func(kind string) time.Duration { return percentile(runs[kind][len(runs[kind])-1].lat, 0.5) }
		e.progress("latency round %d: p50 echo %v, agent %v, no-op agent %v", r+1, last(kindEcho), last(kindAgent), last(kindNoop))
	}
	quantiles := func(kind string, q float64) []float64 {
		out := make([]float64, len(runs[kind]))
		for i, run := range runs[kind] {
			out[i] = ms(percentile(run.lat, q))
		}
		return out
	}
	count := len(runs[kindAgent][0].lat)
	rows := []row{
		roundsRow(sc, fmt.Sprintf("p50 publish->result, %d requests, against the echo (ms)", count),
			quantiles(kindAgent, 0.5), quantiles(kindEcho, 0.5), "%.3f", "<=", 2),
		roundsRow(sc, "p99 publish->result against the echo (ms)", quantiles(kindAgent, 0.99), quantiles(kindEcho, 0.99), "%.3f", "<=", 3),
		roundsRow(sc, "p50 against the agent with no-op stages (ms)", quantiles(kindAgent, 0.5), quantiles(kindNoop, 0.5), "%.3f", "", 0),
		roundsRow(sc, "p50 of the agent with no-op stages against the echo (ms)", quantiles(kindNoop, 0.5), quantiles(kindEcho, 0.5), "%.3f", "", 0),
	}
	cpus := func(kind string, i int) []float64 {
		out := make([]float64, len(runs[kind]))
		for k, run := range runs[kind] {
			out[k] = float64(run.cpu[i]) / float64(time.Microsecond)
		}
		return out
	}
	for i, who := range []string{"the service's process (agent or echo)", "the broker", "the driver"} {
		rows = append(rows, roundsRow(sc, fmt.Sprintf("CPU per request of %s (us)", who), cpus(kindAgent, i), cpus(kindEcho, i), "%.0f", "", 0))
	}
	rows = append(rows, phaseRows(sc, runs[kindAgent], runs[kindEcho])...)
	rows = append(rows, stageRows(sc, runs[kindAgent])...)
	rows = append(rows, countRows(sc, meanCounts(runs[kindAgent]), meanCounts(runs[kindEcho]))...)
	return rows, nil
}

// withTappedBroker runs f with an env on a fresh embedded broker whose connections are tapped
// (or on the external cluster, with b nil: no spans).
func (e *env) withTappedBroker(ctx context.Context, f func(*env, *brokerProc) error) error {
	if len(e.opts.brokers) > 0 {
		return f(e, nil)
	}
	b, err := startBrokerTapped(ctx, true)
	if err != nil {
		return err
	}
	defer b.close()
	return f(&env{brokers: []string{b.addr}, brokerPID: b.cmd.Process.Pid, opts: e.opts, stderr: e.stderr, profileTaken: e.profileTaken}, b)
}

// latencyRun starts the service of kind, sends it three warm-up requests and then n requests
// one at a time (within 90 s), and returns their latencies and, when b is tapped, phases.
func (e *env) latencyRun(ctx context.Context, b *brokerProc, kind string, n int) (latencyRun, error) {
	var run latencyRun
	var requestTopic, resultTopic, server string
	var servicePID int
	roles := map[string]string{}
	switch kind {
	case kindEcho:
		requestTopic, resultTopic, server = e.name("echo-requests"), e.name("echo-results"), clientEcho
		for _, t := range []string{requestTopic, resultTopic} {
			if err := e.createTopic(ctx, t, 6); err != nil {
				return run, err
			}
		}
		p, err := startEcho(ctx, echoConfig{Brokers: e.brokers, RequestTopic: requestTopic, ResultTopic: resultTopic})
		if err != nil {
			return run, err
		}
		defer p.stop(10 * time.Second)
		servicePID = p.cmd.Process.Pid
	default:
		cfg := e.config("latency")
		requestTopic, resultTopic, server = cfg.RequestTopic, cfg.ResultTopic, clientAgent
		roles = agentRoles(cfg)
		profile := ""
		if kind == kindAgent && e.opts.profiled == "latency" && !e.profileTaken.Swap(true) {
			profile = e.opts.cpuProfile
		}
		p, err := startAgentChild(ctx, cfg, profile, kind == kindNoop)
		if err != nil {
			return run, err
		}
		defer p.stop()
		servicePID = p.cmd.Process.Pid
		if profile != "" {
			// The profile covers the measured requests (mark to peak).
			if _, err := p.mark(ctx); err != nil {
				return run, err
			}
			defer func() { _, _, _ = p.peak(ctx) }()
		}
	}
	roles[requestTopic], roles[resultTopic] = "requests", "results"
	w, err := watchResultsFranz(ctx, e.brokers, resultTopic, kind == kindAgent)
	if err != nil {
		return run, err
	}
	defer w.close()
	pub, err := newFranzPublisher(e.brokers, requestTopic)
	if err != nil {
		return run, err
	}
	defer pub.close()
	send := func(id string) (flight, error) {
		msg, err := requestMsg(mm2Body(id, 1), id)
		if err != nil {
			return flight{}, err
		}
		t0 := time.Now()
		if err := pub.publish(ctx, msg); err != nil {
			return flight{}, fmt.Errorf("publish request %q: %w", id, err)
		}
		got := w.wait(ctx, []string{id}, 30*time.Second)
		if err := checkResults(got, 1); err != nil {
			return flight{}, fmt.Errorf("request %q: %w", id, err)
		}
		return flight{id: id, t0: t0.UnixNano(), t1: got[id].at.UnixNano()}, nil
	}
	for i := range 3 {
		if _, err := send(fmt.Sprintf("%s-warmup-%d", kind, i)); err != nil {
			return run, fmt.Errorf("warm-up: %w", err)
		}
	}
	if b != nil {
		if _, err := b.spans(ctx); err != nil { // the warm-ups' and the start's
			return run, err
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	var flights []flight
	clocks := [3]*cpuClock{startCPU(servicePID), startCPU(e.brokerPID), startCPU(os.Getpid())}
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		f, err := send(fmt.Sprintf("%s-%d", kind, i))
		if err != nil {
			return run, err
		}
		flights = append(flights, f)
		run.lat = append(run.lat, time.Duration(f.t1-f.t0))
	}
	for i, c := range clocks {
		run.cpu[i] = c.elapsed() / time.Duration(max(len(flights), 1))
	}
	if b != nil {
		spans, err := b.spans(ctx)
		if err != nil {
			return run, err
		}
		run.ph = cutPhases(flights, spans, server, roles)
	}
	if w.keep {
		run.stages = map[string][]time.Duration{}
		ids := make([]string, len(flights))
		for i, f := range flights {
			ids[i] = f.id
		}
		for _, r := range w.wait(ctx, ids, time.Second) {
			_, res, err := events.DecodeResult(r.raw)
			if err != nil {
				return run, fmt.Errorf("decode result: %w", err)
			}
			for _, s := range res.Stages {
				if s.Outcome == "ok" {
					run.stages[s.Stage] = append(run.stages[s.Stage], time.Duration(s.DurationSeconds*float64(time.Second)))
				}
			}
		}
	}
	return run, nil
}

// agentRoles names the topics and group of an agent's configuration.
func agentRoles(cfg agent.Config) map[string]string {
	return map[string]string{cfg.IntentTopic: "intents", cfg.ConfigTopic: "configs", cfg.OffsetsTopic: "offsets",
		cfg.GroupID: "agent's group"}
}

// phaseRows gives the median of each phase of the agent's requests over every round, beside
// the echo's where the echo has the phase.
func phaseRows(sc string, agentRuns, echoRuns []latencyRun) []row {
	pool := func(runs []latencyRun) (map[string][]time.Duration, []string, int, int) {
		all := map[string][]time.Duration{}
		var order []string
		took, total := 0, 0
		for _, r := range runs {
			if order == nil {
				order = r.ph.order
			}
			took, total = took+r.ph.wayCount, total+r.ph.requests
			for k, ds := range r.ph.byPhase {
				all[k] = append(all[k], ds...)
			}
		}
		return all, order, took, total
	}
	agent, order, took, total := pool(agentRuns)
	echo, _, echoTook, echoTotal := pool(echoRuns)
	if len(order) == 0 {
		return nil
	}
	us := func(ds []time.Duration) float64 {
		if len(ds) == 0 {
			return math.NaN()
		}
		return float64(percentile(ds, 0.5)) / float64(time.Microsecond)
	}
	rows := []row{{scenario: sc, figure: fmt.Sprintf("phases (p50, us) of the %d of %d agent requests (echo: %d of %d) that took the most common way",
		took, total, echoTook, echoTotal), value: "agent", baseline: "echo",
		ratio: nanRatio(), ratioLo: nanRatio(), ratioHi: nanRatio(), cpu: nanRatio(), cpuLo: nanRatio(), cpuHi: nanRatio()}}
	for _, name := range order {
		r := ratioRow(sc, "phase: "+name, us(agent[name]), us(echo[name]), "%.0f", "", 0)
		if _, ok := echo[name]; !ok {
			r.baseline = "-"
			r.ratio = nanRatio()
		}
		rows = append(rows, r)
	}
	return rows
}

// stageRows gives the median duration of each stage the agent's results report.
func stageRows(sc string, runs []latencyRun) []row {
	all := map[string][]time.Duration{}
	var order []string
	for _, r := range runs {
		for k, ds := range r.stages {
			if _, ok := all[k]; !ok {
				order = append(order, k)
			}
			all[k] = append(all[k], ds...)
		}
	}
	stageOrder := []string{"validate_config", "validate_offsets", "wipe_offsets", "write_offsets", "write_config"}
	slices.SortStableFunc(order, func(a, b string) int { return slices.Index(stageOrder, a) - slices.Index(stageOrder, b) })
	var rows []row
	for _, k := range order {
		r := ratioRow(sc, "agent's stage "+k+" as its result reports it (p50, us)",
			float64(percentile(all[k], 0.5))/float64(time.Microsecond), 0, "%.0f", "", 0)
		r.baseline = "-"
		rows = append(rows, r)
	}
	return rows
}

// meanCounts is the mean over runs of the round trips per request.
func meanCounts(runs []latencyRun) map[string]float64 {
	out := map[string]float64{}
	for _, r := range runs {
		for k, v := range r.ph.perRequest {
			out[k] += v / float64(len(runs))
		}
	}
	return out
}
