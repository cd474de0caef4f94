package migrate

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// Options configure Export and the export half of Migrate.
type Options struct {
	// Topics is where A's Connect topics are; nil reads A through ConnectURL only.
	Topics *source.TopicsSource
	// ConnectURL is A's Connect REST API ("" for none). With Topics it is used to stop
	// connectors and to cross-check the listing.
	ConnectURL string
	// HTTPClient calls A's Connect REST API, with A's credentials and TLS settings (B's are
	// Target.HTTPClient); nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	Selection  source.Selection
	// AllowEmpty goes on, with a warning, when an --include, --exclude or --rename does
	// nothing to A's connectors, and makes a selection of none an empty report; without it
	// either is an error (UnmatchedError, NoneSelectedError) before anything is stopped.
	AllowEmpty bool
	// InitialState overrides the state carried over from A ("" keeps it).
	InitialState string
	// SinkOffsets is copy (default), none or translate. Translate needs MM2, MirrorMaker 2's
	// settings, or another SinkTranslator, which then replaces copy.
	SinkOffsets    fleet.SinkOffsetsMode
	MM2            *fleet.MM2
	SinkTranslator apply.SinkTranslator
	// SinkFollowsSource moves a pipeline that MirrorMaker 2's policy would cut apart on B (a
	// sink reading a topic a selected source writes, renamed on B) instead of refusing it: the
	// sink on B reads the topics the source writes on B, from their end on B when the
	// migration reads them, once A's sink has consumed all the stopped source wrote on A
	// (pipeline.go). It needs StopSource and --sink-offsets translate.
	SinkFollowsSource bool
	// StopSource stops each selected connector on A first (needs ConnectURL) and waits for a
	// real stop barrier before reading its offsets. Before stopping a connector it records the
	// connector's state in States (required), and a later run takes the state from there.
	StopSource bool
	// States is where connectors' states on A are recorded before they are stopped (see
	// StateStore); nil or without brokers for none. Migrate fills in B's brokers and the
	// migration id.
	States *source.StateStore
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
	o.Selection.SetRegistry(o.Registry)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SinkOffsets == "" {
		o.SinkOffsets = fleet.SinkOffsetsCopy
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
	var errs []fleet.Text
	if o.Topics == nil && o.ConnectURL == "" {
		errs = append(errs, fleet.Textf("A is read from %s or %s: give at least one", fleet.FromBrokers, fleet.FromConnectURL))
	}
	if o.StopSource && o.ConnectURL == "" {
		errs = append(errs, fleet.Textf("%s needs %s", fleet.StopSource, fleet.FromConnectURL))
	}
	switch o.InitialState {
	case "", fleet.StateRunning, fleet.StatePaused, fleet.StateStopped:
	default:
		errs = append(errs, fleet.Textf("%s %q: want RUNNING, PAUSED or STOPPED", fleet.InitialState, o.InitialState))
	}
	switch o.SinkOffsets {
	case fleet.SinkOffsetsCopy, fleet.SinkOffsetsNone:
	case fleet.SinkOffsetsTranslate:
		if o.MM2 == nil && o.SinkTranslator == nil {
			errs = append(errs, fleet.Textf("%s needs MirrorMaker 2's settings (%s)", fleet.Give{Setting: fleet.SinkOffsets, Value: "translate"}, fleet.MM2SourceAlias))
		}
	default:
		errs = append(errs, fleet.Textf("%s %q: want copy, none or translate", fleet.SinkOffsets, o.SinkOffsets))
	}
	if o.SinkFollowsSource && o.MM2 == nil {
		errs = append(errs, fleet.Textf("%s applies to sinks moved across MirrorMaker 2 (%s, %s)", fleet.SinkFollowsSource, fleet.MM2SourceAlias,
			fleet.Give{Setting: fleet.SinkOffsets, Value: "translate"}))
	}
	if len(errs) > 0 {
		return fleet.Precheckf("%v", fleet.Join(errs, "; "))
	}
	return nil
}

// sourceOptions are what reading A takes of o.
func (o *Options) sourceOptions() source.Options {
	return source.Options{Topics: o.Topics, ConnectURL: o.ConnectURL, HTTPClient: o.HTTPClient, StopSource: o.StopSource,
		InitialState: o.InitialState, States: o.States, Registry: o.Registry, Logger: o.Logger}
}

// hazardOptions are what the hazard checks take of o; stopPlanned: a dry run of a run with
// StopSource, which stops nothing (a sink may still be planned to follow its sources).
func (o *Options) hazardOptions(stopPlanned bool) hazard.Options {
	return hazard.Options{Selection: o.Selection, MM2: o.MM2, Translated: o.MM2 != nil || o.SinkTranslator != nil, SinkOffsets: o.SinkOffsets,
		SinkFollowsSource: o.SinkFollowsSource, StopSource: o.StopSource, StopPlanned: stopPlanned, Registry: o.Registry, Logger: o.Logger}
}

// applyOptions are what carrying out a plan takes of o (an export's: no B).
func (o *Options) applyOptions() apply.Options {
	return apply.Options{StopSource: o.StopSource, StopTimeout: o.StopTimeout, StablePause: o.StablePause, StopPoll: o.StopPoll,
		InitialState: o.InitialState, SinkOffsets: o.SinkOffsets, SinkTranslator: o.SinkTranslator, MM2: o.MM2,
		Registry: o.Registry, Logger: o.Logger}
}

// Export reads A and builds one body per selected connector. Per-connector problems are in
// the report's entries; an error (wrapping ErrPrecheck when nothing could be read) means no
// report.
func Export(ctx context.Context, opts Options) (*apply.Report, error) {
	return export(ctx, opts, false)
}

// export is Export; kubernetesNames makes names on B KafkaConnector names (planOptions).
func export(ctx context.Context, opts Options, kubernetesNames bool) (*apply.Report, error) {
	started := time.Now().UTC()
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	src, err := source.Open(ctx, opts.sourceOptions())
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if opts.States != nil && len(opts.States.Brokers) > 0 || opts.StopSource {
		clusterA, err := src.ClusterID(ctx)
		if err != nil {
			return nil, fleet.Precheckf("A's cluster id: %v", err)
		}
		if err := src.OpenStates(ctx, clusterA, ""); err != nil {
			return nil, err
		}
	}
	// Selected, checked (there is no B) and, with StopSource, stopped; every body built.
	p, err := plan.Build(ctx, src, nil, plan.Options{Hazard: opts.hazardOptions(false), AllowEmpty: opts.AllowEmpty,
		KubernetesNames: kubernetesNames})
	if err != nil {
		return nil, err
	}
	entries := apply.EntriesOf(p)
	ap := apply.New(opts.applyOptions(), src, p.Blocked, nil, nil)
	ap.Build(ctx, entries)
	for _, e := range entries {
		if e.Outcome == apply.OutcomeSkipped {
			opts.Logger.Warn("skip connector", "connector", e.Name, "err", e.Message)
		}
	}
	return &apply.Report{From: src.Describe(), Started: started, Finished: time.Now().UTC(), Connectors: entries}, nil
}
