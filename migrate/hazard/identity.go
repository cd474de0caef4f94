package hazard

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// Which Kafka cluster a connector's setting names is decided by the cluster's identity, never
// by how an address is spelled: one cluster answers under many spellings (localhost and
// 127.0.0.1, a short name and an FQDN, a Kubernetes bootstrap Service no broker advertises,
// another listener's port, an IP for a name), and A's advertised addresses are not every way
// to reach A. So every address a setting lists is asked for its cluster id (a Metadata request
// to that address alone, kafkaio.ClusterIDs), and the id decides: A's, B's, another cluster's,
// or none (the address did not answer, and why).
//
// The settings that list Kafka addresses (addressKindOf): every key ending in
// "bootstrap.servers" (a client override, Debezium's schema.history.internal.kafka.* and
// signal.kafka.*, MirrorMaker 2's source.cluster.* and target.cluster.*, any prefix), the
// camelCase "bootstrapServers" of Camel's Kafka component and Kamelets, and "brokers" where the
// key or the connector class names Kafka (camel.component.kafka.brokers). Another "*.brokers"
// (an MQTT or JMS connector's) is asked too when its value is a host:port list, since an
// answer with a cluster id settles it; without one it is not taken for a Kafka address.
//
// An address is asked with the connector's own security settings for that client when they
// are readable from its config (security.protocol, sasl.*, ssl.* under the key's prefix; for
// Debezium's kafka.bootstrap.servers, its consumer.* and producer.* pass-throughs): settings
// in ${...} placeholders or naming files on the workers' disks are not readable from here.
// Then with A's client settings (when A's brokers are read) and B's, until one is answered;
// an address that cannot be dialled is not asked again. Each (address, settings) is asked
// once per run, at most clusterIDsInFlight at once, each within clusterIDTimeout.
//
// The answers are what migrate's host reaches: B's workers may resolve a name otherwise.
// A's id comes from A's brokers, or from A's Connect REST API (GET / gives the Kafka cluster id
// of A's workers) when A is read through it only; B's from B's brokers.

const (
	// clusterIDTimeout bounds one lookup of an address's cluster id.
	clusterIDTimeout = 10 * time.Second
	// clusterIDsInFlight bounds the lookups at once.
	clusterIDsInFlight = 8
)

// addressKind says whether a config key's value lists Kafka bootstrap addresses.
type addressKind int

const (
	notAddresses addressKind = iota
	// kafkaAddresses: a Kafka client's bootstrap servers.
	kafkaAddresses
	// maybeAddresses: a "*.brokers" list that may be a Kafka client's: judged when a broker
	// answers at one of its addresses, otherwise not taken for one.
	maybeAddresses
)

// addressKindOf is the kind of key's value in the config of a connector of class.
func addressKindOf(key, class string) addressKind {
	switch {
	case strings.HasSuffix(key, "bootstrap.servers"), key == "bootstrapServers", strings.HasSuffix(key, ".bootstrapServers"):
		return kafkaAddresses
	case key == "brokers", strings.HasSuffix(key, ".brokers"):
		simple := class[strings.LastIndexByte(class, '.')+1:]
		if strings.Contains(strings.ToLower(key), "kafka") || strings.Contains(strings.ToLower(simple), "kafka") {
			return kafkaAddresses
		}
		return maybeAddresses
	}
	return notAddresses
}

// bootstrapAddrs parses a bootstrap list as Kafka's clients do (ClientUtils): comma-separated,
// each trimmed, empty ones skipped, a "PROTOCOL://" prefix ignored, host:port with a numeric
// port ([v6]:port for an IPv6 address). The addresses come back in lower case, each once.
func bootstrapAddrs(value string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(value, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if i := strings.LastIndex(a, "://"); i >= 0 {
			a = a[i+3:]
		}
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("%q is not a host:port", a)
		}
		if a = strings.ToLower(net.JoinHostPort(host, port)); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no address")
	}
	return out, nil
}

// connSettings are security settings an address is asked with, and what they are for the
// messages.
type connSettings struct {
	what string
	tr   *kafka.Transport
}

// identities resolves the addresses of the settings checked in one run to Kafka cluster ids,
// each (address, settings) once; it knows A's and B's ids.
type identities struct {
	lookups *kafkaio.ClusterIDs
	// a and b are A's and B's cluster ids; aErr says why A's is not known.
	a, b string
	aErr error
	// fallbacks are A's and B's client settings, asked after the connector's own.
	fallbacks []connSettings
	// plain is the transport of plaintext settings, shared so that they are asked once.
	plain *kafka.Transport
	mu    sync.Mutex
	// own holds the transports of the connectors' own settings, by their fingerprint.
	own map[[sha256.Size]byte]*kafka.Transport
}

// identities returns the resolver of this run, made on first use: A's and B's ids, and A's
// and B's client settings.
func (hc *Checks) identities(ctx context.Context) *identities {
	if hc.b.ids != nil {
		return hc.b.ids
	}
	ids := &identities{lookups: kafkaio.NewClusterIDs(clusterIDTimeout, clusterIDsInFlight), plain: &kafka.Transport{},
		own: map[[sha256.Size]byte]*kafka.Transport{}}
	ids.a, ids.aErr = hc.a.ClusterID(ctx)
	if ids.aErr == nil && ids.a == "" {
		ids.aErr = errors.New("A's Connect REST API gives no kafka_cluster_id")
	}
	clB := kafkaio.NewClient(kafkaio.Options{Brokers: hc.b.Target.Brokers, Transport: hc.b.Target.Transport, Principal: hc.b.Target.Principal})
	clB.Timeout = clusterIDTimeout
	var err error
	if ids.b, err = kafkaio.ClusterID(ctx, clB); err != nil {
		hc.opts.Logger.Warn("cannot read B's Kafka cluster id: settings naming B are not recognised", "err", err)
	}
	if topics := hc.a.Topics(); topics != nil {
		ids.fallbacks = append(ids.fallbacks, connSettings{"A's client settings", ids.transport(topics.Transport)})
	}
	if tr := ids.transport(hc.b.Target.Transport); len(ids.fallbacks) == 0 || ids.fallbacks[0].tr != tr {
		ids.fallbacks = append(ids.fallbacks, connSettings{"B's client settings", tr})
	}
	hc.b.ids = ids
	return ids
}

// transport is tr, or the shared plaintext transport when tr carries no security.
func (ids *identities) transport(tr *kafka.Transport) *kafka.Transport {
	if tr == nil || (tr.SASL == nil && tr.TLS == nil && tr.Dial == nil) {
		return ids.plain
	}
	return tr
}

// named is a setting that lists Kafka addresses, ready to be asked.
type named struct {
	key, value string
	kind       addressKind
	addrs      []string
	// undecided says why its addresses are not asked (a placeholder, not a host:port list).
	undecided string
	// settings are what its addresses are asked with, in order; ownNote says why the
	// connector's own settings are not among them, when it has some.
	settings []connSettings
	ownNote  string
}

// setting prepares key=value of cfg for its lookups; false when it lists no Kafka address.
func (ids *identities) setting(cfg map[string]string, key, value string) (named, bool) {
	n := named{key: key, value: value, kind: addressKindOf(key, cfg["connector.class"])}
	if n.kind == notAddresses || strings.TrimSpace(value) == "" {
		return n, false
	}
	if strings.Contains(value, "${") {
		if n.kind == maybeAddresses {
			return n, false
		}
		n.undecided = "it is a config provider placeholder (${...}) that the workers resolve, which migrate cannot"
		return n, true
	}
	addrs, err := bootstrapAddrs(value)
	switch {
	case err != nil && n.kind == maybeAddresses:
		return n, false // not a list of addresses
	case err != nil:
		n.undecided = "it is not a list of host:port as Kafka's clients read it: " + err.Error()
		return n, true
	}
	n.addrs = addrs
	own, note := ids.ownSettings(cfg, key)
	if own != nil {
		n.settings = append(n.settings, *own)
	}
	n.ownNote = note
	for _, f := range ids.fallbacks {
		if own == nil || f.tr != own.tr {
			n.settings = append(n.settings, f)
		}
	}
	return n, true
}

// securityPrefixes are the prefixes under which the client of key (a "*bootstrap.servers") is
// given its security settings: the key's own (producer.override., source.cluster.), and for
// Debezium's "<x>kafka.bootstrap.servers" the pass-throughs of its clients, <x>consumer. and
// <x>producer. (schema.history.internal.consumer.security.protocol,
// signal.consumer.sasl.jaas.config).
func securityPrefixes(key string) []string {
	p, ok := strings.CutSuffix(key, "bootstrap.servers")
	if !ok {
		return nil // Camel's options have names of their own (securityProtocol, saslJaasConfig)
	}
	out := []string{p}
	if stem, ok := strings.CutSuffix(p, "kafka."); ok {
		out = append(out, stem+"consumer.", stem+"producer.")
	}
	return out
}

// isSecurityKey says whether k (its prefix removed) is a Kafka client's security setting.
func isSecurityKey(k string) bool {
	return k == "security.protocol" || strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "ssl.")
}

// ownSettings returns the connector's own security settings for key's client, when cfg gives
// some and migrate can use them; otherwise nil and, when cfg gives some, why they are not used.
// Without any, the client has the worker's settings, which only A's and B's can stand for.
func (ids *identities) ownSettings(cfg map[string]string, key string) (*connSettings, string) {
	prefixes := securityPrefixes(key)
	if prefixes == nil {
		return nil, "the connector's own security options for it are not read (only Kafka client properties are)"
	}
	for _, p := range prefixes {
		var props []clientconfig.Property
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			if rest, ok := strings.CutPrefix(k, p); ok && isSecurityKey(rest) {
				props = append(props, clientconfig.Property{Key: rest, Value: cfg[k]})
			}
		}
		if len(props) == 0 {
			continue
		}
		what := fmt.Sprintf("the connector's own security settings (%s*)", p)
		for _, pr := range props {
			switch {
			case strings.Contains(pr.Value, "${"):
				return nil, fmt.Sprintf("%s are not used: %s%s is a config provider placeholder the workers resolve", what, p, pr.Key)
			case pr.Key == "ssl.truststore.location" || pr.Key == "ssl.keystore.location":
				return nil, fmt.Sprintf("%s are not used: %s%s names a file on the workers", what, p, pr.Key)
			}
		}
		sec, _, err := clientconfig.ParseClientProperties(props)
		if err != nil {
			return nil, fmt.Sprintf("%s are not used: %v", what, err)
		}
		h := sha256.New()
		for _, pr := range props {
			fmt.Fprintf(h, "%d:%s=%d:%s\n", len(pr.Key), pr.Key, len(pr.Value), pr.Value)
		}
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		ids.mu.Lock()
		defer ids.mu.Unlock()
		tr, ok := ids.own[sum]
		if !ok {
			conns, err := clientconfig.NewConnections(sec)
			if err != nil {
				return nil, fmt.Sprintf("%s are not used: %v", what, err)
			}
			tr = ids.transport(conns.Transport)
			ids.own[sum] = tr
		}
		return &connSettings{what: what, tr: tr}, ""
	}
	return nil, ""
}

// answer is what one address says: its cluster id, or why it gave none.
type answer struct {
	addr, id string
	err      error
}

// ask asks addr for its cluster id with each of settings in turn, until one is answered or
// the address cannot be dialled.
func (ids *identities) ask(ctx context.Context, addr string, settings []connSettings) answer {
	var errs []string
	for _, st := range settings {
		id, err := ids.lookups.Lookup(ctx, addr, st.tr)
		if err == nil {
			return answer{addr: addr, id: id}
		}
		if kafkaio.IsDialError(err) || ctx.Err() != nil {
			return answer{addr: addr, err: err}
		}
		errs = append(errs, fmt.Sprintf("with %s: %v", st.what, err))
	}
	return answer{addr: addr, err: errors.New(strings.Join(errs, "; "))}
}

// answers asks every address of n.
func (ids *identities) answers(ctx context.Context, n named) []answer {
	out := make([]answer, len(n.addrs))
	for i, addr := range n.addrs {
		out[i] = ids.ask(ctx, addr, n.settings)
	}
	return out
}

// prefetch asks the addresses of every setting of ns, each (address, settings) once,
// clusterIDsInFlight at once: the checks then find every answer at hand.
func (ids *identities) prefetch(ctx context.Context, ns []named) {
	type job struct {
		addr     string
		settings []connSettings
	}
	seen := map[string]bool{}
	var jobs []job
	for _, n := range ns {
		for _, addr := range n.addrs {
			k := addr
			for _, st := range n.settings {
				k += fmt.Sprintf("\x00%p", st.tr)
			}
			if !seen[k] {
				seen[k] = true
				jobs = append(jobs, job{addr, n.settings})
			}
		}
	}
	next := make(chan job)
	var wg sync.WaitGroup
	for range min(clusterIDsInFlight, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				ids.ask(ctx, j.addr, j.settings)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// clusterVerdict sorts the answers of a setting's addresses by the cluster they name.
type clusterVerdict struct {
	onA, onB, other, unknown []answer
}

func (ids *identities) verdict(ans []answer) clusterVerdict {
	var v clusterVerdict
	for _, a := range ans {
		switch {
		case a.err != nil:
			v.unknown = append(v.unknown, a)
		case ids.a != "" && a.id == ids.a && ids.a != ids.b: // one cluster for both: B's
			v.onA = append(v.onA, a)
		case ids.b != "" && a.id == ids.b:
			v.onB = append(v.onB, a)
		default:
			v.other = append(v.other, a)
		}
	}
	return v
}

// addrList is the addresses of ans, for a message.
func addrList(ans []answer) string {
	out := make([]string, len(ans))
	for i, a := range ans {
		out[i] = a.addr
	}
	return strings.Join(out, ", ")
}

// others says, for a message, which cluster each of the other answers names and why each
// unknown one gave none; note is added to the reasons (the connector's own settings unused).
func (ids *identities) others(v clusterVerdict, note string) string {
	var parts []string
	for _, a := range v.other {
		who := fmt.Sprintf("neither A's (%q) nor B's (%q)", ids.a, ids.b)
		if ids.a == "" {
			who = fmt.Sprintf("not B's (%q), and A's id is not known: %v", ids.b, ids.aErr)
		}
		parts = append(parts, fmt.Sprintf("%s answers as Kafka cluster %q, %s", a.addr, a.id, who))
	}
	for _, a := range v.unknown {
		why := a.err.Error()
		if note != "" {
			why += "; " + note
		}
		parts = append(parts, fmt.Sprintf("%s did not say which cluster it is (%s)", a.addr, why))
	}
	return strings.Join(parts, "; ")
}
