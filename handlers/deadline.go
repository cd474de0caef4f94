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

// pastDeadline returns a permanent Failure when now is at or after req's deadline
// (events.ExtensionDeadline), or its giveup when that comes first, nil when the request has
// neither or they are still ahead.
func pastDeadline(req *events.Request, now time.Time) error {
	deadline := req.Deadline
	if !req.GiveUp.IsZero() && (deadline.IsZero() || req.GiveUp.Before(deadline)) {
		deadline = req.GiveUp
	}
	if deadline.IsZero() || now.Before(deadline) {
		return nil
	}
	return &Failure{Code: CodeDeadline, Reason: kafkaio.ReasonPermanent, Message: fmt.Sprintf(
		"the request's deadline %s passed %s before it could be carried out: nothing was written; its sender reports it failed",
		deadline.UTC().Format(time.RFC3339Nano), now.Sub(deadline).Round(time.Millisecond))}
}

// withGiveUp returns the context of a request's destructive stages: ctx, ended at the
// request's giveup (events.ExtensionGiveUp) when it has one. No write begins once it has
// ended (Creator.landed), and a write in flight then is judged by pastGiveUp.
func withGiveUp(ctx context.Context, req *events.Request) (context.Context, context.CancelFunc) {
	if req.GiveUp.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, req.GiveUp)
}

// pastGiveUp is the error of a destructive stage that ended (with err, nil when it succeeded)
// at now: err while the request's giveup (events.ExtensionGiveUp) is ahead or there is none;
// at or past it, a permanent Failure with CodeDeadline, whatever the stage did, so that the
// cleanup rolls back its writes. From the giveup on, the request's sender reports it failed:
// a write acknowledged after it, the last config record above all (once it is in the topic,
// the connector exists), may have landed after that report, and must not stay. A request
// refused before its first write (pastDeadline) keeps its Failure: it wrote nothing.
func pastGiveUp(req *events.Request, err error, now time.Time) error {
	if req.GiveUp.IsZero() || now.Before(req.GiveUp) {
		return err
	}
	var f *Failure
	if errors.As(err, &f) && f.Code == CodeDeadline {
		return err
	}
	cause := fmt.Sprintf("its writes ended %s after it", now.Sub(req.GiveUp).Round(time.Millisecond))
	if err != nil {
		cause = err.Error()
	}
	return &Failure{Code: CodeDeadline, Reason: kafkaio.ReasonPermanent, Message: fmt.Sprintf(
		"the request's writes ran past its giveup %s, from which its sender reports it failed: what they wrote is rolled back (%s)",
		req.GiveUp.UTC().Format(time.RFC3339Nano), cause)}
}

// PastDeadline is the failed outcome of a request read at or after its deadline, before any
// stage ran (nil while the deadline is ahead or there is none). It touches nothing.
func PastDeadline(req *events.Request, now time.Time) *Outcome {
	err := pastDeadline(req, now)
	if err == nil {
		return nil
	}
	f := err.(*Failure)
	return Rejected(req.ID, req.Source, req.Data.Name, f.Code, f.Message)
}
