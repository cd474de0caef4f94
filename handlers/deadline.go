package handlers

import (
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// CodeDeadline is the error_code of a request refused because its deadline passed (HTTP 408
// Request Timeout: the client stopped waiting for it).
const CodeDeadline = 408

// pastDeadline returns a permanent Failure when now is at or after req's deadline
// (events.ExtensionDeadline), nil when the request has none or it is still ahead.
func pastDeadline(req *events.Request, now time.Time) error {
	if req.Deadline.IsZero() || now.Before(req.Deadline) {
		return nil
	}
	return &Failure{Code: CodeDeadline, Reason: kafkaio.ReasonPermanent, Message: fmt.Sprintf(
		"the request's deadline %s passed %s before it could be carried out: nothing was written; its sender reports it failed",
		req.Deadline.UTC().Format(time.RFC3339Nano), now.Sub(req.Deadline).Round(time.Millisecond))}
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
