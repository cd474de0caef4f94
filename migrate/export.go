package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// ErrPrecheck marks a refusal before anything was stopped on A or published to B: bad flags,
// an unreachable cluster, a failed precheck. The caller should exit without retrying (status 2).
var ErrPrecheck = errors.New("precheck failed")

func precheckf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPrecheck, fmt.Sprintf(format, args...))
}

// SinkTranslator computes a sink connector's offsets on B from its offsets on A (the seam for
// translating them through MirrorMaker 2 checkpoints).
type SinkTranslator interface {
	// TranslateSink returns the offsets for sink c, created on B as target, and a detail for
	// the report entry's "translation" (nil for none). It does not change c: c's config on B
	// is configForB's. An error fails the connector at step StepTranslateSinkOffsets; a
	// non-nil detail is reported with it.
	TranslateSink(ctx context.Context, c *Connector, target string) (offsets []events.ConnectorOffset, detail any, err error)
}

// StepTranslateSinkOffsets is the failed_step of a connector whose sink offsets could not be
// translated.
const StepTranslateSinkOffsets = "translate_sink_offsets"

// Options configure Export and the export half of Migrate.
type Options struct {
	// Topics is where A's Connect topics are; nil reads A through ConnectURL only.
	Topics *TopicsSource
	// kubernetesNames: names on B are made KafkaConnector names (Migrate sets it for
	// MigrateOptions.Strimzi), before anything is stopped on A, so that two connectors
	// becoming one name stop the run first.
	kubernetesNames bool
	// existingOnB, when set, reads the connectors B has now, by name, for refuseExisting
	// (Migrate sets it for MigrateOptions.Strimzi): checked before anything is stopped on A.
	existingOnB func(context.Context) (map[string]map[string]string, error)
	// declared, with existingOnB, is a connector's config as its manifest declares it
	// (StrimziTarget.declaredConfig: secrets referenced in the Secret), for refuseExisting.
	declared func(name string, cfg events.Config) (events.Config, error)
	// ConnectURL is A's Connect REST API ("" for none). With Topics it is used to stop
	// connectors and to cross-check the listing.
	ConnectURL string
	// HTTPClient calls A's Connect REST API, with A's credentials and TLS settings (B's are
	// Target.HTTPClient); nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	Selection  Selection
	// AllowEmpty goes on, with a warning, when an --include, --exclude or --rename does
	// nothing to A's connectors, and makes a selection of none an empty report; without it
	// either is an error (UnmatchedError, NoneSelectedError) before anything is stopped.
	AllowEmpty bool
	// InitialState overrides the state carried over from A ("" keeps it).
	InitialState string
	// SinkOffsets is copy (default), none or translate; SinkTranslator, when set, replaces
	// copy (translate needs one: MM2Sinks).
	SinkOffsets    SinkOffsetsMode
	SinkTranslator SinkTranslator
	// SinkFollowsSource moves a pipeline that MirrorMaker 2's policy would cut apart on B (a
	// sink reading a topic a selected source writes, renamed on B) instead of refusing it: the
	// sink on B reads the topics the source writes on B, from their end on B when the
	// migration reads them, once A's sink has consumed all the stopped source wrote on A
	// (pipeline.go). It needs StopSource and --sink-offsets translate.
	SinkFollowsSource bool
	// stopPlanned: a dry run of a migration with StopSource, which stops nothing; a sink may
	// still be planned to follow its sources.
	stopPlanned bool
	// StopSource stops each selected connector on A first (needs ConnectURL) and waits for a
	// real stop barrier before reading its offsets. Before stopping a connector it records the
	// connector's state in States (required), and a later run takes the state from there.
	StopSource bool
	// States is where connectors' states on A are recorded before they are stopped (see
	// StateStore); nil or without brokers for none. Migrate fills in B's brokers and the
	// migration id.
	States *StateStore
	// StopTimeout bounds the stop barrier of one connector (default 2 minutes); StablePause is
	// the pause between the two offset reads that must agree (default 1 s); StopPoll the
	// status polling interval (default 250 ms).
	StopTimeout, StablePause, StopPoll time.Duration
	// Registry knows connector classes; nil means connectors.Builtin().
	Registry *connectors.Registry
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Registry == nil {
		o.Registry = connectors.Builtin()
	}
	o.Selection.reg = o.Registry
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SinkOffsets == "" {
		o.SinkOffsets = SinkOffsetsCopy
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 2 * time.Minute
	}
	if o.StablePause <= 0 {
		o.StablePause = time.Second
	}
	if o.StopPoll <= 0 {
		o.StopPoll = 250 * time.Millisecond
	}
}

func (o *Options) validate() error {
	var errs []string
	if o.Topics == nil && o.ConnectURL == "" {
		errs = append(errs, "A is read from --from-brokers or --from-connect-url: give at least one")
	}
	if o.StopSource && o.ConnectURL == "" {
		errs = append(errs, "--stop-source needs --from-connect-url")
	}
	switch o.InitialState {
	case "", StateRunning, StatePaused, StateStopped:
	default:
		errs = append(errs, fmt.Sprintf("--initial-state %q: want RUNNING, PAUSED or STOPPED", o.InitialState))
	}
	switch o.SinkOffsets {
	case SinkOffsetsCopy, SinkOffsetsNone:
	case SinkOffsetsTranslate:
		if o.SinkTranslator == nil {
			errs = append(errs, "--sink-offsets translate needs MirrorMaker 2's settings (--mm2-source-alias)")
		}
	default:
		errs = append(errs, fmt.Sprintf("--sink-offsets %q: want copy, none or translate", o.SinkOffsets))
	}
	if _, ok := o.SinkTranslator.(*MM2Sinks); o.SinkFollowsSource && !ok {
		errs = append(errs, "--sink-follows-source applies to sinks moved across MirrorMaker 2 (--mm2-source-alias, --sink-offsets translate)")
	}
	if len(errs) > 0 {
		return precheckf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// source is an open connection to A.
type source struct {
	opts   Options
	topics *topicsReader
	rest   *restReader
	// restDown is why A's REST API, given with StopSource, could not be reached (nothing
	// answers there): rest is nil, and a connector is stopped when no worker of A holds it.
	restDown error
	// states are the migration's recorded states (nil for none).
	states *states
	// b is B, for the hazard checks (nil for an export).
	b *targetSide
	// stopSlots bound the stop barriers calling A at once, stopReads their offsets reads after
	// a stable pause (stop.go).
	stopSlots, stopReads chan struct{}
}

// openSource checks opts and connects to A (reading its topics to the end).
func openSource(ctx context.Context, opts Options) (*source, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &source{opts: opts}
	if opts.ConnectURL != "" {
		r, err := newRESTReader(opts.ConnectURL, opts.HTTPClient, opts.Registry)
		if err != nil {
			return nil, precheckf("--from-connect-url: %v", err)
		}
		_, err = r.root(ctx)
		switch {
		case err == nil:
			s.rest = r
		case opts.StopSource && opts.Topics != nil && restUnreachable(err):
			// Nothing answers at A's REST API: a connector is stopped on A when no worker of
			// A holds it, as A's Kafka cluster tells (workersofa.go).
			s.restDown = err
			opts.Logger.Warn("A's Connect REST API is unreachable: --stop-source takes a connector for stopped on A when no live worker of A holds it, "+
				"as the Connect groups on A's Kafka cluster say", "url", redactURL(opts.ConnectURL), "err", err)
		case opts.StopSource && restUnreachable(err):
			return nil, precheckf("A's Connect REST API is unreachable: %v; with --from-brokers, --stop-source takes a connector for stopped on A "+
				"when no live worker of A holds it, as the Connect groups on A's Kafka cluster say", err)
		default:
			return nil, precheckf("A's Connect REST API is unreachable: %v", err)
		}
	}
	if opts.Topics != nil {
		t, err := openTopics(ctx, *opts.Topics, opts.Registry, opts.Logger)
		if err != nil {
			return nil, precheckf("A's Kafka cluster: %v", err)
		}
		s.topics = t
		t.rest = s.rest
	}
	return s, nil
}

// workers is the check of the Connect groups on A's Kafka cluster (with A's topics read).
func (s *source) workers() workersOfA {
	return workersOfA{cl: s.topics.client, principal: s.topics.src.Principal, configTopic: s.topics.src.ConfigTopic}
}

func (s *source) close() {
	if s.topics != nil {
		s.topics.close()
	}
	s.states.close()
}

// openStates opens the state records of opts.States for migration id (derived from A's
// cluster id when "" and States has none), creating the topic with StopSource. Without
// StopSource and without a topic, there are no records.
func (s *source) openStates(ctx context.Context, clusterA, id string) error {
	st := s.opts.States
	if st == nil || len(st.Brokers) == 0 {
		if s.opts.StopSource {
			return precheckf("--stop-source records each connector's state on A before stopping it, in topic %q on B: give --to-brokers", DefaultStateTopic)
		}
		return nil
	}
	cp := *st
	if id != "" {
		cp.MigrationID = id
	}
	if cp.MigrationID == "" {
		cp.MigrationID = DeriveMigrationID(clusterA, cp.SelectionKey)
	}
	if strings.ContainsAny(cp.MigrationID, "/ \t\n") {
		return precheckf("--migration-id %q: no '/' or spaces", cp.MigrationID)
	}
	states, err := openStates(ctx, cp, s.describe(), s.opts.StopSource, s.opts.Logger)
	if err != nil {
		return precheckf("the migration's state topic %q: %v", cp.topic(), err)
	}
	s.states = states
	return nil
}

// resolveStates settles the state each selected connector is created in, before anything is
// stopped: the recorded one where an earlier run of the migration recorded it (A now shows the
// STOPPED that run left); else A's state as read. A connector whose state cannot be known is
// refused (it gets a Problem) unless InitialState overrides the state: read through REST only
// with a status that does not tell the target state, or, with StopSource, STOPPED on A with no
// record (stopped by hand or by another migration, so the state it had before is lost).
func (s *source) resolveStates(entries []*Entry) {
	for _, e := range entries {
		c := e.connector
		if c.Problem != "" {
			continue
		}
		if st, ok := s.states.get(c.Name); ok {
			c.State, c.StateUnknown, c.stateRecorded = st, "", true
			continue
		}
		if s.opts.InitialState != "" {
			continue
		}
		switch {
		case c.StateUnknown != "":
			c.Problem = "state on A unknown: " + c.StateUnknown + "; give --initial-state, or read A with --from-brokers"
		case s.opts.StopSource && c.State == StateStopped:
			c.Problem = fmt.Sprintf("state on A unknown: the connector is STOPPED on A and no run of migration %s recorded its state before stopping it "+
				"(it was stopped by hand or by another migration), so the state to create it in on B is not known; give --initial-state, or resume it on A first",
				s.states.migrationID())
		}
	}
}

// describe names A for the report.
func (s *source) describe() string {
	var parts []string
	if s.opts.Topics != nil {
		parts = append(parts, strings.Join(s.opts.Topics.Brokers, ","))
	}
	if s.opts.ConnectURL != "" {
		parts = append(parts, redactURL(s.opts.ConnectURL))
	}
	return strings.Join(parts, " ")
}

// clusterID is A's Kafka cluster id, from its brokers or its Connect REST API.
func (s *source) clusterID(ctx context.Context) (string, error) {
	if s.topics != nil {
		return s.topics.clusterID(ctx)
	}
	ri, err := s.rest.root(ctx)
	return ri.KafkaClusterID, err
}

// list reads every connector of A: from the topics when they are read (the REST listing is
// then only cross-checked), else from the REST API.
func (s *source) list(ctx context.Context) ([]*Connector, error) {
	if s.topics == nil {
		cs, err := s.rest.list(ctx)
		if err != nil {
			return nil, precheckf("read A's connectors: %v", err)
		}
		return cs, nil
	}
	cs, err := s.topics.list(ctx)
	if err != nil {
		return nil, precheckf("read A's connectors: %v", err)
	}
	if s.rest != nil {
		var names []string
		if _, err := s.rest.c.Call(ctx, http.MethodGet, "/connectors", nil, &names); err != nil {
			return nil, precheckf("list A's connectors: %v", err)
		}
		known := map[string]bool{}
		for _, c := range cs {
			known[c.Name] = true
		}
		for _, n := range names {
			if !known[n] {
				s.opts.Logger.Warn("connector listed by A's REST API is not in its config topic", "connector", n)
			}
		}
	}
	return cs, nil
}

// collect lists A's connectors, selects them, stops them with StopSource, and builds their
// bodies. Connectors that cannot be exported are entries with OutcomeSkipped and no body.
func (s *source) collect(ctx context.Context) ([]*Entry, error) {
	entries, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	s.build(ctx, entries)
	return entries, nil
}

// prepare lists A's connectors and selects them, and runs the checks that come before
// anything is stopped: their states, their pipelines, the stop's preconditions.
func (s *source) prepare(ctx context.Context) ([]*Entry, error) {
	all, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	sel := s.opts.Selection
	var entries []*Entry
	byTarget := map[string]string{}
	for _, c := range all {
		if !sel.Selected(c.Name) {
			continue
		}
		e := &Entry{Name: c.Name, TargetName: sel.TargetName(c.Name), Type: string(c.Type), connector: c}
		if s.opts.kubernetesNames {
			kubernetesTarget(e)
		}
		if prev, dup := byTarget[e.TargetName]; dup {
			if s.opts.kubernetesNames {
				return nil, precheckf("connectors %q and %q both become KafkaConnector %q: rename one (--rename)", prev, c.Name, e.TargetName)
			}
			return nil, precheckf("--rename maps both %q and %q to %q", prev, c.Name, e.TargetName)
		}
		byTarget[e.TargetName] = c.Name
		if e.TargetName == "" {
			return nil, precheckf("--rename maps %q to an empty name", c.Name)
		}
		entries = append(entries, e)
	}
	names := make([]string, 0, len(all))
	for _, c := range all {
		names = append(names, c.Name)
	}
	unmatched := sel.Unmatched(names)
	switch {
	case s.opts.AllowEmpty:
		for _, u := range unmatched {
			s.opts.Logger.Warn("a selection flag does nothing; going on (--allow-empty)", "flag", u)
		}
		if len(entries) == 0 {
			s.opts.Logger.Warn("no connector of A matches the selection: nothing to do (--allow-empty)")
			return nil, nil
		}
	case len(entries) == 0:
		return nil, noneSelected(all)
	case len(unmatched) > 0:
		none := noneSelected(all)
		return nil, &UnmatchedError{Flags: unmatched, Total: none.Total, Examples: none.Examples}
	}
	s.resolveStates(entries)
	s.checkPipelines(ctx, entries)
	s.checkHazards(ctx, entries)
	if s.opts.existingOnB != nil { // after the checks that decide the config on B (configForB)
		onB, err := s.opts.existingOnB(ctx)
		if err != nil {
			return nil, precheckf("read the connectors B has: %v", err)
		}
		refuseExisting(entries, onB, s.configForB, s.opts.declared)
	}
	if s.opts.StopSource {
		if err := s.stopPrecheck(entries); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// build stops the entries' connectors with StopSource, and builds their bodies.
func (s *source) build(ctx context.Context, entries []*Entry) {
	if s.opts.StopSource {
		s.stopAll(ctx, entries)
	}
	var err error
	for _, e := range entries {
		c := e.connector
		if c.Problem != "" {
			e.skip(scrub(s.opts.Registry, c.Config, c.Problem))
			continue
		}
		var sinkOffs []events.ConnectorOffset
		if c.Type == connectors.Sink {
			sinkOffs = c.Offsets
			if m, ok := s.opts.SinkTranslator.(*MM2Sinks); ok && c.follows != nil {
				sinkOffs, e.Translation, err = m.followSource(ctx, c)
				if err != nil {
					e.Outcome, e.FailedStep, e.Message = OutcomeFailed, StepTranslateSinkOffsets, scrub(s.opts.Registry, c.Config, err.Error())
					continue
				}
			} else if s.opts.SinkTranslator != nil {
				sinkOffs, e.Translation, err = s.opts.SinkTranslator.TranslateSink(ctx, c, e.TargetName)
				if err != nil {
					e.Outcome, e.FailedStep, e.Message = OutcomeFailed, StepTranslateSinkOffsets, scrub(s.opts.Registry, c.Config, err.Error())
					continue
				}
			}
		}
		b := buildBody(c, e.TargetName, s.configForB(c, e.TargetName), s.opts.InitialState, sinkOffs, s.opts.SinkOffsets)
		b.InitialOffsets = c.rekey.apply(b.InitialOffsets)
		e.Rewrites = s.rewrites(c, c.Config, b.Config, e.TargetName)
		e.Body = &b
		e.Offsets = len(b.InitialOffsets)
		e.Outcome = OutcomePlanned
		if c.stoppedBy != "" && c.stoppedBy != stoppedByREST {
			e.Warnings = append(e.Warnings, "stopped on A without A's REST API (unreachable): "+c.stoppedBy+
				"; its target state on A is unchanged: do not restart A's workers with it (they would resume it on A), and stop or delete it there once they are back")
		}
	}
}

// Export reads A and builds one body per selected connector. Per-connector problems are in
// the report's entries; an error (wrapping ErrPrecheck when nothing could be read) means no
// report.
func Export(ctx context.Context, opts Options) (*Report, error) {
	started := time.Now().UTC()
	src, err := openSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if src.opts.States != nil && len(src.opts.States.Brokers) > 0 || src.opts.StopSource {
		clusterA, err := src.clusterID(ctx)
		if err != nil {
			return nil, precheckf("A's cluster id: %v", err)
		}
		if err := src.openStates(ctx, clusterA, ""); err != nil {
			return nil, err
		}
	}
	entries, err := src.collect(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Outcome == OutcomeSkipped {
			src.opts.Logger.Warn("skip connector", "connector", e.Name, "err", e.Message)
		}
	}
	return &Report{From: src.describe(), Started: started, Finished: time.Now().UTC(), Connectors: entries}, nil
}

// WriteBodies writes the body of every planned entry as one JSON line.
func WriteBodies(w io.Writer, r *Report) error {
	for _, e := range r.Connectors {
		if e.Body == nil {
			continue
		}
		b, err := e.Body.MarshalJSON()
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write body of connector %q: %w", e.Name, err)
		}
	}
	return nil
}
