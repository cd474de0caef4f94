package rollback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// MaxParallel bounds the connectors rolled back at once.
const MaxParallel = 8

// Defaults of Options.
const (
	DefaultResumeTimeout = 60 * time.Second
	DefaultPoll          = 500 * time.Millisecond
)

// Barrier stops connector c on B (its TargetName) and returns B's progress once it is final:
// PUT stop, its status STOPPED with no tasks, a sink's group on B with no members, and two
// equal reads of its offsets a pause apart; a source's offsets, a sink's committed group
// offsets, in the KIP-875 shape. migrate's stop barrier (migrate/stop.go) run against B is one.
// An error leaves the connector as the barrier left it; rollback then touches nothing else.
type Barrier func(ctx context.Context, c Connector) ([]events.ConnectorOffset, error)

// Pending reports whether a request of the migration for c (c.RequestID) is still pending on
// B: the agents' result topic holds no result for it yet. Deleting the connector while one is
// could race with it.
type Pending func(ctx context.Context, c Connector) (bool, error)

// MM2 is what carries a sink's offsets back across MirrorMaker 2: a translator whose Source
// is A's Kafka cluster and Target B's, with the A->B flow's offset syncs when known, and its
// replication policy.
type MM2 struct {
	Translator *mm2.Translator
	Policy     mm2.Policy
}

// Options configures Run.
type Options struct {
	// A and B are the Connect REST APIs of A (where the connectors go back) and B.
	A, B *connectrest.Client
	// BTopics are B's Connect topics: its config topic is read for the request mark of each
	// connector record (offsetstore.ConfigRecord). Required.
	BTopics offsetstore.Options
	// StateTopic is the migration's state topic on B's Kafka cluster (BTopics.Cluster()); ""
	// means none was kept (then a connector stopped on A needs its StateOnA).
	StateTopic string
	// AKafka is A's Kafka cluster, read for the log starts of a sink's partitions (skip);
	// without brokers they are "not checked".
	AKafka kafkaio.Options
	// MM2 carries sinks across MirrorMaker 2; nil leaves their partitions not carried.
	MM2 *MM2
	// StopOnB is the stop barrier on B; required with Execute.
	StopOnB Barrier
	// Pending says whether a request of the migration is pending on B; nil means it cannot be
	// checked, and no connector is deleted on B (each is kept on B, saying so).
	Pending Pending
	// Names, when set, are the connectors (names on A) to roll back; a name the input does
	// not hold is refused as not moved by this report. Empty means all of the input.
	Names []string
	// Execute does the rollback; without it Run reads A and B and says what it would do.
	Execute bool
	// ResumeTimeout bounds the wait for A's status after the resume (0: DefaultResumeTimeout);
	// Poll is the pause between status reads (0: DefaultPoll).
	ResumeTimeout, Poll time.Duration
	// Parallel is how many connectors go at once (0 or more than MaxParallel: MaxParallel).
	Parallel int
	// MigrationID is the report's, written in the rollback report.
	MigrationID string
	// Logger receives progress logs; nil discards them.
	Logger *slog.Logger
}

// runner is one Run.
type runner struct {
	opts   Options
	logger *slog.Logger
	store  *offsetstore.Store
	states stateRecords
	starts *logStarts
	// aVersion is A's Connect version (GET /); aOld is set when it has no PATCH offsets.
	aVersion string
	aOld     bool
}

// Run rolls back connectors (or, without Execute, says what it would do), at most
// Options.Parallel at a time. An error means nothing was done: bad options, or B's config
// topic, the state topic or A's REST API could not be read; each connector's own trouble is its
// outcome in the report.
func Run(ctx context.Context, opts Options, connectors []Connector) (*Report, error) {
	if opts.A == nil || opts.B == nil {
		return nil, errors.New("rollback: the Connect REST APIs of A and B are both needed")
	}
	if opts.Execute && opts.StopOnB == nil {
		return nil, errors.New("rollback: no stop barrier for B")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ResumeTimeout <= 0 {
		opts.ResumeTimeout = DefaultResumeTimeout
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Parallel <= 0 || opts.Parallel > MaxParallel {
		opts.Parallel = MaxParallel
	}
	rep := &Report{MigrationID: opts.MigrationID, Execute: opts.Execute, Started: time.Now().UTC(), Connectors: []*ConnectorResult{}}
	r := &runner{opts: opts, logger: opts.Logger, starts: newLogStarts(opts.AKafka)}
	if opts.BTopics.Logger == nil {
		opts.BTopics.Logger = opts.Logger
	}
	store, err := offsetstore.New(opts.BTopics)
	if err != nil {
		return nil, fmt.Errorf("rollback: read B's Connect topics: %w", err)
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- store.Run(sctx) }()
	defer func() {
		stop()
		<-done
	}()
	if err := store.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("rollback: read B's config topic %q: %w", opts.BTopics.ConfigTopic, err)
	}
	r.store = store
	if r.states, err = readStates(ctx, opts.BTopics.Cluster(), opts.StateTopic, opts.Logger); err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	root, err := opts.A.Root(ctx)
	if err != nil {
		return nil, fmt.Errorf("rollback: read A's Connect version (GET /): %w", err)
	}
	r.aVersion, r.aOld = root.Version, !atLeast(root.Version, 3, 6)

	todo := selectConnectors(connectors, opts.Names)
	rep.Connectors = make([]*ConnectorResult, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Parallel)
	for i, t := range todo {
		if t.c == nil {
			rep.Connectors[i] = &ConnectorResult{Name: t.name, Outcome: Refused, Partitions: []*PartitionResult{},
				Reason: "not moved by this report: it lists no connector of that name (a pending or failed connector of the migration is never listed)"}
			continue
		}
		g.Go(func() error {
			rep.Connectors[i] = r.one(gctx, t.c)
			r.logger.Info("rollback", "connector", t.c.Name, "outcome", rep.Connectors[i].Outcome, "reason", rep.Connectors[i].Reason)
			return nil
		})
	}
	_ = g.Wait()
	rep.Finished = time.Now().UTC()
	rep.count()
	return rep, nil
}

// todo is one connector asked for: c is nil when the input does not hold name.
type todo struct {
	name string
	c    *Connector
}

// selectConnectors is the connectors named (all without names), in the order asked.
func selectConnectors(connectors []Connector, names []string) []todo {
	var out []todo
	if len(names) == 0 {
		for i := range connectors {
			out = append(out, todo{name: connectors[i].Name, c: &connectors[i]})
		}
		return out
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		t := todo{name: n}
		for i := range connectors {
			if connectors[i].Name == n {
				t.c = &connectors[i]
				break
			}
		}
		out = append(out, t)
	}
	return out
}

// atLeast reports whether version (major.minor[...]) is major.minor or later; a version that
// does not read so is taken as older (a check that cannot decide refuses).
func atLeast(version string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(version, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// found is what one connector's refusal checks read of A and B.
type found struct {
	// before is the state to resume A in; stateA and stateB the states now.
	before, stateA, stateB string
	// done: absent on B and A in its state before the move; resumed: stopped on B and resumed
	// on A by an earlier run.
	done, resumed bool
}

// check runs the refusals of one connector; a non-empty string refuses it, an error fails it.
func (r *runner) check(ctx context.Context, c *Connector) (found, string, error) {
	var f found
	switch {
	case c.Refuse != "":
		return f, c.Refuse, nil
	case c.Name == "" || c.TargetName == "":
		return f, "the report gives no name on A or on B", nil
	case c.Type != TypeSource && c.Type != TypeSink:
		return f, fmt.Sprintf("type %q is neither source nor sink", c.Type), nil
	case c.OperatorManaged:
		return f, "B is operator-managed (a KafkaConnector resource): the operator would undo a stop or delete made through B's REST API. " +
			"Set the KafkaConnector's spec.state to stopped, or delete the resource, then roll back A by hand (docs/migration.md, \"Rollback\")", nil
	}
	inA, err := r.opts.A.Exists(ctx, c.Name)
	if err != nil {
		return f, "", fmt.Errorf("read connector %q on A: %w", c.Name, err)
	}
	if !inA {
		return f, fmt.Sprintf("absent on A: connector %q is not on A any more", c.Name), nil
	}
	st, ok, err := r.opts.A.Status(ctx, c.Name)
	if err != nil || !ok {
		return f, "", fmt.Errorf("read the status of connector %q on A: %w", c.Name, cmpErr(err, "no status"))
	}
	f.stateA = st.Connector.State

	// The state before the move: the state record and the report must agree.
	f.before = c.StateOnA
	rec, has := r.states.get(c.MigrationID, c.Name)
	switch {
	case has && c.StateOnA != "" && rec != c.StateOnA:
		return f, fmt.Sprintf("the state record %s/%s says A was %s before the move, the report says %s", c.MigrationID, c.Name, rec, c.StateOnA), nil
	case c.StateOnA == "" && has:
		f.before = rec
	case c.StateOnA == "" && c.StoppedOnA:
		why := "the state topic holds no record of it"
		if r.states.unread != "" {
			why = r.states.unread
		}
		return f, fmt.Sprintf("the state before the move is unknown: the report gives none and %s", why), nil
	}
	if c.StoppedOnA && !knownState(f.before) {
		return f, fmt.Sprintf("the state before the move %q is none of RUNNING, PAUSED, STOPPED", f.before), nil
	}

	inB, err := r.opts.B.Exists(ctx, c.TargetName)
	if err != nil {
		return f, "", fmt.Errorf("read connector %q on B: %w", c.TargetName, err)
	}
	if !inB {
		if !c.StoppedOnA || f.stateA == f.before {
			f.done = true
			return f, "", nil
		}
		return f, fmt.Sprintf("absent on B while A is %s, not %s: B's connector was deleted before its progress was carried back; "+
			"check A's offsets, then resume it on A by hand", f.stateA, f.before), nil
	}
	mark := r.store.ConfigRecord("connector-" + c.TargetName)
	if c.RequestID == "" && mark.Live && mark.Writer.RequestID != "" && mark.Writer.RequestSource == c.RequestSource {
		c.RequestID = mark.Writer.RequestID // the migration's request, by its source
	}
	if !mark.Live || !mark.Writer.IsRequest(c.RequestSource, c.RequestID) {
		by := "carries no request mark (written by Connect or another tool)"
		if mark.Writer != (offsetstore.Writer{}) {
			by = fmt.Sprintf("was written by request %s of %s", mark.Writer.RequestID, mark.Writer.RequestSource)
		}
		return f, fmt.Sprintf("not the connector this migration created: its connector record on B %s, not by request %s of %s",
			by, c.RequestID, c.RequestSource), nil
	}
	stB, ok, err := r.opts.B.Status(ctx, c.TargetName)
	if err != nil || !ok {
		return f, "", fmt.Errorf("read the status of connector %q on B: %w", c.TargetName, cmpErr(err, "no status"))
	}
	f.stateB = stB.Connector.State

	switch {
	case c.StoppedOnA && f.stateA != StateStopped:
		if f.stateA == f.before && f.stateB == StateStopped {
			f.resumed = true
			return f, "", nil
		}
		return f, fmt.Sprintf("A is %s, not STOPPED as the migration left it: someone resumed it on A", f.stateA), nil
	case !c.StoppedOnA && c.StateOnA != "" && f.stateA != c.StateOnA:
		return f, fmt.Sprintf("A is %s, the report says %s", f.stateA, c.StateOnA), nil
	}
	return f, "", nil
}

func cmpErr(err error, text string) error {
	if err != nil {
		return err
	}
	return errors.New(text)
}

// one rolls back one connector (or says what it would do).
func (r *runner) one(ctx context.Context, c *Connector) *ConnectorResult {
	res := &ConnectorResult{Name: c.Name, TargetName: c.TargetName, Type: c.Type, Partitions: []*PartitionResult{}}
	end := func(o Outcome, format string, args ...any) *ConnectorResult {
		res.Outcome = o
		if format != "" {
			res.Reason = fmt.Sprintf(format, args...)
		}
		return res
	}
	f, refusal, err := r.check(ctx, c)
	switch {
	case err != nil:
		return end(Failed, "%v; nothing was changed", err)
	case refusal != "":
		return end(Refused, "%s", refusal)
	case f.done:
		res.StateOnA, res.DeletedOnB = f.stateA, true
		res.Note = fmt.Sprintf("already rolled back: absent on B, A is %s", f.stateA)
		return end(RolledBack, "")
	}
	res.StateOnA = f.before
	if !c.StoppedOnA {
		res.StateOnA = f.stateA
		res.Note = "A was never stopped for it: A kept its own progress; B's output duplicated A's. Nothing is carried; it is only stopped and deleted on B"
		if !r.opts.Execute {
			return end(WouldRollBack, "")
		}
		if _, err := r.opts.StopOnB(ctx, *c); err != nil {
			return end(Failed, "stop on B: %v; A untouched", err)
		}
		res.StoppedOnB = true
		return r.deleteOnB(ctx, c, res)
	}
	if f.resumed {
		res.StoppedOnB = true
		res.Note = fmt.Sprintf("stopped on B and resumed %s on A by an earlier run: continues at deleting it on B", f.stateA)
		if !r.opts.Execute {
			return end(WouldRollBack, "")
		}
		return r.deleteOnB(ctx, c, res)
	}
	onA, err := r.opts.A.Offsets(ctx, c.Name)
	if err != nil {
		return end(Failed, "read the offsets of %q on A: %v; nothing was changed", c.Name, err)
	}
	if r.aOld || !r.opts.Execute {
		// Nothing is stopped: what B holds now is what it would carry.
		fromB, err := r.opts.B.Offsets(ctx, c.TargetName)
		if err != nil {
			return end(Failed, "read the offsets of %q on B: %v; nothing was changed", c.TargetName, err)
		}
		p, err := r.plan(ctx, c, fromB, onA)
		if err != nil {
			return end(Failed, "%v; nothing was changed", err)
		}
		res.Partitions = p.parts
		if r.aOld {
			return end(Refused, "A's Connect is version %s, older than 3.6: it has no PATCH /connectors/{name}/offsets. "+
				"The partitions list the offsets it would carry (B's, as of now); stop it on B and set them on A by hand", r.aVersion)
		}
		return end(WouldRollBack, "")
	}

	// Stop on B behind the barrier: B's progress is what it read.
	fromB, err := r.opts.StopOnB(ctx, *c)
	if err != nil {
		return end(Failed, "stop on B: %v; A untouched", err)
	}
	res.StoppedOnB = true
	p, err := r.plan(ctx, c, fromB, onA)
	if err != nil {
		return end(Failed, "%v; STOPPED on B and on A, nothing carried", err)
	}
	res.Partitions = p.parts
	if msg := r.carry(ctx, c, p, onA); msg != "" {
		return end(Failed, "%s", msg)
	}
	if err := r.resume(ctx, c.Name, f.before); err != nil {
		return end(KeptOnB, "resume on A: %v; kept STOPPED on B (B's progress is carried to A)", err)
	}
	return r.deleteOnB(ctx, c, res)
}

// carry PATCHes p's offsets on A and reads them back; "" when they are there (or A's
// connector refused them, and its partitions are now not carried), else why not.
func (r *runner) carry(ctx context.Context, c *Connector, p carryPlan, onA []events.ConnectorOffset) string {
	if len(p.patch) == 0 {
		return ""
	}
	err := r.opts.A.AlterOffsets(ctx, c.Name, p.patch)
	var ce *connectrest.Error
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 {
		// A's connector refused the offsets (its alterOffsets said no): A resumes at its own.
		own := offsetsByPartition(onA)
		for _, pr := range p.patched {
			pr.Verdict, pr.ToA = NotCarried, own[canonical(pr.Partition)]
			pr.Detail = fmt.Sprintf("A's connector refused the offsets (%s): A resumes at its own offset from the stop and delivers again what B delivered from there",
				oneLine(ce.Message, 200))
			p.replay(pr)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("carry to A (PATCH /connectors/%s/offsets): %v; STOPPED on A and on B", c.Name, err)
	}
	got, err := r.opts.A.Offsets(ctx, c.Name)
	if err != nil {
		return fmt.Sprintf("read back the offsets carried to A: %v; STOPPED on A and on B", err)
	}
	have := offsetsByPartition(got)
	for _, o := range p.patch {
		if canonical(have[canonical(o.Partition)]) != canonical(o.Offset) {
			return fmt.Sprintf("read back the offsets carried to A: partition %s holds %s on A, %s was sent; STOPPED on A and on B",
				canonical(o.Partition), canonical(have[canonical(o.Partition)]), canonical(o.Offset))
		}
	}
	return ""
}

// resume puts connector name on A in state and waits until its status shows it.
func (r *runner) resume(ctx context.Context, name, state string) error {
	var err error
	switch state {
	case StateRunning:
		err = r.opts.A.Resume(ctx, name)
	case StatePaused:
		err = r.opts.A.Pause(ctx, name)
	case StateStopped:
		return nil
	default:
		return fmt.Errorf("unknown state %q", state)
	}
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, r.opts.ResumeTimeout)
	defer cancel()
	tick := time.NewTicker(r.opts.Poll)
	defer tick.Stop()
	last := "unknown"
	for {
		st, ok, err := r.opts.A.Status(wctx, name)
		if err == nil && ok {
			last = st.Connector.State
			if last == state {
				return nil
			}
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("A's status is %s, not %s, after %s", last, state, r.opts.ResumeTimeout)
		case <-tick.C:
		}
	}
}

// deleteOnB deletes c on B when that is safe: the checks passed, it is stopped behind the
// barrier, its progress is on A, A is in its state before the move, and no request of the
// migration for it is pending on B. Otherwise it is kept STOPPED on B, saying why.
func (r *runner) deleteOnB(ctx context.Context, c *Connector, res *ConnectorResult) *ConnectorResult {
	keep := func(format string, args ...any) *ConnectorResult {
		res.Outcome, res.Reason = KeptOnB, fmt.Sprintf(format, args...)+"; kept STOPPED on B"
		return res
	}
	if r.opts.Pending == nil {
		return keep("whether a request of this migration for it is still pending on B was not checked (no result topic given)")
	}
	pending, err := r.opts.Pending(ctx, *c)
	if err != nil {
		return keep("whether request %s is still pending on B could not be checked: %v", c.RequestID, err)
	}
	if pending {
		return keep("request %s of this migration is still pending on B (no result yet)", c.RequestID)
	}
	if err := r.opts.B.Delete(ctx, c.TargetName); err != nil {
		return keep("delete on B: %v", err)
	}
	res.DeletedOnB = true
	res.Note = joinDetail(res.Note, "deleting it on B removed neither B's source offsets nor its sink group (Connect keeps them)")
	res.Outcome = RolledBack
	return res
}
