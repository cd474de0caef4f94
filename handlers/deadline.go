package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// CodeDeadline is the error_code of a request refused because its deadline passed (HTTP 408
// Request Timeout: the client stopped waiting for it).
const CodeDeadline = 408

// DefaultResultReserve is Options.ResultReserve when it is 0.
const DefaultResultReserve = 5 * time.Second

// pastDeadline returns a permanent Failure when now is at or after req's deadline
// (events.ExtensionDeadline), or its giveup, or writesEnd (the end of its writes, see
// Creator.writesEnd), whichever comes first; nil when the request has none or they are still
// ahead.
func pastDeadline(req *events.Request, writesEnd, now time.Time) error {
	deadline := req.Deadline
	for _, t := range []time.Time{req.GiveUp, writesEnd} {
		if !t.IsZero() && (deadline.IsZero() || t.Before(deadline)) {
			deadline = t
		}
	}
	if deadline.IsZero() || now.Before(deadline) {
		return nil
	}
	return &Failure{Code: CodeDeadline, Reason: kafkaio.ReasonPermanent, Message: fmt.Sprintf(
		"the request's deadline %s passed %s before it could be carried out: nothing was written; its sender reports it failed",
		deadline.UTC().Format(time.RFC3339Nano), now.Sub(deadline).Round(time.Millisecond))}
}

// writesEnd is when a request's writes must be done (zero for a request without a giveup,
// events.ExtensionGiveUp): its giveup less the reserve its result needs to go out before it,
// Options.ResultReserve, or half its sender's grace (the giveup less the deadline) when that
// is shorter. From the giveup on, the sender reports the request failed: a connector whose
// last write is acknowledged only then, or whose result goes out only then, would exist on a
// cluster its sender reported it will not be created on.
func (c *Creator) writesEnd(req *events.Request) time.Time {
	if req.GiveUp.IsZero() {
		return time.Time{}
	}
	reserve := c.opts.ResultReserve
	if grace := req.GiveUp.Sub(req.Deadline); !req.Deadline.IsZero() && grace > 0 {
		reserve = min(reserve, grace/2)
	}
	return req.GiveUp.Add(-reserve)
}

// withWritesEnd returns the context of a request's destructive stages: ctx, ended at end
// (Creator.writesEnd) when it is not zero. No write begins once it has ended
// (Creator.landed), and a write in flight then is judged by pastGiveUp.
func withWritesEnd(ctx context.Context, end time.Time) (context.Context, context.CancelFunc) {
	if end.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, end)
}

// pastGiveUp is the error of a destructive stage that ended (with err, nil when it succeeded)
// at now: err while writesEnd (Creator.writesEnd) is ahead or zero; at or past it, a
// permanent Failure with CodeDeadline, whatever the stage did, so that the cleanup rolls back
// its writes. From the request's giveup on, its sender reports it failed: a write
// acknowledged past writesEnd, the last config record above all (once it is in the topic,
// the connector exists), leaves its result no time to go out before that report, and must
// not stay. A request refused before its first write (pastDeadline) keeps its Failure: it
// wrote nothing.
func pastGiveUp(req *events.Request, writesEnd time.Time, err error, now time.Time) error {
	if writesEnd.IsZero() || now.Before(writesEnd) {
		return err
	}
	var f *Failure
	if errors.As(err, &f) && f.Code == CodeDeadline {
		return err
	}
	cause := fmt.Sprintf("its writes ended %s after it", now.Sub(writesEnd).Round(time.Millisecond))
	if err != nil {
		cause = err.Error()
	}
	return &Failure{Code: CodeDeadline, Reason: kafkaio.ReasonPermanent, Message: fmt.Sprintf(
		"the request's writes ran past its giveup %s less the %s kept for its result to go out, from which its sender reports it failed: what they wrote is rolled back (%s)",
		req.GiveUp.UTC().Format(time.RFC3339Nano), req.GiveUp.Sub(writesEnd), cause)}
}

// PastDeadline is the failed outcome of a request read at or after its deadline, before any
// stage ran (nil while the deadline is ahead or there is none). It touches nothing.
func PastDeadline(req *events.Request, now time.Time) *Outcome {
	err := pastDeadline(req, time.Time{}, now)
	if err == nil {
		return nil
	}
	f := err.(*Failure)
	return Rejected(req.ID, req.Source, req.Data.Name, f.Code, f.Message)
}
