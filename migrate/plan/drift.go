package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/events"
)

// DriftKind is what changed between a plan and its apply.
type DriftKind string

// Kinds of drift. The first three refuse the whole plan; the others one connector.
const (
	// DriftIdentityA, DriftIdentityB: A's or B's Kafka cluster is another than the plan's.
	DriftIdentityA DriftKind = "identity_a"
	DriftIdentityB DriftKind = "identity_b"
	// DriftEngine: A's config is as planned, yet the config on B comes out otherwise (another
	// version computes B's config otherwise).
	DriftEngine DriftKind = "engine"
	// DriftConfigOnA: the connector's config on A changed since the plan (its fingerprint, or
	// its config record's offset).
	DriftConfigOnA DriftKind = "config_on_a"
	// DriftStateOnA: its target state on A is another than the plan's.
	DriftStateOnA DriftKind = "state_on_a"
	// DriftGoneOnA: it is not on A any more.
	DriftGoneOnA DriftKind = "gone_on_a"
	// DriftExistsOnB: B has a connector by its name on B now, the plan saw none, and not with
	// the config the plan gives it (not a re-run of this plan).
	DriftExistsOnB DriftKind = "exists_on_b"
	// DriftHazard: a check refuses it now that did not in the plan.
	DriftHazard DriftKind = "hazard"
)

// Drift is one finding of Drift: its kind, the connector ("" for the whole plan), the config
// keys concerned, and what changed, for a person.
type Drift struct {
	Kind      DriftKind
	Connector string
	Keys      []string
	Message   string
}

// WholePlan reports whether the finding refuses the whole plan, not one connector.
func (d Drift) WholePlan() bool {
	return d.Kind == DriftIdentityA || d.Kind == DriftIdentityB || d.Kind == DriftEngine
}

func (d Drift) String() string {
	if d.Connector == "" {
		return fmt.Sprintf("%s: %s", d.Kind, d.Message)
	}
	return fmt.Sprintf("%s: %s: %s", d.Connector, d.Kind, d.Message)
}

// IdentityDrift compares the clusters of a plan with those found now (their Kafka cluster ids
// and Connect topics).
func IdentityDrift(planned, now File) []Drift {
	var out []Drift
	side := func(kind DriftKind, who string, p, n Side) {
		if p.KafkaClusterID != "" && n.KafkaClusterID != p.KafkaClusterID {
			out = append(out, Drift{Kind: kind, Message: fmt.Sprintf("%s is Kafka cluster %q, the plan's is %q", who, n.KafkaClusterID, p.KafkaClusterID)})
		}
		if p.ConfigTopic != "" && n.ConfigTopic != "" && p.ConfigTopic != n.ConfigTopic {
			out = append(out, Drift{Kind: kind, Message: fmt.Sprintf("%s's config topic is %q, the plan's is %q", who, n.ConfigTopic, p.ConfigTopic)})
		}
	}
	side(DriftIdentityA, "A", planned.From, now.From)
	side(DriftIdentityB, "B", planned.To, now.To)
	return out
}

// OnB is what B holds now by a planned connector's target name, judged by the request mark
// of its live connector record.
type OnB struct {
	// ByThisMigration: the record was written by a request of this migration (an earlier
	// apply of the same plan: a re-run, which the result topic settles).
	ByThisMigration bool
	// Writer names who wrote it otherwise: a request of another migration, or a writer
	// without a request mark (Connect's REST API, another tool).
	Writer string
}

// ConnectorDrift compares a connector of a plan (planned) with the same connector planned
// again now (now; nil when A has it no more). onB is what B holds by its target name now, nil
// when B has none or B's connectors were not read.
func ConnectorDrift(planned, now *FileConnector, onB *OnB) []Drift {
	name := planned.Name
	if now == nil {
		return []Drift{{Kind: DriftGoneOnA, Connector: name, Message: "not on A any more; re-plan"}}
	}
	var out []Drift
	configChanged := false
	if now.FingerprintOnA != planned.FingerprintOnA {
		configChanged = true
		keys, changes := changedKeys(planned, now)
		msg := "its config on A changed since the plan"
		if len(changes) > 0 {
			msg += ": " + strings.Join(changes, ", ")
		} else {
			msg += " (a value the plan does not show)"
		}
		out = append(out, Drift{Kind: DriftConfigOnA, Connector: name, Keys: keys, Message: msg + "; re-plan to move it"})
	} else if p, n := planned.ConfigRecordOnA, now.ConfigRecordOnA; p != nil && n != nil && p.Offset != n.Offset {
		configChanged = true
		out = append(out, Drift{Kind: DriftConfigOnA, Connector: name, Message: fmt.Sprintf(
			"its config on A was written again since the plan (record at offset %d, the plan's at %d): a secret changed or was rewritten, not shown; re-plan to move it",
			n.Offset, p.Offset)})
	}
	if planned.StateOnA != "" && now.StateOnA != "" && planned.StateOnA != now.StateOnA {
		out = append(out, Drift{Kind: DriftStateOnA, Connector: name, Message: fmt.Sprintf("%s in the plan, %s now", planned.StateOnA, now.StateOnA)})
	}
	if planned.ExistsOnB != nil && !*planned.ExistsOnB && onB != nil && !onB.ByThisMigration {
		out = append(out, Drift{Kind: DriftExistsOnB, Connector: name, Message: fmt.Sprintf(
			"B has a connector %s now and the plan saw none: created by %s; re-plan to move it", planned.Target, onB.Writer)})
	}
	if planned.Refused == "" && now.Refused != "" {
		out = append(out, Drift{Kind: DriftHazard, Connector: name, Message: "refused now: " + now.Refused})
	}
	if len(out) == 0 && !configChanged && !slices.Equal(planned.ConfigOnBValues(), now.ConfigOnBValues()) {
		keys, _ := diffConfigs(planned.ConfigOnBValues(), now.ConfigOnBValues())
		out = append(out, Drift{Kind: DriftEngine, Keys: keys, Message: fmt.Sprintf(
			"%s: A's config is as planned, but its config on B comes out otherwise (%s): re-plan with this version", name, strings.Join(keys, ", "))})
	}
	return out
}

// configOnA is the connector's config on A as the plan shows it: config_on_b with its edits
// undone.
func configOnA(c *FileConnector) map[string]*string {
	m := map[string]*string{}
	for _, kv := range c.ConfigOnBValues() {
		v := kv.Value
		if kv.Null {
			m[kv.Key] = nil
			continue
		}
		m[kv.Key] = &v
	}
	for _, e := range c.Edits {
		if e.From == nil {
			delete(m, e.Key)
			continue
		}
		v := *e.From
		m[e.Key] = &v
	}
	return m
}

// changedKeys names the keys whose value on A differs between the two, with from -> to (a
// secret's: "changed or rewritten, not shown").
func changedKeys(planned, now *FileConnector) ([]string, []string) {
	a, b := configOnA(planned), configOnA(now)
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	show := func(v *string, ok bool) string {
		switch {
		case !ok:
			return "(not set)"
		case v == nil:
			return "null"
		}
		return strconv.Quote(*v)
	}
	var changed, changes []string
	for _, k := range keys {
		va, okA := a[k]
		vb, okB := b[k]
		if okA == okB && ((va == nil) == (vb == nil)) && (va == nil || *va == *vb) {
			continue
		}
		changed = append(changed, k)
		if (okA && va != nil && *va == events.HiddenValue) || (okB && vb != nil && *vb == events.HiddenValue) {
			changes = append(changes, k+" (a secret: changed, not shown)")
			continue
		}
		changes = append(changes, fmt.Sprintf("%s %s -> %s", k, show(va, okA), show(vb, okB)))
	}
	return changed, changes
}

// diffConfigs lists the keys whose values differ between a and b.
func diffConfigs(a, b []ConfigValue) ([]string, bool) {
	ma, mb := map[string]ConfigValue{}, map[string]ConfigValue{}
	for _, kv := range a {
		ma[kv.Key] = kv
	}
	for _, kv := range b {
		mb[kv.Key] = kv
	}
	var keys []string
	for k, va := range ma {
		if vb, ok := mb[k]; !ok || va != vb {
			keys = append(keys, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, len(keys) > 0
}
