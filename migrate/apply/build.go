package apply

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// SinkTranslator computes a sink connector's offsets on B from its offsets on A (the seam for
// translating them through MirrorMaker 2 checkpoints).
type SinkTranslator interface {
	// TranslateSink returns the offsets for sink c, created on B as target, and a detail for
	// the report entry's "translation" (nil for none). It does not change c: c's config on B
	// is ConfigOnB's. An error fails the connector at step StepTranslateSinkOffsets; a
	// non-nil detail is reported with it.
	TranslateSink(ctx context.Context, c *fleet.Connector, target string) (offsets []events.ConnectorOffset, detail any, err error)
}

// StepTranslateSinkOffsets is the failed_step of a connector whose sink offsets could not be
// translated.
const StepTranslateSinkOffsets = "translate_sink_offsets"

// Options say how a plan is carried out: the stop on A (StopSource and its bounds), the
// sink offsets, the requests to B's agents and the wait for their results.
type Options struct {
	// StopSource stops each connector on A first, behind a real stop barrier: StopTimeout
	// bounds one connector's, StablePause is the pause between the two offset reads that must
	// agree, StopPoll the status polling interval.
	StopSource                         bool
	StopTimeout, StablePause, StopPoll time.Duration
	// InitialState overrides the state carried over from A ("" keeps it).
	InitialState string
	// SinkOffsets is the mode of the sinks' offsets: MM2 translates them through MirrorMaker
	// 2's checkpoints, SinkTranslator otherwise (nil: copy or none).
	SinkOffsets    fleet.SinkOffsetsMode
	SinkTranslator SinkTranslator
	MM2            *fleet.MM2
	// To is B; MigrationID names the run's requests.
	To          target.Target
	MigrationID string
	// Concurrency bounds the requests in flight; WaveSize the connectors a wave stops and
	// publishes (with StopSource); Timeout bounds each wave and is its requests' deadline
	// after it starts publishing; Grace is how long results are awaited past it.
	Concurrency, WaveSize int
	Timeout, Grace        time.Duration
	// DryRun publishes dry-run requests: B's agents plan and change nothing.
	DryRun bool
	// Progress is told each outcome (nil for none), and every WaitReport how the wait stands.
	Progress   Progress
	WaitReport time.Duration
	// WaveDone, when not nil, is told after each wave, once its connectors' outcomes are known,
	// what the run has done so far (Done), from one goroutine, in the waves' order.
	WaveDone func(Done)
	// OffsetsOnly: B is operator-managed; the requests place the offsets only (strimzi.go).
	OffsetsOnly bool
	// Registry knows connector classes; Logger receives warnings. Neither is nil.
	Registry *connectors.Registry
	Logger   *slog.Logger
}

// Applier carries out a plan: it stops the connectors on A (a), builds their bodies and
// publishes them to B's agents, whose results are read from results; restB is B's Connect
// REST API (nil when not given), asked at the giveup; blocked are the sinks' groups
// MirrorMaker 2 will not checkpoint.
type Applier struct {
	opts    Options
	a       *source.A
	blocked map[string]bool
	results *Results
	restB   *connectrest.Client
	// stopSlots bound the stop barriers calling A at once, stopReads their offsets reads after
	// a stable pause (stop.go).
	stopSlots, stopReads chan struct{}
}

// New is the applier of a plan: opts, A (a), the sinks' groups MirrorMaker 2 will not
// checkpoint (blocked, the plan's), and for a migration B's results and B's REST API (nil for
// an export).
func New(opts Options, a *source.A, blocked map[string]bool, results *Results, restB *connectrest.Client) *Applier {
	return &Applier{opts: opts, a: a, blocked: blocked, results: results, restB: restB,
		stopSlots: make(chan struct{}, stopConcurrency), stopReads: make(chan struct{}, stopConcurrency)}
}

// plainTexts are ss as Texts that name no setting.
func plainTexts(ss []string) []fleet.Text {
	var out []fleet.Text
	for _, s := range ss {
		out = append(out, fleet.Plain(s))
	}
	return out
}

// EntriesOf is the report's entry of each connector of p, before anything is built.
func EntriesOf(p *plan.Plan) []*Entry {
	var out []*Entry
	for _, pc := range p.Connectors {
		out = append(out, &Entry{Name: pc.Connector.Name, TargetName: pc.Target, Type: string(pc.Connector.Type),
			Warnings: plainTexts(pc.Warnings), Hazards: slices.Clone(pc.Hazards), Connector: pc.Connector, Planned: pc})
	}
	return out
}

// Build stops the entries' connectors with StopSource, and builds their bodies.
func (ap *Applier) Build(ctx context.Context, entries []*Entry) { ap.build(ctx, entries, nil) }

// build is Build; called, when not nil, is stopAll's (with StopSource).
func (ap *Applier) build(ctx context.Context, entries []*Entry, called func()) {
	if ap.opts.StopSource {
		ap.stopAll(ctx, entries, called)
	}
	for _, e := range entries {
		c := e.Connector
		if !c.Problem.IsZero() {
			e.skip(fleet.ScrubText(ap.opts.Registry, c.Config, c.Problem))
			continue
		}
		var sinkOffs []events.ConnectorOffset
		if c.Type == connectors.Sink {
			var err error
			sinkOffs = c.Offsets
			switch m := ap.opts.MM2; {
			case m != nil && e.follows() != nil:
				sinkOffs, e.Translation, err = followSource(ctx, m, c, e.follows(), e.drained)
			case m != nil:
				sinkOffs, e.Translation, err = translateSink(ctx, m, c, ap.blocked[c.Group])
			case ap.opts.SinkTranslator != nil:
				sinkOffs, e.Translation, err = ap.opts.SinkTranslator.TranslateSink(ctx, c, e.TargetName)
			}
			if err != nil {
				e.Outcome, e.FailedStep, e.Message = OutcomeFailed, StepTranslateSinkOffsets, fleet.ScrubText(ap.opts.Registry, c.Config, fleet.Textf("%v", err))
				continue
			}
		}
		b := buildBody(c, e.TargetName, e.Planned.OnB, ap.opts.InitialState, sinkOffs, ap.opts.SinkOffsets)
		b.InitialOffsets = e.Rekey().Apply(b.InitialOffsets)
		e.Rewrites = e.Planned.Rewrites
		e.Body = &b
		e.Offsets = len(b.InitialOffsets)
		e.Outcome = OutcomePlanned
		if e.StoppedBy != "" && e.StoppedBy != StoppedByREST {
			e.Warnings = append(e.Warnings, fleet.Plain("stopped on A without A's REST API (unreachable): "+e.StoppedBy+
				"; its target state on A is unchanged: do not restart A's workers with it (they would resume it on A), and stop or delete it there once they are back"))
		}
	}
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

// PrepareStrimzi readies the entries for an operator-managed B: every body asks for the
// offsets only, and a connector without offsets on A gets no request (there is nothing to
// place; its manifest creates it as POST /connectors without offsets would). Names are
// Kubernetes names already (kubernetesTarget, while A was read).
func PrepareStrimzi(entries []*Entry) {
	for _, e := range entries {
		if e.Body == nil {
			continue
		}
		if e.Body.HasOffsets {
			e.Body.Create = events.CreateOffsetsOnly
		} else {
			e.Local = true
		}
	}
}
