package apply

import (
	"context"
	"log/slog"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// headerSubject is the binary-mode ce_subject attribute: a result's connector name.
const headerSubject = events.HeaderPrefix + "subject"

// result is one result of this migration's requests.
type result struct {
	id, typ, name string
	// failedStep and message are set for failed results only.
	failedStep, message string
	// plan is a planned result's plan.
	plan *events.Plan
}

// Results reads B's result topic from its start and keeps following it, remembering the
// results of one request source: by request id, and the latest per connector name.
type Results struct {
	source string
	log    *kafkaio.Log
	cancel context.CancelFunc
	done   chan error
	logger *slog.Logger

	mu     sync.Mutex
	byID   map[string]result
	latest map[string]result // by request series (requestSeries)
	// takers are the waves' publishers awaiting results, each with the ids of the results
	// that arrived since its last take.
	takers  map[*taker]struct{}
	changed chan struct{} // closed and replaced when a result arrives
}

// taker is one publisher's view of the results arriving (Results.newTaker): the waves
// published at once each take their own, so that one wave's take does not swallow the
// arrivals another wave awaits.
type taker struct {
	fresh []string
}

// OpenResults starts reading to's result topic and returns once the results present when it
// started are loaded.
func OpenResults(ctx context.Context, to target.Target, source string, logger *slog.Logger) (*Results, error) {
	r := &Results{source: source, logger: logger, byID: map[string]result{}, latest: map[string]result{},
		takers: map[*taker]struct{}{}, changed: make(chan struct{}), done: make(chan error, 1)}
	l, err := kafkaio.NewLog(kafkaio.Options{Brokers: to.Brokers, Transport: to.Transport, Logger: logger, Principal: to.Principal},
		to.ResultTopic, r.apply)
	if err != nil {
		return nil, err
	}
	r.log = l
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go func() { r.done <- l.Run(lctx) }()
	ready := make(chan error, 1)
	go func() { ready <- l.WaitReady(ctx) }()
	select {
	case err = <-ready:
	case err = <-r.done:
		r.done <- err
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close stops reading the result topic.
func (r *Results) Close() {
	r.cancel()
	<-r.done
}

func (r *Results) apply(msgs []kafka.Message) {
	var got []result
	for i := range msgs {
		m := &msgs[i]
		var id, src, typ, subject string
		for _, h := range m.Headers {
			switch h.Key {
			case events.HeaderRequestID:
				id = string(h.Value)
			case events.HeaderRequestSource:
				src = string(h.Value)
			case events.HeaderType:
				typ = string(h.Value)
			case headerSubject:
				subject = string(h.Value)
			}
		}
		if src != r.source || id == "" {
			continue
		}
		rr := result{id: id, typ: typ, name: subject}
		// A success's data says nothing the headers do not: it is not decoded, which keeps a
		// large migration's reader cheap. A failure has its step and message, a plan the plan.
		if typ != events.TypeCreateSucceeded {
			t, res, err := events.DecodeResult(m)
			if err != nil {
				r.logger.Warn("skip undecodable result", "request_id", id, "offset", m.Offset, "err", err)
				continue
			}
			rr.typ, rr.name, rr.failedStep, rr.message, rr.plan = t, res.Name, res.FailedStep, res.Message, res.Plan
		}
		got = append(got, rr)
	}
	if len(got) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rr := range got {
		r.byID[rr.id] = rr
		for t := range r.takers {
			t.fresh = append(t.fresh, rr.id)
		}
		if series, n := parseRequestID(rr.id); n > 0 && rr.typ != events.TypeCreatePlanned {
			r.latest[series] = rr
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// latestFor is the latest succeeded or failed result of a request of series (one
// connector's name on B, and what its requests create).
func (r *Results) latestFor(series string) (result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.latest[series]
	return res, ok
}

// newTaker starts noting the results that arrive for a publisher's take; done stops it.
func (r *Results) newTaker() (t *taker, done func()) {
	t = &taker{}
	r.mu.Lock()
	r.takers[t] = struct{}{}
	r.mu.Unlock()
	return t, func() {
		r.mu.Lock()
		delete(r.takers, t)
		r.mu.Unlock()
	}
}

// take returns the results among ids that have arrived since t's last take, and a channel
// closed when another one arrives. Only the new arrivals are looked at, not every id in
// flight: a migration of thousands of connectors takes its results in hundreds of small
// steps. A result always arrives after its id is in ids (it is added before the request is
// written), and after t was made (newTaker, before the first request).
func (r *Results) take(t *taker, ids map[string]*Entry) (map[string]result, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]result{}
	for _, id := range t.fresh {
		if _, ok := ids[id]; ok {
			out[id] = r.byID[id]
		}
	}
	t.fresh = t.fresh[:0]
	return out, r.changed
}

// Answered reports whether the result topic holds a result of request id (of this source):
// a request without one may still be carried out by B's agents.
func (r *Results) Answered(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.byID[id]
	return ok
}
