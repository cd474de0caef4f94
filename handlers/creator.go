package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Step names a stage of a request. The values are the "stage" and "failed_step" strings of
// result events and the stage label of the metrics.
type Step string

// The steps, in execution order. StepDecode belongs to the agent: it is the step a record
// that is not a decodable request fails at.
const (
	StepDecode          Step = "decode_request"
	StepValidateConfig  Step = "validate_config"
	StepValidateOffsets Step = "validate_offsets"
	StepWipeOffsets     Step = "wipe_offsets"
	StepWriteOffsets    Step = "write_offsets"
	StepWriteConfig     Step = "write_config"
)

// Steps returns every step in execution order.
func Steps() []Step {
	return []Step{StepDecode, StepValidateConfig, StepValidateOffsets, StepWipeOffsets, StepWriteOffsets, StepWriteConfig}
}

// StepNames returns the names of every step in execution order: the stage label values of
// the metrics.
func StepNames() []string {
	steps := Steps()
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = string(s)
	}
	return names
}

// Rejected is the outcome of a request turned away before its first stage (a record that is
// not a decodable request, a source that is not allowed): a permanent failure at
// decode_request that wrote nothing.
func Rejected(id, source, name string, code int, message string) *Outcome {
	return &Outcome{
		EventType: events.TypeCreateFailed,
		Result:    events.RejectedResult(id, source, name, StepNames(), code, message),
		Failure:   &Failure{Step: StepDecode, Code: code, Message: message, Reason: kafkaio.ReasonPermanent},
	}
}

// Failure is why a request failed: the step, the HTTP status Connect's REST would have
// answered and the message (Connect's exact text wherever it has one).
type Failure struct {
	Step    Step
	Code    int
	Message string
	// Reason classifies the underlying error (ReasonPermanent for validation failures).
	Reason kafkaio.Reason
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %d %s", f.Step, f.Code, f.Message) }

// badRequest, conflict and internal build stage errors with Connect's status codes.
func badRequest(msg string) error {
	return &Failure{Code: 400, Message: msg, Reason: kafkaio.ReasonPermanent}
}
func conflict(msg string) error {
	return &Failure{Code: 409, Message: msg, Reason: kafkaio.ReasonPermanent}
}
func internal(msg string) error {
	return &Failure{Code: 500, Message: msg, Reason: kafkaio.ReasonPermanent}
}

// Store is what the stages need from Connect's internal topics. *offsetstore.Store is the
// implementation; the interface keeps this package's view of it narrow.
type Store interface {
	Sync(ctx context.Context, topic string) error
	// SyncEnds is Sync of several topics whose end offsets are read together (one round trip
	// for all of them): it returns once they are read, with one wait per topic, in order.
	SyncEnds(ctx context.Context, topics ...string) ([]func(context.Context) error, error)
	Track(ctx context.Context, topic string) error
	ConnectorConfig(name string) (map[string]string, bool)
	// GroupConnectors lists the connectors of the config view whose sink consumer group is
	// group (offsetstore.Store.GroupConnectors).
	GroupConnectors(group string) []string
	ConfigRecord(key string) offsetstore.ConfigRecord
	SourceOffsets(topic, connector string) []offsetstore.SourceRecord
	Write(ctx context.Context, topic string, recs []offsetstore.Record) error
	WriteEncoded(ctx context.Context, topic string, enc *offsetstore.Encoded) error
	GroupOffsets(ctx context.Context, group string) ([]offsetstore.GroupOffset, error)
	GroupMembers(ctx context.Context, group string) (int, error)
	// DescribeGroup tells a group's state and member count (validate_config's live check).
	DescribeGroup(ctx context.Context, group string) (offsetstore.GroupActivity, error)
	DeleteGroup(ctx context.Context, group string) error
	CommitGroupOffsets(ctx context.Context, group string, offsets []offsetstore.GroupOffset) error
	Partitions(ctx context.Context, topic string) (int, error)
	// The permission probes (kafkaio.ProbeWrites, ProbeGroupCommit, ProbeGroupDelete): nil
	// when allowed, the broker's authorization error when not; they change nothing.
	ProbeWrites(ctx context.Context, topics []string) []error
	// QueueProbeWrites queues ProbeWrites's questions with the store's writes, to go beside
	// them in one request to the broker (kafkaio.Producer.EnqueueProbes), and returns the
	// wait for the answers.
	QueueProbeWrites(ctx context.Context, topics []string) (wait func(context.Context) []error)
	// HoldWrites holds the store's writes (its Producer's, which the agent's intents share:
	// kafkaio.Producer.Hold) until release: those queued meanwhile go together.
	HoldWrites() (release func())
	ProbeRead(ctx context.Context, topic string) error
	ProbeGroupCommit(ctx context.Context, group string, topics []string) error
	ProbeGroupDelete(ctx context.Context, group, topic string) error
}

// ConfigValidator asks a Connect cluster's REST API about a connector
// (docs/connect-internals.md, "Validating a new connector"): ConnectValidator, over an
// internal/connectrest client.
type ConfigValidator interface {
	// Exists reports whether the cluster already has the connector (GET /connectors/{name}).
	Exists(ctx context.Context, name string) (bool, error)
	// Validate runs PUT /connector-plugins/{class}/config/validate. It returns the connector
	// type Connect reports ("source", "sink" or "unknown"); a config with errors is a *Failure
	// (400) carrying Connect's aggregated message; an unreachable cluster is an error that
	// Classify calls transient.
	Validate(ctx context.Context, class string, config map[string]string) (typ string, err error)
}

// Options configure a Creator.
type Options struct {
	Store    Store
	Registry *connectors.Registry
	// ConfigTopic and OffsetsTopic are Connect's config.storage.topic and offset.storage.topic.
	ConfigTopic, OffsetsTopic string
	// AllowedOffsetsTopics must match a connector's offsets.storage.topic.
	AllowedOffsetsTopics *regexp.Regexp
	// AllowedGroups must match a sink connector's whole consumer group id (connect-<name> or
	// consumer.override.group.id); nil means connect-.*. The agent fills it from
	// OFFSETAGENT_ALLOWED_GROUPS.
	AllowedGroups *regexp.Regexp
	// Backoff governs retries of transient Kafka errors; OnRetry is told each retry's reason.
	Backoff kafkaio.Backoff
	OnRetry func(kafkaio.Reason)
	// Validator, when not nil, is a Connect cluster's REST API asked during validate_config.
	Validator ConfigValidator
	// Intents, when not nil, records each request before its first destructive step so that an
	// interrupted request is rolled back when its connector is next worked on.
	Intents IntentStore
	// Claims, when not nil, make the requests for one connector take turns (see Claims).
	Claims Claims
	// ResultOut tells whether a request already has its result published (stale intents).
	ResultOut func(source, id string) bool
	// ManagedBy names who creates the cluster's connectors when it is not the agent
	// (OFFSETAGENT_CONNECTORS_MANAGED_BY): with it, a request without "create" places the
	// offsets only, and one that asks for the connector is refused (see createMode).
	ManagedBy Manager
	// ResultReserve is the time a request's writes leave before its giveup for its result
	// (writesEnd); 0 means DefaultResultReserve.
	ResultReserve time.Duration
	// Fault, when not nil, is called at named points of a request (stage boundaries, inside
	// validate_config, between the records of multi-record writes) with the request's
	// connector name. Crash tests make it exit the process.
	Fault  func(point, connector string)
	Logger *slog.Logger
}

// Creator runs create requests against one Connect cluster.
type Creator struct {
	opts Options
	gc   *collector
	// ahead holds what ReadAhead read, by request, until Create takes it.
	ahead sync.Map
}

// NewCreator checks opts and returns a Creator.
func NewCreator(opts Options) (*Creator, error) {
	if opts.Store == nil || opts.Registry == nil {
		return nil, errors.New("handlers: Store and Registry are required")
	}
	if opts.ConfigTopic == "" || opts.OffsetsTopic == "" {
		return nil, errors.New("handlers: ConfigTopic and OffsetsTopic are required")
	}
	if opts.AllowedOffsetsTopics == nil {
		re, err := regexp.Compile("^" + regexp.QuoteMeta(opts.OffsetsTopic) + "$")
		if err != nil {
			return nil, fmt.Errorf("handlers: offsets topic pattern: %w", err)
		}
		opts.AllowedOffsetsTopics = re
	}
	if opts.AllowedGroups == nil {
		opts.AllowedGroups = regexp.MustCompile(`^(?:connect-.*)$`)
	}
	if opts.Backoff.Attempts == 0 {
		opts.Backoff = kafkaio.DefaultBackoff()
	}
	if opts.ResultReserve <= 0 {
		opts.ResultReserve = DefaultResultReserve
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Creator{opts: opts, gc: &collector{collect: runtime.GC}}, nil
}

// Outcome is what a request came to.
type Outcome struct {
	// EventType is the result event's type: succeeded, failed or planned.
	EventType string
	Result    events.Result
	// Failure is set when the request failed.
	Failure *Failure
	// ConnectorType is "source" or "sink" once validate_config decided it.
	ConnectorType connectors.Type
	// OffsetsWritten and OffsetsWiped count what the request did (for the metrics).
	OffsetsWritten, OffsetsWiped int
}

// stage is one step of the pipeline.
type stage struct {
	step Step
	run  func(c *Creator, ctx context.Context, j *job) error
	// skip says whether the step does not apply to this request.
	skip func(j *job) bool
	// destructive steps change Connect's state: the intent is written before the first one.
	destructive bool
	// undo reverts what run wrote, as far as the job records it, when a request fails.
	undo func(c *Creator, ctx context.Context, j *job, u *undo)
}

func noOffsets(j *job) bool      { return !j.req.Data.HasInitialOffsets }
func dryRun(j *job) bool         { return j.req.DryRun }
func noOffsetsOrDry(j *job) bool { return noOffsets(j) || dryRun(j) }

// noConfigWrite: a dry run writes nothing, and a request for the offsets only writes no
// config records (the connector is created by someone else, later).
func noConfigWrite(j *job) bool { return dryRun(j) || j.offsetsOnly }

// stages are the stages in their order. Their functions are method expressions and the table
// an array, so that a request pays no allocation for them (method values bound to c would be
// one closure each, per request).
func stages() [5]stage {
	return [5]stage{
		{step: StepValidateConfig, run: (*Creator).validateConfig},
		{step: StepValidateOffsets, run: (*Creator).validateOffsetsAndPermissions, skip: noOffsets},
		{step: StepWipeOffsets, run: (*Creator).wipeOffsets, skip: noOffsetsOrDry, destructive: true, undo: (*Creator).undoWipe},
		{step: StepWriteOffsets, run: (*Creator).writeOffsets, skip: noOffsetsOrDry, destructive: true, undo: (*Creator).undoWriteOffsets},
		{step: StepWriteConfig, run: (*Creator).writeConfig, skip: noConfigWrite, destructive: true, undo: (*Creator).undoWriteConfig},
	}
}

// Create runs req through the stages and returns its outcome. It never returns an error: every
// failure, including cleanup that failed, is part of the outcome. ctx bounds the whole request.
func (c *Creator) Create(ctx context.Context, req *events.Request) *Outcome {
	j := &job{req: req, name: req.Data.Name, ahead: c.takeReadAhead(req)}
	// The destructive stages write within the request's giveup, less the reserve its result
	// needs: from the giveup on, its sender reports it failed. The cleanup runs on ctx, with
	// its own bound.
	writesEnd := c.writesEnd(req)
	writeCtx, cancelWrites := withWritesEnd(ctx, writesEnd)
	defer cancelWrites()
	failure := c.runStages(ctx, writeCtx, writesEnd, j)
	j.settleOptimisticIntent()
	return c.outcome(ctx, j, failure)
}

// runStages runs the stages of j in order, the destructive ones on writeCtx, and returns the
// failure of the first that fails (the later ones are skipped), or nil.
func (c *Creator) runStages(ctx, writeCtx context.Context, writesEnd time.Time, j *job) *Failure {
	req := j.req
	var failure *Failure
	intentWritten, deadlineChecked := false, false
	all := stages()
	if j.reports == nil {
		j.reports = make([]events.StageReport, 0, len(all))
	}
	for _, st := range all {
		if failure != nil || (st.skip != nil && st.skip(j)) {
			j.reports = append(j.reports, events.StageReport{Stage: string(st.step), Outcome: events.OutcomeSkipped})
			continue
		}
		if c.opts.Fault != nil { // the point's name is built only for a fault hook
			c.fault(j, "before:"+string(st.step))
		}
		start := time.Now()
		var err error
		if st.destructive && !deadlineChecked {
			// Last look at the deadline before the first write: validation may have taken
			// the request past it.
			deadlineChecked = true
			err = pastDeadline(req, writesEnd, time.Now())
		}
		stageCtx := ctx
		if st.destructive {
			stageCtx = writeCtx
		}
		if err == nil && st.destructive && !intentWritten && c.opts.Intents != nil {
			err = c.writeIntent(stageCtx, j)
			intentWritten = err == nil
		}
		if err == nil {
			err = st.run(c, stageCtx, j)
		}
		if st.destructive {
			err = pastGiveUp(req, c.writesEnd(req), err, time.Now())
		}
		took := time.Since(start)
		if st.step == StepValidateOffsets {
			took += j.aheadTook // the offsets' single pass, run before the stages
		}
		rep := events.StageReport{Stage: string(st.step), Outcome: events.OutcomeOK, DurationSeconds: took.Seconds()}
		if err != nil {
			rep.Outcome = events.OutcomeFailed
			failure = c.toFailure(st.step, err)
		}
		j.reports = append(j.reports, rep)
		if c.opts.Fault != nil {
			c.fault(j, "after:"+string(st.step))
		}
	}
	return failure
}

// outcome is the outcome of j after its stages: its result, failed (after its cleanup),
// planned or succeeded.
func (c *Creator) outcome(ctx context.Context, j *job, failure *Failure) *Outcome {
	req := j.req
	out := &Outcome{}
	out.ConnectorType = j.typ
	out.OffsetsWiped = j.wiped
	out.OffsetsWritten = j.written
	out.Result = events.Result{
		RequestID:     req.ID,
		RequestSource: req.Source,
		Name:          j.name,
		Stages:        j.reports,
	}
	if j.snapshotTaken {
		out.Result.PreviousOffsets = j.previousOffsets()
	}
	switch {
	case failure != nil:
		out.EventType = events.TypeCreateFailed
		out.Failure = failure
		failure.Message = c.scrub(j, failure.Message)
		out.Result.SetFailure(string(failure.Step), failure.Code, failure.Message, c.cleanup(ctx, j))
		j.rolledBack.tell(out) // an interrupted attempt rolled back in validate_config
		// The cleanup put back what was wiped and removed what was written: the metrics
		// count only the effects of successful requests.
		out.OffsetsWritten, out.OffsetsWiped = 0, 0
	case req.DryRun:
		out.EventType = events.TypeCreatePlanned
		c.fillSuccess(&out.Result, j)
		out.Result.Plan = c.plan(ctx, j)
	default:
		out.EventType = events.TypeCreateSucceeded
		c.fillSuccess(&out.Result, j)
	}
	return out
}

// recoverInterrupted rolls back an interrupted earlier request for the connector, if any, and
// returns what it undid (nil when there was no intent). A rollback that cannot be done now is
// tried again until it is, or ctx ends (recoverOwed).
func (c *Creator) recoverInterrupted(ctx context.Context, j *job) (*rollback, error) {
	if c.opts.Intents == nil || j.name == "" {
		return nil, nil
	}
	var rb *rollback
	err := c.recoverOwed(ctx, j.name, func(ctx context.Context) error {
		in, ok := c.opts.Intents.Get(j.name)
		if !ok {
			return nil
		}
		if rb == nil {
			rb = &rollback{undo: undo{out: &events.Cleanup{}}, id: in.RequestID,
				own: in.RequestID == j.req.ID && in.RequestSource == j.req.Source}
		}
		if err := c.recoverIntent(ctx, in, &rb.undo); err != nil {
			return fmt.Errorf("roll back interrupted request %s for connector %q: %w", in.RequestID, j.name, err)
		}
		return nil
	})
	return rb, err
}

// writeIntent snapshots the connector and records the intent before the first write.
func (c *Creator) writeIntent(ctx context.Context, j *job) error {
	if err := c.takeSnapshot(ctx, j); err != nil {
		return err
	}
	in := c.intentFor(j)
	if o := j.optimistic; o != nil {
		j.optimistic = nil
		// The intent written during the barriers stands only if it holds what the check
		// settled: no connector, the same config records, the same offsets. Otherwise (the
		// view caught up with a write during the barriers) it is replaced before anything is
		// written, so that a rollback never acts on what the view showed before the check.
		if err := o.result(); err == nil && !o.in.Existed && sameConfig(o.in.Config, in.Config) &&
			sameRecords(o.snap, j.prevSource[c.opts.OffsetsTopic]) {
			return nil
		}
	}
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Intents.Put(ctx, in) }); err != nil {
		return fmt.Errorf("record intent for connector %q: %w", j.name, err)
	}
	return nil
}

// fillSuccess sets the fields of a succeeded (or planned) result.
func (c *Creator) fillSuccess(r *events.Result, j *job) {
	r.Config = c.redactedConfig(j)
	r.Type = string(j.typ)
	r.InitialState = j.restState
	written, wiped := j.written, j.wiped
	r.OffsetsWritten, r.OffsetsWiped = &written, &wiped
	if j.req.Data.HasInitialOffsets {
		r.InitialOffsetsResponse = connectors.SuccessMessage(j.class)
	}
	if j.offsetsOnly {
		r.Created = events.CreateOffsetsOnly
		r.Next = offsetsOnlyNext(j.name, j.restState, c.opts.ManagedBy)
	}
}

// toFailure turns a stage's error into a Failure for step.
func (c *Creator) toFailure(step Step, err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		out := *f
		out.Step = step
		return &out
	}
	reason, _ := kafkaio.Classify(err)
	code := 500
	var az *kafkaio.AuthzError
	if errors.As(err, &az) {
		code = 403 // a missing ACL, named in the message
	}
	return &Failure{Step: step, Code: code, Message: err.Error(), Reason: reason}
}

// retry runs op with the Creator's backoff.
func (c *Creator) retry(ctx context.Context, op func(context.Context) error) error {
	return kafkaio.Retry(ctx, c.opts.Backoff, c.opts.OnRetry, op)
}

func (c *Creator) fault(j *job, point string) {
	if c.opts.Fault != nil {
		c.opts.Fault(point, j.name)
	}
}
