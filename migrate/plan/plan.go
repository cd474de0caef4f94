package plan

import (
	"context"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// Connector is a selected connector as the plan has it: A's connector, its name on B, what the
// checks found and the repairs they planned, the config it will have on B and what the
// migration itself changes in it.
type Connector struct {
	Connector *fleet.Connector
	Target    string
	// Warnings are what the plan changed on the way (a name made a Kubernetes name).
	Warnings []string
	Hazards  []hazard.Hazard
	// OnB is the config the connector will have on B (ConfigOnB); Rewrites the settings the
	// migration itself changed in it (topicnames.go).
	OnB      events.Config
	Rewrites []Edit
	// Follows is set on a sink moved with --sink-follows-source (pipeline.go); Rekey moves a
	// Debezium connector's offsets to its logical name on B (family.go).
	Follows *hazard.Following
	Rekey   *fleet.Rekey
}

// Plan is what a run moves: the selected connectors, and the sinks' groups MirrorMaker 2
// will not checkpoint (mm2health.go: their translation waits for no checkpoint).
type Plan struct {
	Connectors []*Connector
	Blocked    map[string]bool
}

// Options say what a plan selects and checks.
type Options struct {
	// Hazard are the hazard checks' options; their Selection picks the connectors and names
	// them on B, their Logger receives warnings.
	Hazard hazard.Options
	// AllowEmpty goes on, with a warning, when a selection flag does nothing to A's
	// connectors, and makes a selection of none an empty plan (Options.AllowEmpty).
	AllowEmpty bool
	// KubernetesNames makes names on B KafkaConnector names (an operator-managed B), before
	// anything is stopped on A, so that two connectors becoming one name stop the run first.
	KubernetesNames bool
	// ExistingOnB, when set, reads the connectors B has now, by name, for refuseExisting (an
	// operator-managed B); Declared is a connector's config as its manifest declares it
	// (Target.declaredConfig: secrets referenced in the Secret), nil for as it is.
	ExistingOnB func(context.Context) (map[string]map[string]string, error)
	Declared    func(name string, cfg events.Config) (events.Config, error)
	// Only, when not nil, narrows the selection to these of A's connectors (a plan file's:
	// apply never moves a connector the plan did not hold).
	Only map[string]bool
}

// Build lists A's connectors and selects them, and runs the checks that come before
// anything is stopped: their states, their pipelines and hazards on B (b; nil for an export),
// the stop's preconditions.
func Build(ctx context.Context, s *source.A, b *hazard.B, opts Options) (*Plan, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	sel := opts.Hazard.Selection
	var subjects []*hazard.Subject
	warnings := map[*hazard.Subject][]string{}
	byTarget := map[string]string{}
	for _, c := range all {
		if !sel.Selected(c.Name) || (opts.Only != nil && !opts.Only[c.Name]) {
			continue
		}
		e := &hazard.Subject{Connector: c, Target: sel.TargetName(c.Name)}
		if opts.KubernetesNames {
			if k, warning := kubernetesTarget(e.Target); warning != "" {
				warnings[e] = append(warnings[e], warning)
				e.Target = k
			}
		}
		if prev, dup := byTarget[e.Target]; dup {
			if opts.KubernetesNames {
				return nil, fleet.Precheckf("connectors %q and %q both become KafkaConnector %q: rename one (%s)", prev, c.Name, e.Target, fleet.Rename)
			}
			return nil, fleet.Precheckf("%s maps both %q and %q to %q", fleet.Rename, prev, c.Name, e.Target)
		}
		byTarget[e.Target] = c.Name
		if e.Target == "" {
			return nil, fleet.Precheckf("%s maps %q to an empty name", fleet.Rename, c.Name)
		}
		subjects = append(subjects, e)
	}
	names := make([]string, 0, len(all))
	for _, c := range all {
		names = append(names, c.Name)
	}
	unmatched := sel.Unmatched(names)
	switch {
	case opts.AllowEmpty:
		for _, u := range unmatched {
			fleet.Warn(opts.Hazard.Logger, fleet.Textf("a selection flag does nothing; going on (%s)", fleet.AllowEmpty), "flag", u)
		}
		if len(subjects) == 0 {
			fleet.Warn(opts.Hazard.Logger, fleet.Textf("no connector of A matches the selection: nothing to do (%s)", fleet.AllowEmpty))
			return &Plan{}, nil
		}
	case len(subjects) == 0:
		return nil, source.NoneSelected(all)
	case len(unmatched) > 0:
		none := source.NoneSelected(all)
		return nil, &source.UnmatchedError{Flags: unmatched, Total: none.Total, Examples: none.Examples}
	}
	selected := make([]*fleet.Connector, len(subjects))
	for i, e := range subjects {
		selected[i] = e.Connector
	}
	s.ResolveStates(selected)
	hc := hazard.NewChecks(opts.Hazard, s, b)
	hc.CheckPipelines(ctx, subjects)
	hc.CheckHazards(ctx, subjects)
	p := &Plan{Blocked: hc.Blocked}
	for _, e := range subjects {
		onB := hc.ConfigOnB(e)
		p.Connectors = append(p.Connectors, &Connector{Connector: e.Connector, Target: e.Target, Warnings: warnings[e], Hazards: e.Hazards,
			OnB: onB, Rewrites: editsOf(opts.Hazard, e, onB), Follows: e.Follows, Rekey: e.Rekey})
	}
	if opts.ExistingOnB != nil { // after the checks that decide the config on B (ConfigOnB)
		onB, err := opts.ExistingOnB(ctx)
		if err != nil {
			return nil, fleet.Precheckf("read the connectors B has: %v", err)
		}
		refuseExisting(p.Connectors, onB, opts.Declared)
	}
	if opts.Hazard.StopSource {
		if err := s.CheckStop(selected); err != nil {
			return nil, err
		}
	}
	return p, nil
}
