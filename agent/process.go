package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// process runs one request record to an acknowledged result. The item is marked done (and so
// becomes committable) only after the broker acknowledged the result; if the agent stops
// before that, the record stays uncommitted and is fetched again.
func (a *Agent) process(work context.Context, j job) {
	defer a.metrics.InFlight.Dec()
	defer a.inflight.release(j.weight) // taken by the fetcher (MaxInflightBytes)
	if !j.item.start() {
		return // abandoned: the partition was revoked before the request started
	}
	a.running.begin(j.item)
	defer a.running.end(j.item)
	began := time.Now()
	out, dup := a.outcome(work, &j.msg)
	if dup {
		a.metrics.Requests.WithLabelValues(ResultDuplicate).Inc()
		j.item.done()
		return
	}
	if work.Err() != nil || (out.Failure != nil && out.Failure.Reason == kafkaio.ReasonCanceled) {
		// Cut off by the shutdown timeout: no result, no commit. The request is fetched again
		// by the next owner of its partition, whose intent check rolls back what was done.
		a.metrics.ResultsUnpublished.Inc()
		a.log.Warn("request interrupted by shutdown, left for redelivery", "connector", out.Result.Name, "request_id", out.Result.RequestID)
		return
	}
	a.logFinished(work, out, began)
	a.fault("before:publish", out.Result.Name)
	if err := a.publish(work, out); err != nil {
		a.metrics.ResultsUnpublished.Inc()
		a.log.Error("publish result", "connector", out.Result.Name, "request_id", out.Result.RequestID, "err", err)
		return
	}
	// The result is out: the request's intent and claim are no longer needed. Their removal is
	// queued now, before the lane takes the connector's next request, so that it lands before
	// anything that request writes (the next request must not take this one's intent for the
	// trace of an interrupted one), but the lane does not wait for it. One that fails is
	// recognised as stale later (its result is out).
	a.fault("after:publish", out.Result.Name)
	a.intents.finish(work, strings.TrimSpace(out.Result.Name), out.Result.RequestSource, out.Result.RequestID)
	a.observe(out, time.Since(j.received))
	j.item.done()
}

// outcome decodes and runs the request. dup is true for a request whose result is already out.
func (a *Agent) outcome(work context.Context, msg *kafka.Message) (out *handlers.Outcome, dup bool) {
	start := time.Now()
	// A large request's offsets are read once, by the Processor's single pass over their text
	// (handlers.Creator.ReadAhead), which checks them too; any other Processor has them checked
	// here (Check) as DecodeRequest checks them. A request the Processor does not run (a
	// duplicate, a source not allowed) is only checked. Either way a record that DecodeRequest
	// refuses fails here, with DecodeRequest's error, before anything acts on it.
	if kafkaio.TooLarge(msg) {
		// Its compressed batch was not inflated (see requestInflateMax): nothing of it is known
		// but its place.
		return a.undecodable(work, msg, fmt.Errorf("its compressed record batch inflates beyond %d bytes (twice OFFSETAGENT_MAX_REQUEST_BYTES)",
			requestInflateMax(a.cfg.MaxRequestBytes)))
	}
	req, err := events.DecodeRequestDeferred(msg, a.cfg.MaxRequestBytes)
	dup, allowed := false, true
	var read time.Duration // the single pass's, counted in validate_offsets
	if err == nil {
		dup = a.results.seen(req.Source, req.ID)
		allowed = len(a.cfg.AllowedSources) == 0 || slices.Contains(a.cfg.AllowedSources, req.Source)
		if r, ok := a.proc.(aheadReader); ok && !dup && allowed {
			read, err = r.ReadAhead(work, req)
		} else {
			err = req.Check()
		}
	}
	// decode_request is timed for every record, whatever comes of it (observe skips the
	// stage, so that it is not counted twice).
	a.metrics.StageDuration.WithLabelValues(string(handlers.StepDecode)).Observe((time.Since(start) - read).Seconds())
	if err != nil {
		a.log.Warn("undecodable request", "topic", msg.Topic, "partition", msg.Partition, "offset", msg.Offset, "err", err)
		return a.undecodable(work, msg, err)
	}
	// The decoded request holds what it needs; the stages let go of it piece by piece, so the
	// record's value (up to MaxRequestBytes) must not be kept alive here. Nor its key: a fetched
	// record's key and value share one allocation (kafkaio's copy out of the fetch buffers).
	msg.Key, msg.Value = nil, nil
	if dup {
		a.log.Info("duplicate request skipped", "connector", req.Data.Name, "request_id", req.ID)
		return nil, true
	}
	// A refusal may answer the redelivery of an attempt that was interrupted: refuse rolls
	// that attempt back before the result goes out.
	if !allowed {
		return a.refuse(work, refused(req)), false
	}
	if late := handlers.PastDeadline(req, time.Now()); late != nil {
		// Its sender has given up on it and reported it failed: carrying it out now would
		// make that report false (a connector created on B after the operator resumed A).
		a.log.Warn("request past its deadline refused", "connector", req.Data.Name, "request_id", req.ID)
		return a.refuse(work, late), false
	}
	if denied := a.readsDenied(work); len(denied) > 0 {
		a.log.Warn("request refused: a permission the agent depends on is missing", "connector", req.Data.Name, "request_id", req.ID)
		return a.refuse(work, handlers.Rejected(req.ID, req.Source, req.Data.Name, 403,
			"refused before any step: the agent lacks a permission it depends on: "+denied.Error())), false
	}
	if mixed := a.health.mixedGroup(); mixed != "" {
		a.log.Warn("request refused: the consumer group mixes two Connect clusters", "connector", req.Data.Name, "request_id", req.ID)
		return a.refuse(work, handlers.Rejected(req.ID, req.Source, req.Data.Name, 500,
			"refused before any step, nothing was written: the agent's "+mixed)), false
	}
	out = a.proc.Create(work, req)
	return out, false
}

// undecodable is the outcome of a record that is not a decodable request: a duplicate when
// the request its headers name already has its result out (a redelivered record that no
// longer decodes, OFFSETAGENT_MAX_REQUEST_BYTES lowered since, must not get a second result),
// otherwise decodeFailure's, refused as the other refusals are.
func (a *Agent) undecodable(work context.Context, msg *kafka.Message, err error) (*handlers.Outcome, bool) {
	out := decodeFailure(msg, err)
	if a.results.seen(out.Result.RequestSource, out.Result.RequestID) {
		a.log.Info("duplicate request skipped", "connector", out.Result.Name, "request_id", out.Result.RequestID)
		return nil, true
	}
	return a.refuse(work, out), false
}

// refuser is a Processor that settles a request turned away before its first stage
// (handlers.Creator.Refuse): an interrupted earlier attempt of it is rolled back first.
type refuser interface {
	Refuse(ctx context.Context, out *handlers.Outcome)
}

// refuse settles out, the failed outcome of a request turned away before its first stage,
// with the Processor when it can (refuser).
func (a *Agent) refuse(work context.Context, out *handlers.Outcome) *handlers.Outcome {
	if r, ok := a.proc.(refuser); ok {
		r.Refuse(work, out)
	}
	return out
}

// aheadReader is a Processor that reads a request's offsets text left unchecked by
// events.DecodeRequestDeferred itself, before Create (handlers.Creator.ReadAhead).
type aheadReader interface {
	ReadAhead(ctx context.Context, req *events.Request) (read time.Duration, err error)
}

// observe records the metrics of a finished request.
func (a *Agent) observe(out *handlers.Outcome, d time.Duration) {
	result := ResultSucceeded
	switch out.EventType {
	case events.TypeCreateFailed:
		result = ResultFailed
		a.metrics.StageFailures.WithLabelValues(out.Result.FailedStep, errorCodeLabel(out.Result.ErrorCode)).Inc()
		if c := out.Result.Cleanup; c != nil && (c.Left != "" || c.Error != "") {
			a.metrics.CleanupsIncomplete.Inc()
		}
	case events.TypeCreatePlanned:
		result = ResultPlanned
	}
	a.metrics.Requests.WithLabelValues(result).Inc()
	for _, s := range out.Result.Stages {
		if s.Outcome != events.OutcomeSkipped && s.Stage != string(handlers.StepDecode) {
			a.metrics.StageDuration.WithLabelValues(s.Stage).Observe(s.DurationSeconds)
		}
	}
	if t := string(out.ConnectorType); t == "source" || t == "sink" {
		a.metrics.OffsetsWritten.WithLabelValues(t).Add(float64(out.OffsetsWritten))
		a.metrics.OffsetsWiped.WithLabelValues(t).Add(float64(out.OffsetsWiped))
	}
	a.metrics.RequestDuration.Observe(d.Seconds())
}

// decodeFailure is the failed outcome of a record that is not a decodable request. It names
// the record so that its producer can find it.
func decodeFailure(msg *kafka.Message, err error) *handlers.Outcome {
	name := ""
	if utf8.Valid(msg.Key) {
		name = string(msg.Key)
	}
	id, _ := events.Header(msg, events.HeaderID)
	source, _ := events.Header(msg, events.HeaderSource)
	var derr *events.DecodeError
	if errors.As(err, &derr) && derr.ID != "" {
		// Decoding got as far as the event's attributes (a structured-mode envelope has no
		// headers to read them from).
		id, source = derr.ID, derr.Source
	}
	if !utf8.ValidString(id) || id == "" {
		// Without a CloudEvent id, the record itself identifies the request: the result gets a
		// unique id and a redelivered record is recognised as a duplicate.
		id = fmt.Sprintf("%s/%d@%d", msg.Topic, msg.Partition, msg.Offset)
	}
	if !utf8.ValidString(source) {
		source = ""
	}
	text := fmt.Sprintf("record %s/%d@%d is not a decodable request: %v", msg.Topic, msg.Partition, msg.Offset, err)
	return handlers.Rejected(id, source, name, 400, text)
}

// refused is the failed outcome of a request from a source that is not allowed. It touches
// nothing.
func refused(req *events.Request) *handlers.Outcome {
	text := fmt.Sprintf("requests from source %q are not allowed", req.Source)
	return handlers.Rejected(req.ID, req.Source, req.Data.Name, 403, text)
}

// fault calls the fault hook of crash tests (Options.Fault) at a named point: before the
// result is published (the request will be redone) and after (its intent and claim remain).
func (a *Agent) fault(point, connector string) {
	if a.opts.Fault != nil {
		a.opts.Fault(point, connector)
	}
}

// logFinished writes the one line of a request, whatever ended it (refused, undecodable, past
// its deadline, run). Its arguments are boxed only when the line is written: below the level,
// they were a few allocations per request for nothing.
func (a *Agent) logFinished(ctx context.Context, out *handlers.Outcome, began time.Time) {
	if !a.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	a.log.Info("request finished", "connector", out.Result.Name, "request_id", out.Result.RequestID,
		"source", out.Result.RequestSource, "result", out.EventType, "failed_step", out.Result.FailedStep,
		"error_code", out.Result.ErrorCode, "duration", time.Since(began))
}
