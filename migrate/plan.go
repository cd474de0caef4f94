package migrate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/migrate/hazard"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
	"github.com/offsetagent/offsetagent/mm2"
)

// planned is a selected connector as the plan has it: A's connector, its name on B, what the
// checks found and the repairs they planned, the config it will have on B and what the
// migration itself changes in it.
type planned struct {
	Connector *fleet.Connector
	Target    string
	// Warnings are what the plan changed on the way (a name made a Kubernetes name).
	Warnings []string
	Hazards  []hazard.Hazard
	// OnB is the config the connector will have on B (ConfigOnB); Rewrites the settings the
	// migration itself changed in it (topicnames.go).
	OnB      events.Config
	Rewrites []ConfigRewrite
	// Follows is set on a sink moved with --sink-follows-source (pipeline.go); Rekey moves a
	// Debezium connector's offsets to its logical name on B (family.go).
	Follows *hazard.Following
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
}

// buildPlan lists A's connectors and selects them, and runs the checks that come before
// anything is stopped: their states, their pipelines and hazards on B (b; nil for an export),
// the stop's preconditions.
func buildPlan(ctx context.Context, s *source.A, b *hazard.B, opts planOptions) (*fleetPlan, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	sel := opts.Hazard.Selection
	var subjects []*hazard.Subject
	warnings := map[*hazard.Subject][]string{}
	byTarget := map[string]string{}
	for _, c := range all {
		if !sel.Selected(c.Name) {
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
	hc := hazard.NewChecks(opts.Hazard, s, b)
	hc.CheckPipelines(ctx, subjects)
	hc.CheckHazards(ctx, subjects)
	p := &fleetPlan{Blocked: hc.Blocked}
	for _, e := range subjects {
		onB := hc.ConfigOnB(e)
		p.Connectors = append(p.Connectors, &planned{Connector: e.Connector, Target: e.Target, Warnings: warnings[e], Hazards: e.Hazards,
			OnB: onB, Rewrites: planRewrites(opts.Hazard, e, onB), Follows: e.Follows, Rekey: e.Rekey})
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
// topic holds it now, with another config than its manifest declares (ConfigOnB, the config
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

// ConfigRewrite is a setting migrate itself changed for B (the edit flags' changes are not
// listed): `topics` and `topics.regex` renamed by MirrorMaker 2's policy, the transform that
// restores A's topic names. The report lists them per connector (Entry.Rewrites) and the
// cutover report keeps them.
type ConfigRewrite struct {
	Key string `json:"key"`
	// OnA is the value the connector would have had on B without the rewrite (A's, after the
	// edit flags); nil when it had none.
	OnA *string `json:"from"`
	OnB *string `json:"to"`
	Why string  `json:"why"`
}

func (r ConfigRewrite) String() string { return r.Change() + ": " + r.Why }

// Change is "key: from -> to".
func (r ConfigRewrite) Change() string {
	show := func(v *string) string {
		if v == nil {
			return "(not set)"
		}
		return strconv.Quote(*v)
	}
	return fmt.Sprintf("%s: %s -> %s", r.Key, show(r.OnA), show(r.OnB))
}

// configRewrites lists the settings of final that differ from before, in final's order, then
// those final lacks; why gives each its reason, secret hides a secret's values.
func configRewrites(before, final events.Config, why func(key string) string, secret func(key string) bool) []ConfigRewrite {
	var out []ConfigRewrite
	b := before.Map()
	f := final.Map()
	val := func(k, v string) *string {
		if secret(k) {
			v = events.HiddenValue
		}
		return &v
	}
	for _, kv := range final {
		if old, ok := b[kv.Key]; ok && old == kv.Value {
			continue
		}
		r := ConfigRewrite{Key: kv.Key, OnB: val(kv.Key, kv.Value), Why: why(kv.Key)}
		if old, ok := b[kv.Key]; ok {
			r.OnA = val(kv.Key, old)
		}
		out = append(out, r)
	}
	for _, kv := range before {
		if _, ok := f[kv.Key]; !ok {
			out = append(out, ConfigRewrite{Key: kv.Key, OnA: val(kv.Key, kv.Value), Why: why(kv.Key)})
		}
	}
	return out
}

// planRewrites lists what the migration itself changed in e's config for B (onB; A's config
// after the edit flags is what it would have been without), with why.
func planRewrites(opts hazard.Options, e *hazard.Subject, onB events.Config) []ConfigRewrite {
	policy := "replication"
	if opts.MM2 != nil {
		policy = hazard.PolicyName(opts.MM2.Policy)
	}
	why := func(key string) string {
		switch {
		case e.Restore.Owns(key):
			return e.Restore.Why
		case key == mm2.TopicsKey:
			return fmt.Sprintf("MirrorMaker 2's %s policy names A's topics so on B", policy)
		case key == mm2.TopicsRegexKey:
			return fmt.Sprintf("rewritten to match, as Java reads it, the topics MirrorMaker 2's %s policy renames; check it", policy)
		}
		return "changed by the migration"
	}
	onA := e.Connector.Config
	return configRewrites(opts.Selection.EditConfig(onA, e.Target), onB, why, fleet.Secret(opts.Registry, onA))
}
