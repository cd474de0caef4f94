package handlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// nothingWritten is what the message of a refusal before any stage says of the request's
// writes (PastDeadline's); Refuse replaces it when an interrupted attempt was rolled back.
const nothingWritten = "nothing was written"

// Refuse settles a request the agent turns away before its first stage, whose outcome out
// (Rejected's, PastDeadline's) it is about to publish: a source not allowed, a deadline
// passed, a permission missing, a record that no longer decodes. The request may be the
// redelivery of an attempt that was interrupted (the agent died mid-way) and left its intent:
// the result's publication removes that intent, so the attempt is rolled back first, under
// the connector's claim, as Create does before its stages. What the rollback undid becomes
// the result's cleanup, and the message says so instead of "nothing was written".
//
// Only a request whose own intent the store holds (request id and source, the name from the
// result) is concerned; any other refusal takes no claim and writes nothing, so a source that
// is not allowed cannot hold connectors' claims. The store is read to its end first
// (IntentStore.CatchUp), as a claim reads it: a replica's view can lag the intent topic (the
// replica that takes a partition over has not necessarily read its previous owner's last
// writes), and "no intent" in a lagging view would answer "nothing was written" over what the
// interrupted attempt wrote, whose intent the next sweep then removes as stale (a Read of the
// intent topic refused by the brokers is not waited out: catchUpIntents). A read or a
// rollback that cannot be done now is tried again until it is (recoverOwed); when ctx ends
// first, out's Failure.Reason becomes kafkaio.ReasonCanceled: the request must be left
// unanswered, for redelivery.
func (c *Creator) Refuse(ctx context.Context, out *Outcome) {
	name := strings.TrimSpace(out.Result.Name)
	id, source := out.Result.RequestID, out.Result.RequestSource
	if c.opts.Intents == nil || name == "" || out.Failure == nil {
		return
	}
	if err := c.recoverOwed(ctx, name, func(ctx context.Context) error { return c.catchUpIntents(ctx, name) }); err != nil {
		out.Failure.Reason = kafkaio.ReasonCanceled
		return
	}
	if in, ok := c.opts.Intents.Get(name); !ok || in.RequestID != id || in.RequestSource != source {
		return
	}
	j := &job{req: &events.Request{ID: id, Source: source}, name: name}
	rb := &rollback{undo: undo{out: &events.Cleanup{}}}
	err := c.recoverOwed(ctx, name, func(ctx context.Context) error {
		if err := c.claim(ctx, j); err != nil {
			return err
		}
		// Under the claim, whatever intent the connector has is an interrupted request's,
		// as for Create.
		in, ok := c.opts.Intents.Get(name)
		if !ok {
			return nil
		}
		rb.own = in.RequestID == id && in.RequestSource == source
		rb.id = in.RequestID
		if err := c.recoverIntent(ctx, in, &rb.undo); err != nil {
			return fmt.Errorf("roll back interrupted request %s for connector %q: %w", in.RequestID, name, err)
		}
		return nil
	})
	if err != nil {
		out.Failure.Reason = kafkaio.ReasonCanceled
		return
	}
	rb.tell(out)
}

// catchUpIntents reads the intent store to its end for connector name (IntentStore.CatchUp).
// A Read of the intent topic that the brokers refuse is the one failure not waited out: the
// agent refuses every request for it meanwhile (403, naming the Read), and the refusal goes by
// the intents read so far, as it did before the Read was taken away; waiting would leave every
// request unanswered until the ACL is granted again.
func (c *Creator) catchUpIntents(ctx context.Context, name string) error {
	err := c.opts.Intents.CatchUp(ctx, name)
	if _, refused := kafkaio.AuthorizationCode(err); refused {
		c.opts.Logger.Warn("intent topic cannot be read to its end: the refusal goes by the intents read so far", "connector", name, "err", err)
		return nil
	}
	return err
}

// rollback is what the rollback of an interrupted request undid, for the result of the
// request that found its intent.
type rollback struct {
	undo
	// id is the interrupted request's; own means it is the request being answered (its
	// redelivery).
	id  string
	own bool
}

// tell puts what r undid into out, a failed result, when it undid anything: the message says
// so instead of "nothing was written", and a result whose own cleanup undid nothing takes the
// rollback's. A nil r tells nothing.
func (r *rollback) tell(out *Outcome) {
	if r == nil || len(r.done) == 0 || out.Failure == nil {
		return
	}
	cleanup := r.finish()
	what := fmt.Sprintf("an interrupted earlier request (%s) for the connector was rolled back (%s)", r.id, cleanup.Summary)
	if r.own {
		what = "an interrupted earlier attempt of this request was rolled back (" + cleanup.Summary + ")"
	}
	msg := out.Failure.Message
	if strings.Contains(msg, nothingWritten) {
		msg = strings.Replace(msg, nothingWritten, what, 1)
	} else {
		msg += "; " + what
	}
	if out.Result.Cleanup != nil && out.Result.Cleanup.Summary != events.NothingUndone {
		cleanup = out.Result.Cleanup
	}
	if r.own && r.previous != nil && out.Result.PreviousOffsets == nil {
		out.Result.PreviousOffsets = r.previous
	}
	out.Failure.Message = msg
	out.Result.SetFailure(out.Result.FailedStep, out.Result.ErrorCode, msg, cleanup)
}

// recoverOwed runs op, the rollback of what an interrupted request wrote on connector name,
// until it succeeds or ctx ends. A rollback is owed to every intent, whatever becomes of the
// request that finds it: a request does not end while one cannot be done (its result would
// make the intent look stale, and the sweep would remove it with the interrupted writes still
// in place). Between tries it waits as the Creator's backoff says (its Attempts do not apply),
// and logs each failure. When ctx ends first, the error wraps ctx's (kafkaio.Classify:
// ReasonCanceled), and the request is left for redelivery.
func (c *Creator) recoverOwed(ctx context.Context, name string, op func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			c.opts.Logger.Error("rollback of an interrupted request not done; trying again", "connector", name, "err", err)
		}
		if ctx.Err() != nil || !kafkaio.Sleep(ctx, c.opts.Backoff.Delay(attempt)) {
			return fmt.Errorf("%w (stopped before the rollback was done: %w)", err, context.Cause(ctx))
		}
	}
}
