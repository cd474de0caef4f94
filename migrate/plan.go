package migrate

import (
	"context"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/migrate/strimzi"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// planned is a selected connector as the plan has it: A's connector, its name on B, what the
// checks found and the repairs they planned, the config it will have on B and what the
// migration itself changes in it.
type planned struct {
	Connector *fleet.Connector
	Target    string
	// Warnings are what the plan changed on the way (a name made a Kubernetes name).
	Warnings []string
	Hazards  []Hazard
	// OnB is the config the connector will have on B (configForB); Rewrites the settings the
	// migration itself changed in it (topicnames.go).
	OnB      events.Config
	Rewrites []ConfigRewrite
	// Follows is set on a sink moved with --sink-follows-source (pipeline.go); Rekey moves a
	// Debezium connector's offsets to its logical name on B (family.go).
	Follows *following
	Rekey   *fleet.Rekey
}

// fleetPlan is what a run moves: the selected connectors, and the sinks' groups MirrorMaker 2
// will not checkpoint (mm2health.go: their translation waits for no checkpoint).
type fleetPlan struct {
	Connectors []*planned
	Blocked    map[string]bool
}

// planOptions say what a plan selects and checks.
type planOptions struct {
	// Hazard are the hazard checks' options; their Selection picks the connectors and names
	// them on B, their Logger receives warnings.
	Hazard hazardOptions
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
}

// buildPlan lists A's connectors and selects them, and runs the checks that come before
// anything is stopped: their states, their pipelines and hazards on B (b; nil for an export),
// the stop's preconditions.
func buildPlan(ctx context.Context, s *source.A, b *targetSide, opts planOptions) (*fleetPlan, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	sel := opts.Hazard.Selection
	var subjects []*subject
	warnings := map[*subject][]string{}
	byTarget := map[string]string{}
	for _, c := range all {
		if !sel.Selected(c.Name) {
			continue
		}
		e := &subject{Connector: c, Target: sel.TargetName(c.Name)}
		if opts.KubernetesNames {
			if k, warning := kubernetesTarget(e.Target); warning != "" {
				warnings[e] = append(warnings[e], warning)
				e.Target = k
			}
		}
		if prev, dup := byTarget[e.Target]; dup {
			if opts.KubernetesNames {
				return nil, fleet.Precheckf("connectors %q and %q both become KafkaConnector %q: rename one (--rename)", prev, c.Name, e.Target)
			}
			return nil, fleet.Precheckf("--rename maps both %q and %q to %q", prev, c.Name, e.Target)
		}
		byTarget[e.Target] = c.Name
		if e.Target == "" {
			return nil, fleet.Precheckf("--rename maps %q to an empty name", c.Name)
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
			opts.Hazard.Logger.Warn("a selection flag does nothing; going on (--allow-empty)", "flag", u)
		}
		if len(subjects) == 0 {
			opts.Hazard.Logger.Warn("no connector of A matches the selection: nothing to do (--allow-empty)")
			return &fleetPlan{}, nil
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
	hc := &checks{opts: opts.Hazard, a: s, b: b}
	hc.checkPipelines(ctx, subjects)
	hc.checkHazards(ctx, subjects)
	p := &fleetPlan{Blocked: hc.blocked}
	for _, e := range subjects {
		onB := hc.configForB(e)
		p.Connectors = append(p.Connectors, &planned{Connector: e.Connector, Target: e.Target, Warnings: warnings[e], Hazards: e.Hazards,
			OnB: onB, Rewrites: planRewrites(opts.Hazard, e, onB), Follows: e.Follows, Rekey: e.Rekey})
	}
	if opts.ExistingOnB != nil { // after the checks that decide the config on B (configForB)
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

// kubernetesTarget is target, a name on B, made a KafkaConnector name (the operator names a
// connector after its resource), and the warning of a rename ("" when it is one already).
func kubernetesTarget(target string) (string, string) {
	k := strimzi.KubernetesName(target)
	if k == target {
		return target, ""
	}
	return k, fmt.Sprintf("named %s on B: %q is not a Kubernetes resource name, and the operator names a connector after its KafkaConnector", k, target)
}

// refuseExisting gives a Problem (409) to each connector of the plan that exists on B, as B's config
// topic holds it now, with another config than its manifest declares (configForB, the config
// on B every check judges: the edit flags, and a sink's MirrorMaker 2 topic names and
// restoring transform; then declared, the config with its secrets referenced in the Secret,
// nil leaving it as it is): applying the manifest would replace that connector's config (the
// operator updates an existing connector with PUT .../config), and an offsets-only request
// would be refused anyway. A connector whose manifest cannot be declared (a secret that cannot
// be referenced) gets that Problem. Every selected connector is checked, with or without
// offsets on A, before anything is stopped on A. A connector that exists with the config of
// its manifest (one applied already) goes on.
func refuseExisting(cs []*planned, onB map[string]map[string]string, declared func(string, events.Config) (events.Config, error)) {
	for _, pc := range cs {
		c := pc.Connector
		if c.Problem != "" {
			continue
		}
		cfg := pc.OnB
		if declared != nil {
			d, err := declared(pc.Target, cfg)
			if err != nil {
				c.Problem = "its KafkaConnector manifest cannot be written: " + err.Error()
				continue
			}
			cfg = d
		}
		have, ok := onB[pc.Target]
		if !ok {
			continue
		}
		if diff := strimzi.Conflict(have, cfg); len(diff) > 0 {
			c.Problem = fmt.Sprintf("409 Connector %s already exists on B with another config (%s): its manifest would replace that config; "+
				"delete the connector on B first, or give this one another name (--rename)", pc.Target, strings.Join(diff, ", "))
		}
	}
}
