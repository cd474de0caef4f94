package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
)

// Progress hears about each connector once its outcome is known.
type Progress interface {
	// Start is called once with the number of selected connectors.
	Start(total int)
	// Done is called once per selected connector, from one goroutine.
	Done(e *Entry)
	// Finish is called once at the end.
	Finish()
}

type noProgress struct{}

func (noProgress) Start(int)   {}
func (noProgress) Done(*Entry) {}
func (noProgress) Finish()     {}

// publisher publishes the requests of one migration and collects their results.
type publisher struct {
	opts    MigrateOptions
	results *resultsLog
}

// run publishes a request for every entry with a body, at most opts.Concurrency in flight, and
// fills in each entry's outcome; when ctx ends first, the rest fail.
func (p *publisher) run(ctx context.Context, entries []*Entry) (publishing time.Time) {
	prog := p.opts.Progress
	if prog == nil {
		prog = noProgress{}
	}
	prog.Start(len(entries))
	defer prog.Finish()
	queue := p.queue(entries, prog)
	codec, _ := p.opts.To.Compression.Codec() // checked by validateTarget
	// BatchBytes: kafka-go refuses a message above it by its size before compression (1 MiB
	// by default), and with it every other message of the same call.
	w := &kafka.Writer{Addr: kafka.TCP(p.opts.To.Brokers...), Topic: p.opts.To.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000, Compression: codec,
		BatchBytes: int64(p.opts.To.MaxRequestBytes) + 1<<20}
	if p.opts.To.Transport != nil {
		w.Transport = p.opts.To.Transport
	}
	defer w.Close()
	inflight := map[string]*Entry{}
	for len(queue) > 0 || len(inflight) > 0 {
		if n := min(p.opts.Concurrency-len(inflight), len(queue)); n > 0 && ctx.Err() == nil {
			batch := queue[:n]
			queue = queue[n:]
			if publishing.IsZero() {
				publishing = time.Now().UTC()
			}
			p.publish(ctx, w, batch, inflight, prog)
			continue
		}
		got, changed := p.results.take(inflight)
		if len(got) > 0 {
			p.settle(got, inflight, prog)
			continue
		}
		if ctx.Err() != nil {
			for _, e := range inflight {
				p.finish(prog, e, OutcomeFailed, "await_result", "no result before the run's timeout")
			}
			for _, e := range queue {
				p.finish(prog, e, OutcomeFailed, "publish_request", "not published before the run's timeout")
			}
			return publishing
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
	return publishing
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
		attempt := 1
		if prev, ok := p.results.latestFor(e.TargetName); ok {
			if prev.typ == events.TypeCreateSucceeded {
				e.Outcome, e.RequestID = OutcomeSucceeded, prev.id
				prog.Done(e)
				continue
			}
			attempt = attemptOf(prev.id) + 1
		}
		e.RequestID = requestID(p.opts.MigrationID, e.TargetName, attempt)
		if p.opts.DryRun {
			e.RequestID = fmt.Sprintf("%s/%s/dry-run-%d", p.opts.MigrationID, e.TargetName, time.Now().UnixNano())
		}
		queue = append(queue, e)
	}
	return queue
}

// publish writes the requests of batch in one call and adds them to inflight; a request that
// cannot be encoded or written is finished as failed at publish_request.
func (p *publisher) publish(ctx context.Context, w *kafka.Writer, batch []*Entry, inflight map[string]*Entry, prog Progress) {
	source := RequestSourcePrefix + p.opts.MigrationID
	msgs := make([]kafka.Message, 0, len(batch))
	for _, e := range batch {
		body, err := e.Body.MarshalJSON()
		var m kafka.Message
		if err == nil {
			m, err = events.RequestMessage("", body, events.RequestOptions{ID: e.RequestID, Source: source,
				DryRun: p.opts.DryRun, Key: e.TargetName})
		}
		if err == nil && len(m.Value) > p.opts.To.MaxRequestBytes {
			err = fmt.Errorf("the request is %d bytes, above B's agents' OFFSETAGENT_MAX_REQUEST_BYTES (%d)", len(m.Value), p.opts.To.MaxRequestBytes)
		}
		if err != nil {
			p.finish(prog, e, OutcomeFailed, "publish_request", err.Error())
			continue
		}
		msgs = append(msgs, m)
		inflight[e.RequestID] = e
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		for _, e := range batch {
			if inflight[e.RequestID] == e {
				delete(inflight, e.RequestID)
				p.finish(prog, e, OutcomeFailed, "publish_request", fmt.Sprintf("publish to %q: %v", p.opts.To.RequestTopic, err))
			}
		}
	}
}

// settle finishes the in-flight requests whose results arrived.
func (p *publisher) settle(got map[string]result, inflight map[string]*Entry, prog Progress) {
	for id, r := range got {
		e := inflight[id]
		delete(inflight, id)
		switch r.typ {
		case events.TypeCreateSucceeded:
			p.finish(prog, e, OutcomeSucceeded, "", "")
		case events.TypeCreatePlanned:
			e.Plan = r.plan
			p.finish(prog, e, OutcomePlanned, "", "")
		default:
			p.finish(prog, e, OutcomeFailed, r.failedStep, r.message)
		}
	}
}

// finish records an entry's outcome, its message scrubbed of the config's secrets, and
// reports it.
func (p *publisher) finish(prog Progress, e *Entry, outcome Outcome, step, msg string) {
	e.Outcome, e.FailedStep, e.Message = outcome, step, scrub(p.opts.Registry, e.Body.Config, msg)
	prog.Done(e)
}
