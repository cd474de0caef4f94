package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Progress hears about each connector once its outcome is known.
type Progress interface {
	// Start is called once with the number of selected connectors.
	Start(total int)
	// Done is called once per selected connector, one call at a time (the waves being
	// published at once call it in turn).
	Done(e *Entry)
	// Waiting is called every MigrateOptions.WaitReport while results are awaited, one call
	// at a time with Done; with waves published at once, each tells its own wave's wait.
	Waiting(w Wait)
	// Finish is called once at the end.
	Finish()
}

// Wait is where the wait for results stands.
type Wait struct {
	// Topic is the result topic read (Target.ResultTopic).
	Topic string
	// In is how many results of this run's requests arrived, Awaited how many requests
	// still have none.
	In, Awaited int
	// Left is the time left until the results are no longer awaited (the deadline plus
	// the grace); 0 without a deadline.
	Left time.Duration
}

type noProgress struct{}

func (noProgress) Start(int)    {}
func (noProgress) Done(*Entry)  {}
func (noProgress) Waiting(Wait) {}
func (noProgress) Finish()      {}

// publisher publishes the requests of one migration and collects their results.
type publisher struct {
	opts    Options
	results *Results
	// deadline is every request's deadline (events.ExtensionDeadline), zero for none: no
	// request is published from it on, and B's agents carry out none they read from it on.
	deadline time.Time
	// restB is B's Connect REST API, nil when not given: asked at the giveup when B's config
	// topic cannot be read (lookOnB).
	restB *connectrest.Client
	// published, when not nil, is called once, from run's goroutine, when every request of
	// the entries is published or will not be (the next wave may start publishing, and the
	// one wavesAhead after it stopping).
	published func()
	// window bounds the requests in flight of every wave being published (Concurrency).
	window *window
	// timeout, when not zero, sets deadline once the first requests have room in the window:
	// a wave waiting for the room the waves before it hold does not spend its requests' time.
	timeout time.Duration
}

// window bounds the requests in flight across the waves published at once: a wave publishes
// as soon as it is stopped and the wave before it is published, into the room the waves
// before it leave as their results arrive, so that B's agents are fed without a pause at
// each wave's last results, and never more than Concurrency requests are in flight.
type window struct {
	mu    sync.Mutex
	free  int
	freed chan struct{} // closed and replaced when room is given back
}

func newWindow(size int) *window { return &window{free: size, freed: make(chan struct{})} }

// take takes room for up to n requests, as much as is free, and returns how much it took and
// a channel closed when room is given back.
func (w *window) take(n int) (int, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = max(0, min(n, w.free))
	w.free -= n
	return n, w.freed
}

// await takes room for up to n requests (n > 0) once some is free, and returns how much it
// took: 0 when ctx ends first.
func (w *window) await(ctx context.Context, n int) int {
	for {
		k, freed := w.take(n)
		if k > 0 {
			return k
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return 0
		}
	}
}

// give gives back room for n requests.
func (w *window) give(n int) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.free += n
	close(w.freed)
	w.freed = make(chan struct{})
}

// run publishes a request for every entry with a body, with room for it in the window (at
// most opts.Concurrency in flight across the waves), and fills in each entry's outcome. Publishing stops at the deadline; results are awaited until
// the deadline plus opts.Grace, the time a request that B's agent took up just before its
// deadline needs to finish. A request still without a result then is failed: past its
// deadline B's agents refuse it, so it will not be carried out. A run cut short by ctx (an
// interrupt) reports the requests in flight pending: B's agent may still carry them out.
func (p *publisher) run(ctx context.Context, entries []*Entry) (publishing time.Time) {
	prog := p.opts.Progress
	if prog == nil {
		prog = noProgress{}
	}
	prog.Start(len(entries))
	defer prog.Finish()
	queue := p.queue(entries, prog)
	if p.window == nil {
		p.window = newWindow(p.opts.Concurrency)
	}
	// held is the room taken in the window, given back as requests leave inflight; ready the
	// part of it taken before the first request.
	held := 0
	defer func() { p.window.give(held) }()
	if len(queue) > 0 {
		held = p.window.await(ctx, len(queue))
	}
	ready := held
	if p.timeout > 0 {
		p.deadline = time.Now().Add(p.timeout)
	}
	pubCtx, waitCtx := ctx, ctx
	if !p.deadline.IsZero() {
		var cancel, cancelWait context.CancelFunc
		pubCtx, cancel = context.WithDeadline(ctx, p.deadline)
		defer cancel()
		waitCtx, cancelWait = context.WithDeadline(ctx, p.giveUp())
		defer cancelWait()
	}
	w := p.requestWriter()
	defer w.Close()
	var tick <-chan time.Time
	if p.opts.WaitReport > 0 {
		t := time.NewTicker(p.opts.WaitReport)
		defer t.Stop()
		tick = t.C
	}
	t, untake := p.results.newTaker()
	defer untake()
	inflight := map[string]*Entry{}
	answered := 0
	allPublished := func() {
		if p.published != nil && len(queue) == 0 {
			p.published()
			p.published = nil
		}
	}
	defer allPublished()
	for len(queue) > 0 || len(inflight) > 0 {
		allPublished()
		if held-ready > len(inflight) {
			p.window.give(held - ready - len(inflight))
			held = ready + len(inflight)
		}
		var freed, pubDone <-chan struct{}
		if len(queue) > 0 && pubCtx.Err() == nil {
			n, fr := ready, (<-chan struct{})(nil)
			if ready = 0; n == 0 {
				n, fr = p.window.take(len(queue))
			}
			if n > 0 {
				held += n
				batch := queue[:n]
				queue = queue[n:]
				if publishing.IsZero() {
					publishing = time.Now().UTC()
				}
				p.publish(pubCtx, w, batch, inflight, prog)
				continue
			}
			freed, pubDone = fr, pubCtx.Done() // no room: the waves before hold it all
		}
		got, changed := p.results.take(t, inflight)
		if len(got) > 0 {
			answered += len(got)
			p.settle(got, inflight, prog)
			continue
		}
		if pubCtx.Err() != nil {
			for _, e := range queue {
				p.finish(prog, e, OutcomeFailed, "publish_request", fleet.Textf("not published: %v", p.cutShort(ctx)))
			}
			queue = nil
		}
		if waitCtx.Err() != nil {
			p.settleUnanswered(ctx, inflight, prog)
			return publishing
		}
		if len(inflight) == 0 && freed == nil {
			continue
		}
		select {
		case <-changed:
		case <-freed:
		case <-pubDone:
		case <-waitCtx.Done():
		case <-tick:
			wait := Wait{Topic: p.opts.To.ResultTopic, In: answered, Awaited: len(inflight)}
			if d, ok := waitCtx.Deadline(); ok {
				wait.Left = time.Until(d).Round(time.Second)
			}
			prog.Waiting(wait)
		}
	}
	return publishing
}

// requestWriter is the writer of the requests to B's request topic.
func (p *publisher) requestWriter() *kafka.Writer {
	codec, _ := p.opts.To.Compression.Codec() // checked by validateTarget
	// BatchBytes: kafka-go refuses a message above it by its size before compression (1 MiB
	// by default), and with it every other message of the same call.
	w := &kafka.Writer{Addr: kafka.TCP(p.opts.To.Brokers...), Topic: p.opts.To.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000, Compression: codec,
		BatchBytes: int64(p.opts.To.MaxRequestBytes) + 1<<20}
	if p.opts.To.Transport != nil {
		w.Transport = p.opts.To.Transport
	}
	return w
}

// settleUnanswered settles the requests in flight when the run stops awaiting results,
// after a look at B where it can tell whether they created their connectors.
func (p *publisher) settleUnanswered(ctx context.Context, inflight map[string]*Entry, prog Progress) {
	var seen map[string]onB
	why := ""
	if len(inflight) > 0 && !p.opts.DryRun && !p.deadline.IsZero() && (ctx.Err() == nil || !time.Now().Before(p.giveUp())) {
		// Failed only for a request that B shows did not create its connector.
		seen, why = p.lookOnB(ctx, inflight)
	}
	for _, e := range inflight {
		p.unanswered(ctx, prog, e, seen[e.RequestID], why)
	}
}

// giveUp is every request's giveup extension (events.ExtensionGiveUp): the deadline plus the
// grace, when the run stops awaiting results and reports those without one failed. B's agents
// roll back a request whose writes run past it, so that the report stays true. Zero without a
// deadline.
func (p *publisher) giveUp() time.Time {
	if p.deadline.IsZero() {
		return time.Time{}
	}
	return p.deadline.Add(p.opts.Grace)
}

// cutShort says why the run stopped publishing.
func (p *publisher) cutShort(ctx context.Context) fleet.Text {
	if ctx.Err() != nil {
		return fleet.Plain("the run was interrupted")
	}
	return fleet.Textf("the run's %s ran out", fleet.Give{Setting: fleet.Timeout, Value: p.opts.Timeout.String()})
}

// unanswered finishes an entry whose request got no result: failed when its deadline passed,
// the grace after it was waited out in full (B's agents refuse it from its deadline on), and
// B shows that it did not create the connector (seen, why: lookOnB), else pending, with what
// to do.
func (p *publisher) unanswered(ctx context.Context, prog Progress, e *Entry, seen onB, why string) {
	switch {
	case p.opts.DryRun:
		// A dry run creates nothing, whatever becomes of its request: it is never pending.
		why := "the run was interrupted"
		if ctx.Err() == nil {
			why = fmt.Sprintf("none by the request's deadline %s (+%s)", p.deadline.UTC().Format(time.RFC3339), p.opts.Grace)
		}
		p.finish(prog, e, OutcomeFailed, "await_result", fleet.Textf(
			"no plan received: %s. A dry run creates nothing on B; run it again for the plan (check that B's agents run and write their results to %q)",
			why, p.opts.To.ResultTopic))
	case p.deadline.IsZero():
		p.finish(prog, e, OutcomePending, "await_result", fleet.Textf(
			"no result yet, and the request has no deadline (%s): B's agent carries it out whenever it reads it. "+
				"Before acting on A, run the same command again to learn its outcome (request id %s)", fleet.Give{Setting: fleet.Timeout, Value: "0"}, e.RequestID))
	case ctx.Err() != nil && time.Now().Before(p.deadline.Add(p.opts.Grace)):
		p.finish(prog, e, OutcomePending, "await_result", fleet.Textf(
			"the run was interrupted before the request's result: B's agent may still carry it out until its deadline %s. "+
				"Before acting on A, run the same command again after %s to learn its outcome (request id %s)",
			p.deadline.UTC().Format(time.RFC3339), p.deadline.Add(p.opts.Grace).UTC().Format(time.RFC3339), e.RequestID))
	default:
		p.unansweredOnB(prog, e, seen, why)
	}
}

// queue gives each entry to publish its request id and returns them in order. Entries without
// a body (skipped on A, or whose sink offsets could not be computed) and connectors an earlier
// run created (never written twice) are reported at once instead; a connector whose last
// result failed gets the next attempt's id.
func (p *publisher) queue(entries []*Entry, prog Progress) []*Entry {
	var queue []*Entry
	for _, e := range entries {
		if e.Body == nil {
			prog.Done(e)
			continue
		}
		if e.Local {
			e.Outcome = OutcomeSucceeded
			if p.opts.DryRun {
				e.Outcome = OutcomePlanned
			}
			e.Message = fleet.Plain("no offsets on A: nothing to place on B")
			prog.Done(e)
			continue
		}
		series := requestSeries(p.opts.MigrationID, e.TargetName, e.Body.Create)
		attempt := 1
		if prev, ok := p.results.latestFor(series); ok {
			if prev.typ == events.TypeCreateSucceeded {
				e.Outcome, e.RequestID = OutcomeSucceeded, prev.id
				prog.Done(e)
				continue
			}
			attempt = attemptOf(prev.id) + 1
		}
		e.RequestID = requestID(p.opts.MigrationID, e.TargetName, e.Body.Create, attempt)
		if p.opts.DryRun {
			e.RequestID = fmt.Sprintf("%s/%s/dry-run-%d", p.opts.MigrationID, e.TargetName, time.Now().UnixNano())
		}
		queue = append(queue, e)
	}
	return queue
}

// firstWrite is how many requests publish writes in its first call; each call after it
// writes twice as many as the one before. B's agents start on the first requests of a large
// window while the rest are encoded and written (a window of 1,000 written in one call left
// them idle while every body was encoded, 15-20 ms on a 2-core machine; in calls, its first
// result came about 25 ms sooner), and a window of n requests takes about log2(n/firstWrite)
// calls, not one a request. A window of up to firstWrite (the default Concurrency is 16) is
// one call, as before.
const firstWrite = 32

// chunkWrite is one WriteMessages call of publish, made in a goroutine of its own: sent's
// requests msgs, and once done is closed, the call's error and whether ctx had ended by then.
type chunkWrite struct {
	sent []*Entry
	msgs []kafka.Message
	err  error
	cut  bool
	done chan struct{}
}

// publish writes the requests of batch and adds them to inflight; a request that cannot be
// encoded, or that B refused, is finished as failed at publish_request. The requests are
// written in calls of growing size (firstWrite), each started as soon as its requests are
// encoded, so that the first requests reach B while the rest are encoded; publish returns
// once every call has its answer, which is judged as one call's (write), in their order.
func (p *publisher) publish(ctx context.Context, w *kafka.Writer, batch []*Entry, inflight map[string]*Entry, prog Progress) {
	source := fleet.RequestSourcePrefix + p.opts.MigrationID
	var calls []*chunkWrite
	cur, size, total := &chunkWrite{}, firstWrite, 0
	start := func() {
		if len(cur.msgs) == 0 {
			return
		}
		c := cur
		c.done = make(chan struct{})
		calls = append(calls, c)
		go func() {
			defer close(c.done)
			c.err = w.WriteMessages(ctx, c.msgs...)
			c.cut = ctx.Err() != nil
		}()
		cur, size = &chunkWrite{}, 2*size
	}
	for _, e := range batch {
		body, err := e.Body.MarshalJSON()
		var m kafka.Message
		if err == nil {
			m, err = events.RequestMessage("", body, events.RequestOptions{ID: e.RequestID, Source: source,
				DryRun: p.opts.DryRun, Key: e.TargetName, Deadline: p.deadline, GiveUp: p.giveUp()})
		}
		if err == nil && len(m.Value) > p.opts.To.MaxRequestBytes {
			err = fmt.Errorf("the request is %d bytes, above B's agents' OFFSETAGENT_MAX_REQUEST_BYTES (%d)", len(m.Value), p.opts.To.MaxRequestBytes)
		}
		if err != nil {
			p.finish(prog, e, OutcomeFailed, "publish_request", fleet.Textf("%v", err))
			continue
		}
		cur.msgs = append(cur.msgs, m)
		cur.sent = append(cur.sent, e)
		inflight[e.RequestID] = e
		total++
		if len(cur.msgs) == size {
			start()
		}
	}
	start()
	for _, c := range calls {
		<-c.done
		// Judged as the requests of one call: a refused request of several is written
		// again alone, as it was when the batch was one call.
		p.judge(ctx, w, c.sent, c.msgs, c.err, c.cut, total > 1, inflight, prog)
	}
}

// write writes msgs, the requests of sent, in one call, and judges the answer (judge).
func (p *publisher) write(ctx context.Context, w *kafka.Writer, sent []*Entry, msgs []kafka.Message, inflight map[string]*Entry, prog Progress) {
	if len(msgs) == 0 {
		return
	}
	err := w.WriteMessages(ctx, msgs...)
	p.judge(ctx, w, sent, msgs, err, ctx.Err() != nil, len(msgs) > 1, inflight, prog)
}

// judge judges each request of a call that wrote msgs, the requests of sent, and ended in
// err (cut: ctx had ended by then), by its own answer: one written, or whose write may have
// appended it (its result, or its deadline, then tells its outcome), stays in flight; one
// that B refused is failed. B refuses a partition's record batch as a whole (above the
// topic's max.message.bytes, say), so the refused requests of a publish of several are
// written again one by one: one bad request fails alone, not the others that shared its
// batch.
func (p *publisher) judge(ctx context.Context, w *kafka.Writer, sent []*Entry, msgs []kafka.Message, err error, cut, several bool, inflight map[string]*Entry, prog Progress) {
	if err == nil || cut {
		// Written; or cut off while writing, and the broker may have appended the requests.
		// They stay in flight, and their outcome is what their result (or deadline) makes it.
		return
	}
	var errs kafka.WriteErrors
	if !errors.As(err, &errs) || len(errs) != len(msgs) {
		// Refused before anything was sent (the topic's metadata, a message above the
		// writer's limit): nothing was written.
		errs = make(kafka.WriteErrors, len(msgs))
		for i := range errs {
			errs[i] = err
		}
	} else {
		for i, werr := range errs {
			if werr != nil && mayBeWritten(werr) {
				// Left in flight: re-publishing is not needed to learn its fate (B's agents
				// answer each request id once), and its deadline bounds the wait.
				p.opts.Logger.Warn("request write unconfirmed: awaiting its result", "connector", sent[i].TargetName,
					"request_id", sent[i].RequestID, "err", werr)
				errs[i] = nil
			}
		}
	}
	var refused []int
	for i, werr := range errs {
		if werr != nil {
			refused = append(refused, i)
		}
	}
	for _, i := range refused {
		if several && ctx.Err() == nil {
			p.write(ctx, w, sent[i:i+1], msgs[i:i+1], inflight, prog)
			continue
		}
		e := sent[i]
		delete(inflight, e.RequestID)
		p.finish(prog, e, OutcomeFailed, "publish_request", fleet.Textf("publish to %q: B refused the request: %v", p.opts.To.RequestTopic, errs[i]))
	}
}

// mayBeWritten reports whether a write that ended in err (for one message, after the
// writer's retries) may still have appended the message: anything but a broker's answer
// that refuses the records. REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND come after
// the append; an unknown server error, a lost connection or a timeout leave it unknown.
func mayBeWritten(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return true
	}
	switch kerr {
	case kafka.RequestTimedOut, kafka.NotEnoughReplicasAfterAppend, kafka.Unknown:
		return true
	}
	return false
}

// settle finishes the in-flight requests whose results arrived.
func (p *publisher) settle(got map[string]result, inflight map[string]*Entry, prog Progress) {
	for id, r := range got {
		e := inflight[id]
		delete(inflight, id)
		switch r.typ {
		case events.TypeCreateSucceeded:
			p.finish(prog, e, OutcomeSucceeded, "", fleet.Text{})
		case events.TypeCreatePlanned:
			e.Plan = r.plan
			p.finish(prog, e, OutcomePlanned, "", fleet.Text{})
		default:
			p.finish(prog, e, OutcomeFailed, r.failedStep, fleet.Plain(r.message))
		}
	}
}

// finish records an entry's outcome, its message scrubbed of the config's secrets, and
// reports it.
func (p *publisher) finish(prog Progress, e *Entry, outcome Outcome, step string, msg fleet.Text) {
	e.Outcome, e.FailedStep, e.Message = outcome, step, fleet.ScrubText(p.opts.Registry, e.Body.Config, msg)
	prog.Done(e)
}
