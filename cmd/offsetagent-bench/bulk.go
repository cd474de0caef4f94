package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
)

// The bulk scenario: 100,000-offset requests against a bare writer of the same records, and
// floors that show where the time goes, in interleaved rounds. Each round runs every
// measurement once, each on a fresh broker of its own and with no other agent running, in an
// order rotated by the round, so that a slow phase of the machine touches all of them alike;
// the table gives the median of the rounds and their range.
//
// Every measurement notes the wall time from publish to result (or of the bare write) and the
// CPU time of every process meanwhile (this driver, the broker and the agent or floor), so
// that a ratio of CPU times stands beside the ratio of wall times.

// bulkSample is one measured request or write: its wall time and the CPU time of every
// process meanwhile.
type bulkSample struct {
	wall, cpu time.Duration
	// procs is the CPU time of each process (the driver, the broker, then the agent or
	// floor, where there is one), for the -v progress lines.
	procs []time.Duration
}

// String is the sample as the -v progress lines show it: wall, CPU and each process's CPU.
func (s bulkSample) String() string {
	parts := make([]string, len(s.procs))
	for i, d := range s.procs {
		parts[i] = fmt.Sprintf("%.1f", d.Seconds()*1000)
	}
	return fmt.Sprintf("%.1fms wall, %.1fms CPU [%s]", s.wall.Seconds()*1000, s.cpu.Seconds()*1000, strings.Join(parts, " "))
}

// bulkFamilies are the families of the bulk requests; the first also gets the second request
// and the memory figures.
func bulkFamilies() []family { return []family{mm2Family, fileFamily, sqlServerFamily} }

// bulkRound is what one round measured.
type bulkRound struct {
	bare, agent map[string]bulkSample // by family tag
	// second is a second MirrorMaker 2 request sent as soon as the first's result arrived.
	second bulkSample
	// peak and live are the agent's largest heap in use and largest reachable heap above idle
	// during the first request; size is that request's record size.
	peak, live uint64
	size       int
	// transit, transitWrite and noop are the floors (see bulkScenario).
	transit, transitWrite, noop bulkSample
}

// bulkScenario measures one request with 100,000 source offsets per family.
func bulkScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "1 bulk"
	n := e.scaled(100_000, 100)
	var rounds []bulkRound
	for r := range e.opts.rounds {
		br := bulkRound{bare: map[string]bulkSample{}, agent: map[string]bulkSample{}}
		steps := []struct {
			name string
			run  func(*env) error
		}{
			{"bare writer", func(fe *env) error { return fe.bulkBare(ctx, n, &br) }},
			{"agent", func(fe *env) error { return fe.bulkAgent(ctx, n, r, &br) }},
			{"transit floor", func(fe *env) (err error) { br.transit, err = fe.bulkTransit(ctx, n, 0); return }},
			{"transit+write floor", func(fe *env) (err error) { br.transitWrite, err = fe.bulkTransit(ctx, n, n); return }},
			{"no-op agent", func(fe *env) (err error) { br.noop, err = fe.bulkNoop(ctx, n); return }},
		}
		for i := range steps {
			st := steps[(i+r)%len(steps)]
			if err := e.withBroker(ctx, st.run); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, st.name, err)
			}
		}
		e.progress("bulk round %d: second %v, transit %v, transit+write %v, no-op %v",
			r+1, br.second, br.transit, br.transitWrite, br.noop)
		for _, f := range bulkFamilies() {
			e.progress("bulk round %d, %s: bare %v, agent %v (CPU: driver, broker, agent)", r+1, f.tag, br.bare[f.tag], br.agent[f.tag])
		}
		rounds = append(rounds, br)
	}
	pick := func(f func(bulkRound) bulkSample) []bulkSample {
		out := make([]bulkSample, len(rounds))
		for i, r := range rounds {
			out[i] = f(r)
		}
		return out
	}
	bare := func(tag string) []bulkSample { return pick(func(r bulkRound) bulkSample { return r.bare[tag] }) }
	mm2Bare := bare(mm2Family.tag)
	var rows []row
	for _, f := range bulkFamilies() {
		rows = append(rows, rateRow(sc, fmt.Sprintf("%s, %d offsets, publish->result (records/s)", f.tag, n), n,
			pick(func(r bulkRound) bulkSample { return r.agent[f.tag] }), bare(f.tag), ">=", 1.0))
	}
	const mib = 1 << 20
	peaks, lives, sizes := make([]float64, len(rounds)), make([]float64, len(rounds)), make([]float64, len(rounds))
	for i, r := range rounds {
		peaks[i], lives[i], sizes[i] = float64(r.peak)/mib, float64(r.live)/mib, float64(r.size)/mib
	}
	rows = append(rows,
		rateRow(sc, "MirrorMaker 2, a second request right after the first (records/s)", n,
			pick(func(r bulkRound) bulkSample { return r.second }), mm2Bare, ">=", 1.0),
		roundsRow(sc, "agent's peak heap above idle (MiB) vs request size", peaks, sizes, "%.1f", "<=", 3),
		roundsRow(sc, "agent's peak reachable heap (GC-marked) above idle (MiB)", lives, sizes, "%.1f", "", 0),
		rateRow(sc, "floor: request transit only, publish->fetch->result (records/s)", n,
			pick(func(r bulkRound) bulkSample { return r.transit }), mm2Bare, "", 0),
		rateRow(sc, "floor: transit + Store.Write of the pre-encoded records (records/s)", n,
			pick(func(r bulkRound) bulkSample { return r.transitWrite }), mm2Bare, "", 0),
		rateRow(sc, "agent with no-op stages: transit + decoding (records/s)", n,
			pick(func(r bulkRound) bulkSample { return r.noop }), mm2Bare, "", 0),
		rateRow(sc, "MirrorMaker 2 agent against the transit+write floor (records/s)", n,
			pick(func(r bulkRound) bulkSample { return r.agent[mm2Family.tag] }),
			pick(func(r bulkRound) bulkSample { return r.transitWrite }), "", 0),
	)
	return rows, nil
}

// withBroker runs f with an env on a fresh embedded broker (or on the external cluster).
func (e *env) withBroker(ctx context.Context, f func(*env) error) error {
	if len(e.opts.brokers) > 0 {
		return f(e)
	}
	b, err := startBroker(ctx)
	if err != nil {
		return err
	}
	defer b.close()
	return f(&env{brokers: []string{b.addr}, brokerPID: b.cmd.Process.Pid, opts: e.opts, stderr: e.stderr})
}

// bulkBare times the bare writer on every family's records.
func (e *env) bulkBare(ctx context.Context, n int, br *bulkRound) error {
	for _, f := range bulkFamilies() {
		s, err := e.bareWrite(ctx, f.records("", "bulk-"+f.tag, n))
		if err != nil {
			return err
		}
		br.bare[f.tag] = s
	}
	return nil
}

// bulkAgent runs the agent in a child process (so that its heap is the agent's alone) and
// sends it each family's request; the first MirrorMaker 2 request is also measured for
// memory and followed at once by a second one.
func (e *env) bulkAgent(ctx context.Context, n, round int, br *bulkRound) error {
	cfg := e.config("bulk")
	profile := ""
	if e.opts.profiled == "bulk" && round == 0 {
		profile = e.opts.cpuProfile
	}
	a, err := e.startAgentProcess(ctx, cfg, profile, false)
	if err != nil {
		return err
	}
	defer a.stop()
	pub := newPublisher(e.brokers, cfg.RequestTopic)
	defer pub.Close()
	if _, err := roundTrip(ctx, a.watcher, pub, mm2Body("mm2-warmup", 1), "bulk-warmup", 30*time.Second); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	w := bareWriter(e.brokers, cfg.OffsetsTopic)
	err = warmTopic(ctx, w, n)
	w.Close()
	if err == nil {
		err = a.sync(ctx) // the view holds the warm-up records before anything is measured
	}
	if err != nil {
		return fmt.Errorf("warm up the offsets topic: %w", err)
	}
	pids := append(e.pids(), a.cmd.Process.Pid)
	for i, f := range bulkFamilies() {
		msg, err := requestMsg(f.body(fmt.Sprintf("bulk-%d", i), n), fmt.Sprintf("bulk-%d", i))
		if err != nil {
			return err
		}
		if len(msg.Value) > cfg.MaxRequestBytes {
			return fmt.Errorf("the %s request is %d bytes, above the %d-byte limit", f.tag, len(msg.Value), cfg.MaxRequestBytes)
		}
		var idle uint64
		if i == 0 {
			if idle, err = a.mark(ctx); err != nil {
				return err
			}
		}
		s, err := measureRequest(ctx, a.watcher, pub, msg, pids, a.sync)
		if err != nil {
			return fmt.Errorf("%s: %w", f.tag, err)
		}
		br.agent[f.tag] = s
		if i == 0 {
			peak, live, err := a.peak(ctx)
			if err != nil {
				return err
			}
			br.peak, br.live, br.size = peak-min(idle, peak), live-min(idle, live), len(msg.Value)
			second, err := requestMsg(f.body("bulk-second", n), "bulk-second")
			if err != nil {
				return err
			}
			if br.second, err = measureRequest(ctx, a.watcher, pub, second, pids, a.sync); err != nil {
				return fmt.Errorf("second request: %w", err)
			}
		}
	}
	return nil
}

// bulkTransit times a MirrorMaker 2 bulk request through the transit child, writing writeN
// records when not 0.
func (e *env) bulkTransit(ctx context.Context, n, writeN int) (bulkSample, error) {
	cfg := transitConfig{Brokers: e.brokers, RequestTopic: e.name("transit-requests"), ResultTopic: e.name("transit-results"),
		Partitions: 6, OffsetsTopic: e.name("transit-offsets"), WriteName: "bulk-transit", WriteN: writeN}
	t, err := e.startTransit(ctx, cfg)
	if err != nil {
		return bulkSample{}, err
	}
	defer t.stop()
	return e.floorRequest(ctx, t.watcher, cfg.RequestTopic, "bulk-transit", n, t.pid())
}

// bulkNoop times a MirrorMaker 2 bulk request through an agent process whose stages answer
// succeeded at once: the request's transit and decoding, nothing validated or written.
func (e *env) bulkNoop(ctx context.Context, n int) (bulkSample, error) {
	cfg := e.config("bulk-noop")
	a, err := e.startAgentProcess(ctx, cfg, "", true)
	if err != nil {
		return bulkSample{}, err
	}
	defer a.stop()
	return e.floorRequest(ctx, a.watcher, cfg.RequestTopic, "bulk-noop", n, a.cmd.Process.Pid)
}

// floorRequest warms a floor's process (pid) up with a one-offset request, then times a
// MirrorMaker 2 request of n offsets with id (also its connector's name).
func (e *env) floorRequest(ctx context.Context, w *resultWatcher, requestTopic, id string, n, pid int) (bulkSample, error) {
	pub := newPublisher(e.brokers, requestTopic)
	defer pub.Close()
	if _, err := roundTrip(ctx, w, pub, mm2Body("mm2-warmup", 1), "warmup-"+id, 30*time.Second); err != nil {
		return bulkSample{}, fmt.Errorf("warm-up: %w", err)
	}
	msg, err := requestMsg(mm2Body(id, n), id)
	if err != nil {
		return bulkSample{}, err
	}
	return measureRequest(ctx, w, pub, msg, append(e.pids(), pid), nil)
}

// measureRequest publishes msg and waits for its result: the wall time from publish to
// result and the CPU time of pids meanwhile. With settle, the CPU time runs on until settle
// returns: the agent's view holding the records the request wrote is part of its cost,
// whether the view reads them back after the result or takes them as it writes them.
func measureRequest(ctx context.Context, w *resultWatcher, pub *kafka.Writer, msg kafka.Message, pids []int, settle func(context.Context) error) (bulkSample, error) {
	reqID, _ := events.Header(&msg, events.HeaderPrefix+"id")
	cpu := startCPU(pids...)
	t0 := time.Now()
	if err := pub.WriteMessages(ctx, msg); err != nil {
		return bulkSample{}, fmt.Errorf("publish %q: %w", reqID, err)
	}
	got := w.wait(ctx, []string{reqID}, 4*time.Minute)
	if settle != nil {
		if err := settle(ctx); err != nil {
			return bulkSample{}, err
		}
	}
	procs := cpu.each()
	used := cpu.elapsed()
	if err := checkResults(got, 1); err != nil {
		return bulkSample{}, fmt.Errorf("request %q: %w", reqID, err)
	}
	if w.decode && len(got[reqID].stages) > 0 {
		fmt.Fprintf(os.Stderr, "%s  %s:%s\n", time.Now().Format("15:04:05.000"), reqID, stageMeans([]resultInfo{got[reqID]}))
	}
	return bulkSample{wall: got[reqID].at.Sub(t0), cpu: used, procs: procs}, nil
}
