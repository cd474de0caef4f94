package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// onB is what B says, at the requests' giveup, of the connector of a request without a
// result.
type onB int

const (
	// notCreated: B's config topic holds no live connector record of the request. B's agents
	// begin no write past the giveup less the reserve kept for the result, and roll back one
	// acknowledged later: it will not be created.
	notCreated onB = iota
	// created: the connector record the request wrote is live in B's config topic.
	created
	// existsOnB: B's config topic could not be read, and B's Connect REST API knows the
	// connector.
	existsOnB
	// unknownOnB: B could not be asked.
	unknownOnB
)

// giveUpCheckTimeout bounds the look at B for the requests without a result at the giveup.
const giveUpCheckTimeout = 30 * time.Second

// lookOnB tells, for each request of inflight (by request id), whether it created its
// connector on B: it reads B's config topic to its end for the connector records (their
// request marks, offsetstore.RequestMark), or, when that is refused or fails, asks B's Connect
// REST API when it is given. why says what kept B from being asked, for the unknown ones.
//
// It looks only from the requests' giveup on, when no write of theirs is in flight: B's agents
// begin none from the giveup less the reserve kept for the result, and each one they began
// before asks the broker to answer before then (its Produce request's own timeout ends
// before it: Kafka appends the records, waits for the replicas no longer and answers). So,
// from brokers that settle each Produce request within its timeout, a config record of the
// request is in B's config topic at the look or never (docs/operations.md, "A write in flight
// at the giveup", for one that does not).
func (p *publisher) lookOnB(ctx context.Context, inflight map[string]*Entry) (seen map[string]onB, why string) {
	ctx = context.WithoutCancel(ctx)
	kafkaio.Sleep(ctx, time.Until(p.giveUp())) // ctx cannot end: bounded by the giveup
	ctx, cancel := context.WithTimeout(ctx, giveUpCheckTimeout)
	defer cancel()
	seen = make(map[string]onB, len(inflight))
	keys := make([]string, 0, len(inflight))
	for _, e := range inflight {
		keys = append(keys, "connector-"+e.TargetName)
	}
	to := p.opts.To
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: to.Brokers, Transport: to.Transport, Principal: to.Principal})
	// A refused Read is named at once, not retried by the reader until the bound.
	err := kafkaio.RequireTopicOps(ctx, cl, to.Principal, []kafkaio.TopicOps{{Topic: to.ConfigTopic, Ops: []string{kafkaio.OpRead}}})
	var recs map[string]offsetstore.ConfigRecord
	if err == nil {
		recs, err = offsetstore.ReadConfigRecords(ctx, kafkaio.Options{Brokers: to.Brokers, Transport: to.Transport, Logger: p.opts.Logger, Principal: to.Principal},
			to.ConfigTopic, keys)
	}
	if err == nil {
		source := fleet.RequestSourcePrefix + p.opts.MigrationID
		for id, e := range inflight {
			if r := recs["connector-"+e.TargetName]; r.Live && r.Writer.IsRequest(source, id) {
				seen[id] = created
			}
		}
		return seen, ""
	}
	why = fmt.Sprintf("B's config topic %q could not be read: %v", to.ConfigTopic, err)
	if p.restB == nil {
		for id := range inflight {
			seen[id] = unknownOnB
		}
		return seen, why
	}
	var restErr error
	for id, e := range inflight {
		exists, rerr := p.restB.Exists(ctx, e.TargetName)
		switch {
		case rerr != nil:
			seen[id] = unknownOnB
			restErr = rerr
		case exists:
			seen[id] = existsOnB
		}
	}
	if restErr != nil {
		why += fmt.Sprintf("; nor B's Connect REST API: %v", restErr)
	}
	return seen, why
}

// unansweredOnB is the outcome of a request without a result at the giveup, by what B says
// of its connector (lookOnB): failed only when B shows it was not created.
func (p *publisher) unansweredOnB(prog Progress, e *Entry, seen onB, why string) {
	giveUp := p.giveUp().UTC().Format(time.RFC3339)
	switch seen {
	case created:
		p.finish(prog, e, OutcomePending, "await_result", fleet.Textf(
			"no result by the request's giveup %s, but the connector exists on B: B's agent created it (its config record, of request id %s, is in B's config topic %q). "+
				"Do not resume it on A. B's agent publishes the result once B takes it: run the same command again to learn it, or check the connector on B (GET /connectors/%s/status)",
			giveUp, e.RequestID, p.opts.To.ConfigTopic, e.TargetName))
	case existsOnB:
		p.finish(prog, e, OutcomePending, "await_result", fleet.Textf(
			"no result by the request's giveup %s, but the connector exists on B: B's Connect REST API knows it (%s). "+
				"Do not resume it on A. Run the same command again to learn the request's outcome (request id %s), or check the connector on B (GET /connectors/%s/status)",
			giveUp, why, e.RequestID, e.TargetName))
	case unknownOnB:
		p.finish(prog, e, OutcomePending, "await_result", fleet.Textf(
			"no result by the request's giveup %s, and whether the connector exists on B is not known (%s). "+
				"Before acting on A, check B: GET /connectors/%s on B's Connect REST API, or a record of request id %s under the key connector-%s in B's config topic %q; "+
				"running the same command again learns the outcome once the result is out",
			giveUp, why, e.TargetName, e.RequestID, e.TargetName, p.opts.To.ConfigTopic))
	default:
		p.finish(prog, e, OutcomeFailed, "await_result", fleet.Textf(
			"no result by the request's deadline %s (+%s): B's agents refuse it from then on, so it will not be created (B's config topic %q holds no connector record of it)",
			p.deadline.UTC().Format(time.RFC3339), p.opts.Grace, p.opts.To.ConfigTopic))
	}
}
