package events

import "github.com/segmentio/kafka-go"

// NothingUndone is the cleanup summary of a request that failed before writing anything.
const NothingUndone = "nothing to undo: the request wrote nothing"

// SetFailure makes r the data of a failed result: the stage that failed, the HTTP status
// Connect's REST API would have answered, the message and what the cleanup undid.
func (r *Result) SetFailure(step string, code int, message string, cleanup *Cleanup) {
	r.FailedStep = step
	r.ErrorCode = code
	r.Message = message
	r.Cleanup = cleanup
}

// RejectedResult is the failed result of a request turned away at its first stage, before it
// wrote anything: stages are every stage's name in execution order; the first is reported
// failed, the others skipped.
func RejectedResult(id, source, name string, stages []string, code int, message string) Result {
	reports := make([]StageReport, len(stages))
	for i, s := range stages {
		reports[i] = StageReport{Stage: s, Outcome: OutcomeSkipped}
	}
	reports[0].Outcome = OutcomeFailed
	res := Result{RequestID: id, RequestSource: source, Name: name, Stages: reports}
	res.SetFailure(stages[0], code, message, &Cleanup{Summary: NothingUndone})
	return res
}

// AddRequestHeaders adds the ce_requestid and ce_requestsource headers of res to its record.
func AddRequestHeaders(msg *kafka.Message, res *Result) {
	msg.Headers = append(msg.Headers,
		kafka.Header{Key: HeaderRequestID, Value: []byte(res.RequestID)},
		kafka.Header{Key: HeaderRequestSource, Value: []byte(res.RequestSource)})
}
