package hazard

import (
	"context"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

// A connector moved to B keeps every setting it had on A, and some of them name cluster A:
// Debezium's schema history (schema.history.internal.kafka.bootstrap.servers) and Kafka signal
// channel (signal.kafka.bootstrap.servers), a client override (producer.override.*,
// consumer.override.*, admin.override.*), MirrorMaker 2's cluster settings. On B such a
// connector runs, and goes on reading or writing A, which is about to be retired: nothing fails
// until A is gone. So before anything is stopped, the config each selected connector will have
// on B (after --set, --unset and --map-value) is checked (HazardPointsAtA):
//
//   - every setting that lists Kafka addresses is judged by the Kafka cluster its addresses
//     answer as (identity.go), never by their spelling: one answering with A's cluster id
//     refuses, whether A was read from its brokers or through its Connect REST API only (A's
//     id is then the one GET / gives). All answering with B's id pass. One answering as a third
//     cluster is a warning (the connector on B keeps using it: B's workers must reach it); one
//     that gives no answer (unreachable from where migrate runs, its security refused, a
//     ${...} placeholder) is a warning that names the key and why, since whether it names A
//     was not decided;
//   - every value that names A's Kafka cluster id (a secret one by its key only);
//   - across MirrorMaker 2 with a policy that renames topics (MM2), every "*.kafka.topic"
//     key (Debezium's schema.history.internal.kafka.topic, signal.kafka.topic) of a Kafka on
//     B: there A's topic has its remote name.
//
// A key given to --keep-a may point at A on purpose (a MirrorMaker 2 source reading A): naming
// A is a warning, and --map-value leaves it alone. When A and B are one Kafka cluster (the same
// cluster id), nothing can point at A rather than at B, and nothing is checked.

// configOnB is one connector's config on B, with its settings that list Kafka addresses.
type configOnB struct {
	e     *Subject
	cfg   events.Config
	named map[string]named
}

// checkPointsAtA finds the settings of the selected connectors that would still point at A on
// B (see above). A migration only: an export has no B.
func (hc *Checks) checkPointsAtA(ctx context.Context, entries []*Subject) {
	if hc.b == nil {
		return
	}
	ids := hc.identities(ctx)
	if ids.a != "" && ids.a == ids.b {
		return // one Kafka cluster: what names A names B
	}
	var todo []configOnB
	var all []named
	for _, e := range entries {
		if !e.Connector.Problem.IsZero() {
			continue
		}
		c := configOnB{e: e, cfg: hc.ConfigOnB(e), named: map[string]named{}}
		m := c.cfg.Map()
		for _, kv := range c.cfg {
			if n, ok := ids.setting(m, kv.Key, kv.Value); ok && kv.Key != "name" {
				c.named[kv.Key] = n
				all = append(all, n)
			}
		}
		todo = append(todo, c)
	}
	// Every address of the fleet asked at once, bounded, each once: the checks below find
	// the answers at hand.
	ids.prefetch(ctx, all)
	mm := hc.opts.MM2
	for _, c := range todo {
		pc := pointsCheck{sel: hc.opts.Selection, cfg: c.cfg, onA: c.e.Connector.Config, secret: fleet.Secret(hc.opts.Registry, c.cfg),
			toB: strings.Join(hc.b.Target.Brokers, ",")}
		for _, kv := range c.cfg {
			if kv.Key == "name" {
				continue
			}
			var h *Hazard
			if n, ok := c.named[kv.Key]; ok {
				h = pc.addresses(ctx, kv, n, ids)
			}
			if h == nil && ids.a != "" && strings.Contains(kv.Value, ids.a) {
				h = pc.clusterID(kv, ids.a)
			}
			if h == nil && mm != nil && mm.Policy.Kind != mm2.PolicyIdentity {
				h = pc.renamedTopic(kv, mm)
			}
			if h == nil {
				continue
			}
			if hc.opts.Selection.Kept(kv.Key) && h.Refuse {
				h.Message = h.Message.Append(" (kept by %s)", fleet.KeepA)
				h.Fix, h.Refuse = fleet.Text{}, false
			}
			c.e.add(*h)
		}
	}
}

// pointsCheck checks the keys of one connector's config on B.
type pointsCheck struct {
	sel    source.Selection
	cfg    events.Config
	onA    events.Config // the config on A
	secret func(key string) bool
	toB    string // B's --to-brokers
}

// value quotes kv's value for a message, or says nothing of a secret one.
func (p pointsCheck) value(kv events.ConfigEntry) string {
	if p.secret(kv.Key) {
		return "its value (a secret, not shown)"
	}
	return fmt.Sprintf("value %q", events.MaskCredentials(kv.Value))
}

func (p pointsCheck) keep(key string) fleet.Text {
	return fleet.Textf("or %s if the connector on B must keep using A", fleet.KeepAKey{Key: key})
}

// mapFix says how to point kv at B. The address migrate reaches B at (--to-brokers) is not
// offered as the value: B's workers may reach B by another listener, or another name.
func (p pointsCheck) mapFix(kv events.ConfigEntry) fleet.Text {
	if p.secret(kv.Key) {
		return fleet.Textf("give %s (%s leaves secrets alone)", fleet.SetValue{Key: kv.Key, Value: fleet.Hint("B's value")}, fleet.MapValue)
	}
	return fleet.Textf("rewrite it with %s (every value listing "+
		"these addresses, in any order), or %s; %v", fleet.MapValueTo{From: strings.TrimSpace(kv.Value), To: fleet.Hint(bServers)},
		fleet.SetValue{Key: kv.Key, Value: fleet.Hint("the same")}, p.whichB())
}

// bServers is the hint of the value that points a setting at B's Kafka cluster.
const bServers = "B's bootstrap servers, as B's Connect workers reach them"

// whichB says which address of B a fix needs.
func (p pointsCheck) whichB() fleet.Text {
	return fleet.Textf("that is the bootstrap.servers of B's worker config, not necessarily the %s migrate uses (%s), "+
		"which may be another listener's", fleet.ToBrokers, p.toB)
}

// addresses judges kv, a setting listing Kafka addresses (n), by the clusters they answer as.
func (p pointsCheck) addresses(ctx context.Context, kv events.ConfigEntry, n named, ids *identities) *Hazard {
	if n.undecided != "" {
		if p.sel.Kept(kv.Key) {
			return nil
		}
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key,
			Message: fleet.Textf("%s was not checked: %s; whether the connector on B would still use cluster A is not decided", p.value(kv), n.undecided),
			Fix: fleet.Textf("make sure it does not name A's Kafka cluster where B's workers run; if it does, give %s (%v); %v",
				fleet.SetValue{Key: kv.Key, Value: fleet.Hint(bServers)}, p.whichB(), p.keep(kv.Key))}
	}
	v := ids.verdict(ids.answers(ctx, n))
	hide := p.secret(kv.Key)
	switch {
	case n.kind == maybeAddresses && len(v.onA)+len(v.onB)+len(v.other) == 0:
		return nil // no Kafka broker answers: not taken for a Kafka address
	case len(v.onA) > 0:
		addrs := addrList(v.onA)
		if hide {
			addrs = "an address of it"
		}
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key, Refuse: true, Fix: fleet.Textf("%v; %v", p.mapFix(kv), p.keep(kv.Key)),
			Message: fleet.Textf("%s names A's Kafka cluster: %s answered with A's cluster id %q; on B the connector would still use cluster A",
				p.value(kv), addrs, ids.a)}
	case len(v.other) == 0 && len(v.unknown) == 0, p.sel.Kept(kv.Key):
		return nil // B's, or kept on A on purpose
	case hide:
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key,
			Message: fleet.Textf("%s: an address of it answers as another cluster than B, or not at all; whether it names A's Kafka cluster was not decided", p.value(kv)),
			Fix:     fleet.Textf("check which cluster it names where B's workers run; if A's, %s; %s", p.mapFix(kv), p.keep(kv.Key))}
	case len(v.unknown) == 0:
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key,
			Message: fleet.Textf("%s names another Kafka cluster than A and B: %s", p.value(kv), ids.others(v, "")),
			Fix:     fleet.Plain("none if the connector on B is meant to use that cluster: make sure B's workers reach it")}
	default:
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key,
			Message: fleet.Textf("%s: whether it names A's Kafka cluster was not decided: %s", p.value(kv), ids.others(v, n.ownNote)),
			Fix:     fleet.Textf("check which cluster it names where B's workers run; if A's, %s; %s", p.mapFix(kv), p.keep(kv.Key))}
	}
}

// clusterID: kv names A's Kafka cluster id.
func (p pointsCheck) clusterID(kv events.ConfigEntry, id string) *Hazard {
	setB := fleet.SetValue{Key: kv.Key, Value: fleet.Hint("B's value")}
	fix := fleet.Textf("rewrite it with %s or %s; %v", fleet.MapValue, setB, p.keep(kv.Key))
	if p.secret(kv.Key) {
		fix = fleet.Textf("give %s (%s leaves secrets alone); %v", setB, fleet.MapValue, p.keep(kv.Key))
	}
	return &Hazard{Check: HazardPointsAtA, Key: kv.Key, Refuse: true, Fix: fix,
		Message: fleet.Textf("%s names A's Kafka cluster id %q", p.value(kv), id)}
}

// renamedTopic: kv is a "*.kafka.topic" setting of a Kafka on B (its sibling
// "*.kafka.bootstrap.servers" is not kept on A), unchanged from A, a topic MirrorMaker 2's
// policy renames there.
func (p pointsCheck) renamedTopic(kv events.ConfigEntry, mm *fleet.MM2) *Hazard {
	prefix, ok := strings.CutSuffix(kv.Key, "kafka.topic")
	if !ok || p.secret(kv.Key) {
		return nil
	}
	servers := prefix + "kafka.bootstrap.servers"
	if _, has := p.cfg.Get(servers); !has || p.sel.Kept(servers) {
		return nil // not known to be on B, or kept on A
	}
	if v, _ := p.onA.Get(kv.Key); v != kv.Value {
		return nil // edited for B
	}
	topic := strings.TrimSpace(kv.Value)
	remote := mm.Policy.RemoteTopic(topic)
	if topic == "" || remote == topic {
		return nil
	}
	return &Hazard{Check: HazardPointsAtA, Key: kv.Key, Refuse: true,
		Message: fleet.Textf("topic %q is A's name: on B (%s) MirrorMaker 2's %s replication policy mirrors it as %q, and the connector would use a topic %q of its own there",
			topic, servers, PolicyName(mm.Policy), remote, topic),
		Fix: fleet.Textf("give %s to use MirrorMaker 2's copy, or %s (IdentityReplicationPolicy on MirrorMaker 2); %v",
			fleet.MapValueTo{From: topic, To: fleet.Lit(remote)}, fleet.Give{Setting: fleet.ReplicationPolicy, Value: "identity"}, p.keep(kv.Key))}
}
