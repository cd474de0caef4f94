package plan

import (
	"fmt"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/mm2"
)

// Edit is a setting migrate itself changed for B (the edit flags' changes are not
// listed): `topics` and `topics.regex` renamed by MirrorMaker 2's policy, the transform that
// restores A's topic names. The report lists them per connector (Entry.Rewrites) and the
// cutover report keeps them.
type Edit struct {
	Key string `json:"key"`
	// OnA is the value the connector would have had on B without the rewrite (A's, after the
	// edit flags); nil when it had none.
	OnA *string `json:"from"`
	OnB *string `json:"to"`
	Why string  `json:"why"`
}

func (r Edit) String() string { return r.Change() + ": " + r.Why }

// Change is "key: from -> to".
func (r Edit) Change() string {
	show := func(v *string) string {
		if v == nil {
			return "(not set)"
		}
		return strconv.Quote(*v)
	}
	return fmt.Sprintf("%s: %s -> %s", r.Key, show(r.OnA), show(r.OnB))
}

// edits lists the settings of final that differ from before, in final's order, then
// those final lacks; why gives each its reason, secret hides a secret's values.
func edits(before, final events.Config, why func(key string) string, secret func(key string) bool) []Edit {
	var out []Edit
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
		r := Edit{Key: kv.Key, OnB: val(kv.Key, kv.Value), Why: why(kv.Key)}
		if old, ok := b[kv.Key]; ok {
			r.OnA = val(kv.Key, old)
		}
		out = append(out, r)
	}
	for _, kv := range before {
		if _, ok := f[kv.Key]; !ok {
			out = append(out, Edit{Key: kv.Key, OnA: val(kv.Key, kv.Value), Why: why(kv.Key)})
		}
	}
	return out
}

// editsOf lists what the migration itself changed in e's config for B (onB; A's config
// after the edit flags is what it would have been without), with why.
func editsOf(opts hazard.Options, e *hazard.Subject, onB events.Config) []Edit {
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
	return edits(opts.Selection.EditConfig(onA, e.Target), onB, why, fleet.Secret(opts.Registry, onA))
}
