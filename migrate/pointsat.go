package migrate

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/mm2"
)

// A connector moved to B keeps every setting it had on A, and some of them name cluster A:
// Debezium's schema history (schema.history.internal.kafka.bootstrap.servers) and Kafka signal
// channel (signal.kafka.bootstrap.servers), a client override (producer.override.*,
// consumer.override.*, admin.override.*), MirrorMaker 2's cluster settings. On B such a
// connector runs, and goes on reading or writing A, which is about to be retired: nothing fails
// until A is gone. So before anything is stopped, the config each selected connector will have
// on B (after --set, --unset and --map-value) is checked (HazardPointsAtA, refusing):
//
//   - every key ending in "bootstrap.servers" whose address list shares an address with A's
//     brokers: --from-brokers and the addresses A's metadata advertises, less B's (--to-brokers
//     and B's advertised ones). Addresses compare without case, whitespace or a
//     "PROTOCOL://" prefix. A read through its Connect REST API only has no known brokers:
//     such a key that does not name B is a warning that says the check was partial;
//   - every value that names A's Kafka cluster id (a secret one by its key only);
//   - across MirrorMaker 2 with a policy that renames topics (MM2Sinks), every "*.kafka.topic"
//     key (Debezium's schema.history.internal.kafka.topic, signal.kafka.topic) of a Kafka on
//     B: there A's topic has its remote name.
//
// A key given to --keep-a may point at A on purpose (a MirrorMaker 2 source reading A): it is a
// warning, and --map-value leaves it alone. When A and B are one Kafka cluster (the same
// cluster id), nothing can point at A rather than at B, and nothing is checked.

// clusterAddrs is what names a Kafka cluster: its id and its brokers' addresses (normalised),
// each with where it was read.
type clusterAddrs struct {
	id    string
	addrs map[string]string
}

func (c *clusterAddrs) add(addr, from string) {
	if c.addrs == nil {
		c.addrs = map[string]string{}
	}
	if n := normAddr(addr); n != "" {
		if _, ok := c.addrs[n]; !ok {
			c.addrs[n] = from
		}
	}
}

// addMetadata adds the brokers cl's cluster advertises, and its id.
func (c *clusterAddrs) addMetadata(ctx context.Context, cl *kafka.Client, from string) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return fmt.Errorf("read cluster metadata: %w", err)
	}
	c.id = md.ClusterID
	for _, b := range md.Brokers {
		c.add(net.JoinHostPort(b.Host, strconv.Itoa(b.Port)), from)
	}
	return nil
}

// normAddr is a bootstrap address as Kafka's clients parse it: without a "PROTOCOL://"
// prefix, in lower case.
func normAddr(addr string) string {
	addr = strings.TrimSpace(addr)
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		addr = rest
	}
	return strings.ToLower(addr)
}

// checkPointsAtA finds the settings of the selected connectors that would still point at A on
// B (see above). A migration only: an export has no B.
func (s *source) checkPointsAtA(ctx context.Context, entries []*Entry) {
	if s.b == nil {
		return
	}
	var a, b clusterAddrs
	known := s.topics != nil // A's brokers are known
	if known {
		for _, addr := range s.opts.Topics.Brokers {
			a.add(addr, "A's --from-brokers")
		}
		if err := a.addMetadata(ctx, s.topics.client, "advertised by A's brokers"); err != nil {
			s.opts.Logger.Warn("cannot read the brokers A advertises: settings naming them are not found", "err", err)
		}
	}
	if a.id == "" {
		a.id, _ = s.clusterID(ctx)
	}
	for _, addr := range s.b.to.Brokers {
		b.add(addr, "B's --to-brokers")
	}
	clB := &kafka.Client{Addr: kafka.TCP(s.b.to.Brokers...)}
	if s.b.to.Transport != nil { // a nil *Transport in the interface is not kafka-go's default
		clB.Transport = s.b.to.Transport
	}
	if err := b.addMetadata(ctx, clB, "advertised by B's brokers"); err != nil {
		s.opts.Logger.Warn("cannot read the brokers B advertises", "err", err)
	}
	if a.id != "" && a.id == b.id {
		return // one Kafka cluster: what names A names B
	}
	onlyA := map[string]string{}
	for addr, from := range a.addrs {
		if _, onB := b.addrs[addr]; !onB {
			onlyA[addr] = from
		}
	}
	mm, _ := s.opts.SinkTranslator.(*MM2Sinks)
	partial := 0
	for _, e := range entries {
		if e.connector.Problem != "" {
			continue
		}
		cfg := s.opts.Selection.EditConfig(e.connector.Config, e.TargetName)
		pc := pointsCheck{sel: s.opts.Selection, cfg: cfg, onA: e.connector.Config, secret: s.opts.Selection.secrets(cfg), toB: strings.Join(s.b.to.Brokers, ",")}
		for _, kv := range cfg {
			if kv.Key == "name" {
				continue
			}
			var h *Hazard
			switch {
			case strings.HasSuffix(kv.Key, "bootstrap.servers") && !known:
				if h = pc.unknownA(kv, b); h != nil {
					partial++
				}
			case strings.HasSuffix(kv.Key, "bootstrap.servers"):
				h = pc.brokers(kv, onlyA)
			}
			if h == nil && a.id != "" && strings.Contains(kv.Value, a.id) {
				h = pc.clusterID(kv, a.id)
			}
			if h == nil && mm != nil && mm.Policy.Kind != mm2.PolicyIdentity {
				h = pc.renamedTopic(kv, mm)
			}
			if h == nil {
				continue
			}
			if s.opts.Selection.Kept(kv.Key) && h.Refuse {
				h.Message += " (kept by --keep-a)"
				h.Fix, h.Refuse = "", false
			}
			e.hazard(*h)
		}
	}
	if partial > 0 {
		s.opts.Logger.Warn("settings that may point at A were not checked: A's brokers are not known without --from-brokers (see the connectors' hazards)")
	}
}

// pointsCheck checks the keys of one connector's config on B.
type pointsCheck struct {
	sel    Selection
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

func (p pointsCheck) keep(key string) string {
	return fmt.Sprintf("or --keep-a %s if the connector on B must keep using A", key)
}

// brokers: kv lists an address of A's (onlyA) that is not B's.
func (p pointsCheck) brokers(kv events.ConfigEntry, onlyA map[string]string) *Hazard {
	for _, addr := range strings.Split(kv.Value, ",") {
		from, ok := onlyA[normAddr(addr)]
		if !ok {
			continue
		}
		fix := fmt.Sprintf("rewrite it with --map-value %s=%s (every value listing these addresses, in any order), or --map-value %s=<B's broker> per address, or --set %s=%s; %s",
			strings.TrimSpace(kv.Value), p.toB, strings.TrimSpace(addr), kv.Key, p.toB, p.keep(kv.Key))
		if p.secret(kv.Key) {
			fix = fmt.Sprintf("give --set %s=<B's value>; %s", kv.Key, p.keep(kv.Key))
		}
		return &Hazard{Check: HazardPointsAtA, Key: kv.Key, Refuse: true, Fix: fix,
			Message: fmt.Sprintf("%s names A's broker %s (%s): on B the connector would still use cluster A", p.value(kv), normAddr(addr), from)}
	}
	return nil
}

// unknownA: A's brokers are not known, and kv names none of B's.
func (p pointsCheck) unknownA(kv events.ConfigEntry, b clusterAddrs) *Hazard {
	for _, addr := range strings.Split(kv.Value, ",") {
		if _, onB := b.addrs[normAddr(addr)]; onB {
			return nil
		}
	}
	return &Hazard{Check: HazardPointsAtA, Key: kv.Key,
		Message: fmt.Sprintf("A's brokers are not known (A is read through its Connect REST API only), so whether %s names A was not checked", p.value(kv)),
		Fix:     "give --from-brokers to check it"}
}

// clusterID: kv names A's Kafka cluster id.
func (p pointsCheck) clusterID(kv events.ConfigEntry, id string) *Hazard {
	fix := fmt.Sprintf("rewrite it with --map-value or --set %s=<B's value>; %s", kv.Key, p.keep(kv.Key))
	if p.secret(kv.Key) {
		fix = fmt.Sprintf("give --set %s=<B's value> (--map-value leaves secrets alone); %s", kv.Key, p.keep(kv.Key))
	}
	return &Hazard{Check: HazardPointsAtA, Key: kv.Key, Refuse: true, Fix: fix,
		Message: fmt.Sprintf("%s names A's Kafka cluster id %q", p.value(kv), id)}
}

// renamedTopic: kv is a "*.kafka.topic" setting of a Kafka on B (its sibling
// "*.kafka.bootstrap.servers" is not kept on A), unchanged from A, a topic MirrorMaker 2's
// policy renames there.
func (p pointsCheck) renamedTopic(kv events.ConfigEntry, mm *MM2Sinks) *Hazard {
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
		Message: fmt.Sprintf("topic %q is A's name: on B (%s) MirrorMaker 2's %s replication policy mirrors it as %q, and the connector would use a topic %q of its own there",
			topic, servers, policyName(mm.Policy), remote, topic),
		Fix: fmt.Sprintf("give --map-value %s=%s to use MirrorMaker 2's copy, or --replication-policy identity (IdentityReplicationPolicy on MirrorMaker 2); %s",
			topic, remote, p.keep(kv.Key))}
}
