package hazard

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/javaregex"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

// Across MirrorMaker 2 with a policy that renames topics (the default policy: A's "orders" is
// "A.orders" on B), a sink moved to B reads the renamed topics (translate.go renames `topics`
// and `topics.regex`), and every record it gets there carries the renamed name. Whatever the
// sink derives from a record's topic changes with it, and nothing fails: a RegexRouter whose
// regex no longer matches, a TimestampRouter's topic.format, a TopicNameMatches predicate, the
// JDBC sinks' table.name.format (default "${topic}"), Elasticsearch's and OpenSearch's index
// names, the object-store sinks' paths: on B the sink writes to another table, index or path.
//
// One mechanism puts that right: a RegexRouter at the head of the sink's transform chain on B
// (RestoreAlias, regex "<quoted alias><sep>(.*)", replacement "$1") gives every record back its
// topic's name on A before any other transform or the connector sees it, so that the whole
// chain and every name the connector derives are what they were on A. Connect commits the
// offsets of the partition each record was consumed from (A.orders), whatever the transforms
// made of its topic; a connector that does its own offset bookkeeping by the record's topic
// does not take such records. So the transform is added only for the families known to take
// them (topicnames_families.go), when something downstream reads the topic: a family that
// derives a name from it, a transform that reads it, or one offsetagent does not know. Before
// anything is stopped (HazardTopicNames):
//
//   - a family known not to take such records (Confluent's storage sinks, Elasticsearch with
//     its asynchronous offsets), or a class offsetagent does not know, is refused where its
//     output depends on the topic's name: the family's own names, a transform reading the
//     topic, a setting whose key or value names one of the sink's topics (the class unknown);
//     each with the key, the value and the fix (--set, --keep-a, a family setting, or
//     the identity policy). A transform offsetagent does not know, or a class it does not know
//     with nothing found, is a warning that says what was not checked;
//   - a topics.regex that cannot be moved behind the prefix with certainty in Java's dialect
//     (mm2.Policy.RewriteTopicsRegex) is refused;
//   - a chain edited for B with the edit flags gets no transform: a warning says so; a sink
//     whose topics are edited for B is not checked, with a warning;
//   - a topic whose name on B is not "<alias><sep><topic>" (one that came from the target
//     alias goes back to its original name) cannot be restored by one transform: refused.
//
// The dead letter queue topic (errors.deadletterqueue.topic.name) is not derived from a
// record's topic: the sink writes it on B under its name on A, and it stays. A sink moved with
// --sink-follows-source keeps its topics' names on B, and is not concerned.

// RestoreAlias is the alias of the transform that gives records on B their topics' names on A.
const RestoreAlias = "restoreTopicNamesOfA"

// regexRouter is Kafka's RegexRouter transform.
const regexRouter = kafkaTransforms + "RegexRouter"

// TopicRestore is the RegexRouter build places at the head of a sink's transform chain on B.
type TopicRestore struct {
	alias, regex string
	// Why says what it keeps as on A, for the report's config_rewrites.
	Why string
}

// apply returns cfg with the transform first in its chain; cfg is not changed.
func (r *TopicRestore) apply(cfg events.Config) events.Config {
	if r == nil {
		return cfg
	}
	out := slices.Clone(cfg)
	chain := r.alias
	if t, _ := cfg.Get("transforms"); strings.TrimSpace(t) != "" {
		chain += "," + strings.TrimSpace(t)
	}
	p := "transforms." + r.alias + "."
	for _, kv := range []events.ConfigEntry{{Key: "transforms", Value: chain}, {Key: p + "type", Value: regexRouter},
		{Key: p + "regex", Value: r.regex}, {Key: p + "replacement", Value: "$1"}} {
		if i := slices.IndexFunc(out, func(e events.ConfigEntry) bool { return e.Key == kv.Key }); i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

// Owns reports whether key is one of the transform's settings.
func (r *TopicRestore) Owns(key string) bool {
	return r != nil && (key == "transforms" || strings.HasPrefix(key, "transforms."+r.alias+"."))
}

// checkTopicNames finds, for each sink moved across a renaming policy, what it derives from
// its topics' names, and plans the transform that restores them or refuses the sink (see
// above). It runs before anything is stopped, for an export too.
func (hc *Checks) checkTopicNames(_ context.Context, entries []*Subject) {
	m := hc.opts.MM2
	if m == nil {
		return
	}
	for _, e := range entries {
		c := e.Connector
		e.Restore = nil
		if !c.Problem.IsZero() || c.Type != connectors.Sink || e.Follows != nil {
			continue
		}
		tn := topicNames{policy: m.Policy, sel: hc.opts.Selection, onA: c.Config.Map(), secret: fleet.Secret(hc.opts.Registry, c.Config)}
		var hs []Hazard
		e.Restore, hs = tn.check(m, c.Config, e.Target)
		for _, h := range hs {
			if h.Key != "" && hc.opts.Selection.Kept(h.Key) && h.Refuse {
				h.Message = h.Message.Append(" (kept by %s)", fleet.KeepA)
				h.Fix, h.Refuse = fleet.Text{}, false
			}
			e.add(h)
		}
	}
}

// topicNames checks one sink.
type topicNames struct {
	policy mm2.Policy
	sel    source.Selection
	// onA is the config on A; onB and translated are set by check: the config on B (renamed
	// topics, then the edit flags), and the renamed one before the edit flags.
	onA, onB, translated map[string]string
	secret               func(key string) bool
	// renamed maps each topic of `topics` to its name on B, where they differ; regex is
	// `topics.regex` on A ("" for none).
	renamed map[string]string
	regex   string
}

// topicKey is a setting that reads the record's topic: a transform's or a predicate's.
type topicKey struct {
	key, value string
	// def: the value is the transform's default (the key is not set).
	def bool
	// what names the transform or predicate ("transform \"route\" (RegexRouter)").
	what string
}

// chain is what the transform chain on B reads of the record's topic.
type chain struct {
	reads []topicKey
	// unknown are the "type" keys of transforms and predicates offsetagent does not know.
	unknown []topicKey
	// edited: a transforms or predicates setting differs from A's (the edit flags).
	edited bool
}

func (t *topicNames) check(m *fleet.MM2, onA events.Config, target string) (*TopicRestore, []Hazard) {
	var hs []Hazard
	tr, err := renamed(m.Policy, onA)
	if err != nil {
		hs = append(hs, Hazard{Check: HazardTopicNames, Key: mm2.TopicsRegexKey, Refuse: true,
			Message: fleet.Textf("value %q: %v; on B the sink would read other topics than MirrorMaker 2's copies of A's", t.onA[mm2.TopicsRegexKey], err),
			Fix: fleet.Textf("give the regex for the topics' names on B with %s, or %v",
				fleet.SetValue{Key: mm2.TopicsRegexKey, Value: fleet.Lit("...")}, identityFix)})
	}
	t.translated = tr.Map()
	t.onB = t.sel.EditConfig(tr, target).Map()
	for _, k := range []string{mm2.TopicsKey, mm2.TopicsRegexKey} {
		if t.onB[k] != t.translated[k] {
			return nil, append(hs, Hazard{Check: HazardTopicNames, Key: k,
				Message: fleet.Plain("edited for B by the edit flags: which of A's topics the sink reads there is not known, so what it derives from their names (tables, indices, paths, transforms) was not checked")})
		}
	}
	if list := strings.TrimSpace(t.onA[mm2.TopicsKey]); list != "" {
		for _, topic := range source.ListElems(list) {
			if r := t.policy.RemoteTopic(topic); r != topic {
				if t.renamed == nil {
					t.renamed = map[string]string{}
				}
				t.renamed[topic] = r
			}
		}
	}
	if t.policy.Kind != mm2.PolicyIdentity { // which keeps every name a regex matches but heartbeats
		t.regex = strings.TrimSpace(t.onA[mm2.TopicsRegexKey])
	}
	if len(t.renamed) == 0 && t.regex == "" {
		return nil, hs
	}
	ch := t.chain()
	class := t.onB["connector.class"]
	f := familyOf(class)
	if f == nil {
		return nil, append(hs, t.unknownClass(class, ch)...)
	}
	derived := f.derives(t.onB)
	takes, why := f.renamedRecords(t.onB)
	if !takes {
		return nil, append(hs, t.refusesRenamed(f, derived, why, ch)...)
	}
	if derived == "" && len(ch.reads) == 0 && len(ch.unknown) == 0 {
		return nil, hs // nothing reads the topic's name
	}
	var what []string
	if derived != "" {
		what = append(what, derived)
	}
	for _, k := range append(ch.reads, ch.unknown...) {
		if !slices.Contains(what, k.what) {
			what = append(what, k.what)
		}
	}
	if ch.edited {
		return nil, append(hs, Hazard{Check: HazardTopicNames, Key: "transforms",
			Message: fleet.Textf("the transform chain is edited for B by the edit flags, so offsetagent does not add its transform giving records back their topics' names on A (%s on B): check that %s expect B's names",
				t.namesOnB(), strings.Join(what, ", "))})
	}
	prefix := t.policy.RemotePrefix()
	for _, topic := range slices.Sorted(maps.Keys(t.renamed)) {
		if r := t.renamed[topic]; r != prefix+topic {
			return nil, append(hs, Hazard{Check: HazardTopicNames, Key: mm2.TopicsKey, Refuse: true,
				Message: fleet.Textf("topic %q is %q on B (it came from there): no one transform gives every record back its topic's name on A, on which %s depend", topic, r, strings.Join(what, ", ")),
				Fix:     identityFix})
		}
	}
	// Every topic the sink reads on B is renamed, but the heartbeats under the identity policy:
	// there the regex names them, so that a kept topic that begins with the prefix stays.
	group := "(.*)"
	if t.regex == "" && len(t.renamed) < len(source.ListElems(t.onA[mm2.TopicsKey])) {
		var quoted []string
		for _, topic := range slices.Sorted(maps.Keys(t.renamed)) {
			quoted = append(quoted, javaregex.Quote(topic))
		}
		group = "(" + strings.Join(quoted, "|") + ")"
	}
	r := &TopicRestore{alias: t.freeAlias(), regex: javaregex.Quote(prefix) + group} // RegexRouter's: Java's
	r.Why = fmt.Sprintf("MirrorMaker 2's %s policy names A's topics %q on B; this transform, first in the chain, gives each record back its topic's name on A, so that %s stay as on A (%s)",
		PolicyName(t.policy), prefix+"<topic>", strings.Join(what, ", "), why)
	return r, hs
}

// identityFix is the way out for every sink: a policy that keeps the names.
var identityFix = fleet.Textf("use %s (IdentityReplicationPolicy on MirrorMaker 2), which keeps A's topic names on B",
	fleet.Give{Setting: fleet.ReplicationPolicy, Value: "identity"})

// renameTopics is cfg with `topics` renamed by p and the rest as it is.
func renameTopics(p mm2.Policy, cfg events.Config) events.Config {
	out := slices.Clone(cfg)
	for i := range out {
		if out[i].Key == mm2.TopicsKey {
			out[i].Value, _ = p.RewriteTopics(out[i].Value)
		}
	}
	return out
}

// namesOnB says how the sink's topics are named on B, for messages.
func (t *topicNames) namesOnB() string {
	var parts []string
	for _, topic := range slices.Sorted(maps.Keys(t.renamed)) {
		parts = append(parts, fmt.Sprintf("%q is %q", topic, t.renamed[topic]))
	}
	if t.regex != "" {
		parts = append(parts, fmt.Sprintf("the topics topics.regex %q matches are %q", t.regex, t.policy.RemotePrefix()+"<topic>"))
	}
	return strings.Join(parts, ", ")
}

// freeAlias is RestoreAlias, or RestoreAlias with a number when the chain has that alias.
func (t *topicNames) freeAlias() string {
	used := func(a string) bool {
		if slices.Contains(source.ListElems(t.onB["transforms"]), a) {
			return true
		}
		for k := range t.onB {
			if strings.HasPrefix(k, "transforms."+a+".") {
				return true
			}
		}
		return false
	}
	a := RestoreAlias
	for n := 2; used(a); n++ {
		a = RestoreAlias + strconv.Itoa(n)
	}
	return a
}

// chain reads the transform chain on B: which transforms and predicates read the record's
// topic, which offsetagent does not know, and whether the edit flags changed it.
func (t *topicNames) chain() chain {
	var ch chain
	for _, m := range []map[string]string{t.onA, t.onB} {
		for k := range m {
			if k == "transforms" || k == "predicates" || strings.HasPrefix(k, "transforms.") || strings.HasPrefix(k, "predicates.") {
				if v, ok := t.onA[k]; !ok || v != t.onB[k] {
					ch.edited = true
				}
				if _, ok := t.onB[k]; !ok {
					ch.edited = true
				}
			}
		}
	}
	look := func(kind, alias, prefix string) {
		typ := t.onB[prefix+"type"]
		class := pluginClass(typ)
		simple := class[strings.LastIndexByte(class, '.')+1:]
		what := fmt.Sprintf("%s %q (%s)", kind, alias, simple)
		reads, keys, known := readsTopic(class, t.onB, prefix)
		switch {
		case !known:
			ch.unknown = append(ch.unknown, topicKey{key: prefix + "type", value: typ, what: what})
		case reads:
			for _, kd := range keys {
				v, set := t.onB[prefix+kd[0]]
				if !set && kd[1] == "" {
					continue
				}
				if !set {
					v = kd[1]
				}
				ch.reads = append(ch.reads, topicKey{key: prefix + kd[0], value: v, def: !set, what: what})
			}
		}
	}
	for _, alias := range source.ListElems(t.onB["transforms"]) {
		look("transform", alias, "transforms."+alias+".")
		if p := strings.TrimSpace(t.onB["transforms."+alias+".predicate"]); p != "" {
			look("predicate", p, "predicates."+p+".")
		}
	}
	return ch
}

// refusesRenamed judges a family known not to take records whose topic is not an assigned
// partition: offsetagent cannot restore A's names, so whatever depends on them refuses it.
func (t *topicNames) refusesRenamed(f *sinkFamily, derived, why string, ch chain) []Hazard {
	var hs []Hazard
	cannot := fmt.Sprintf("%s %s, so offsetagent cannot give them back A's names with a transform", f.name, why)
	fix := identityFix
	if !f.fix.IsZero() {
		fix = fleet.Textf("%v; or %v", f.fix, identityFix)
	}
	if derived != "" {
		key := mm2.TopicsKey
		if t.regex != "" && len(t.renamed) == 0 {
			key = mm2.TopicsRegexKey
		}
		hs = append(hs, Hazard{Check: HazardTopicNames, Key: key, Refuse: true,
			Fix: fleet.Textf("%v; or %s to move it anyway, writing under B's names (a warning then)", fix, fleet.KeepAKey{Key: key}),
			Message: fleet.Textf("%s names %s after the record's topic, and on B its records carry their topics' names there (%s): it would write somewhere else than on A, and nothing would fail; %s",
				f.name, derived, t.namesOnB(), cannot)})
	}
	hs = append(hs, t.readingKeys(ch, cannot)...)
	return append(hs, t.namingSettings(cannot)...)
}

// unknownClass judges a class offsetagent does not know: whether it takes records whose topic
// is not an assigned partition is not known, so A's names are not restored; whatever is seen to
// depend on them refuses it, and the rest is a warning.
func (t *topicNames) unknownClass(class string, ch chain) []Hazard {
	cannot := fmt.Sprintf("connector class %q is not one offsetagent knows to take records whose topic is not a partition it was assigned, so it cannot give them back A's names with a transform", class)
	hs := t.readingKeys(ch, cannot)
	hs = append(hs, t.namingSettings(cannot)...)
	for _, h := range hs {
		if h.Refuse {
			return hs
		}
	}
	unchecked := "whether it names what it writes after the record's topic was not checked"
	if t.regex != "" {
		unchecked += ", nor settings naming the topics its topics.regex matches"
	}
	return append(hs, Hazard{Check: HazardTopicNames, Key: "connector.class",
		Message: fleet.Textf("%q is not a sink family offsetagent knows, and its records carry other topic names on B (%s): %s; if it does, it writes somewhere else on B than on A",
			class, t.namesOnB(), unchecked),
		Fix: fleet.Textf("if it does, %v", identityFix)})
}

// readingKeys refuses each setting of the chain that reads the record's topic, and warns of
// each transform or predicate offsetagent does not know; cannot says why A's names are not
// restored. A setting the edit flags changed for B is the operator's.
func (t *topicNames) readingKeys(ch chain, cannot string) []Hazard {
	var hs []Hazard
	for _, k := range ch.reads {
		if t.edited(k.key) {
			continue
		}
		value := fmt.Sprintf("value %q", k.value)
		if k.def {
			value = fmt.Sprintf("default value %q", k.value)
		}
		fix := fleet.Textf("give its value for the topics' names on B with %s", fleet.SetValue{Key: k.key, Value: fleet.Lit("...")})
		if strings.HasSuffix(k.key, ".regex") || strings.HasSuffix(k.key, ".pattern") {
			if to, _, err := t.policy.RewriteTopicsRegex(k.value); err == nil {
				fix = fleet.Textf("give its value for the topics' names on B, e.g. %s (it matches them as %q matches A's names; check what the transform makes of them)",
					fleet.SetValue{Key: k.key, Value: fleet.Lit(to)}, k.value)
			}
		}
		hs = append(hs, Hazard{Check: HazardTopicNames, Key: k.key, Refuse: true,
			Fix: fleet.Textf("%v, or %s to keep it, or %v", fix, fleet.KeepAKey{Key: k.key}, identityFix),
			Message: fleet.Textf("%s of %s reads the record's topic, whose name on B is another (%s); %s",
				value, k.what, t.namesOnB(), cannot)})
	}
	for _, k := range ch.unknown {
		hs = append(hs, Hazard{Check: HazardTopicNames, Key: k.key,
			Message: fleet.Textf("%s is not a transform offsetagent knows: whether it reads the record's topic (%s) was not checked", k.what, t.namesOnB()),
			Fix:     fleet.Textf("if it does, %v", identityFix)})
	}
	return hs
}

// namingSettings refuses each setting whose key or value names one of the sink's topics by its
// name on A (a topic.override.<topic>.* key, a topic:table map): on B the records carry another
// name. The framework's own settings, the secrets and "*.kafka.topic" (checked with the
// settings that point at A, pointsat.go) are not looked at; neither are the topics a
// topics.regex matches, which are not known.
func (t *topicNames) namingSettings(cannot string) []Hazard {
	var hs []Hazard
	for _, k := range slices.Sorted(maps.Keys(t.onB)) {
		if frameworkKey(k) || t.secret(k) || strings.HasSuffix(k, "kafka.topic") || t.edited(k) {
			continue
		}
		v := t.onB[k]
		for _, topic := range slices.Sorted(maps.Keys(t.renamed)) {
			r := t.renamed[topic]
			var what string
			var fix fleet.Text
			switch {
			case namesInKey(k, topic):
				what = fmt.Sprintf("key %q names topic %q", k, topic)
				fix = fleet.Textf("if it means the topic, give it under B's name with %s %s", fleet.UnsetKey{Key: k},
					fleet.SetValue{Key: strings.Replace(k, topic, r, 1), Value: fleet.Lit(v)})
			case slices.Contains(tokens(v), topic):
				what = fmt.Sprintf("value %q names topic %q", v, topic)
				fix = fleet.Textf("if it means the topic, give B's name with %s", fleet.SetValue{Key: k, Value: fleet.Lit(replaceToken(v, topic, r))})
			default:
				continue
			}
			hs = append(hs, Hazard{Check: HazardTopicNames, Key: k, Refuse: true,
				Message: fleet.Textf("%s, which is %q on B, where the records carry that name; %s", what, r, cannot),
				Fix:     fleet.Textf("%v; if it means something else (a table of that name), %s; or %v", fix, fleet.KeepAKey{Key: k}, identityFix)})
			break
		}
	}
	return hs
}

// edited reports whether the edit flags changed key for B.
func (t *topicNames) edited(key string) bool {
	a, okA := t.translated[key]
	b, okB := t.onB[key]
	return okA != okB || a != b
}

// frameworkKey reports whether key is one of Connect's own sink settings, which name no topic a
// family derives anything from (the topics, the transforms and predicates are judged apart; the
// dead letter queue is written on B under its own name).
func frameworkKey(k string) bool {
	switch k {
	case "name", "connector.class", "tasks.max", "topics", "topics.regex", "transforms", "predicates", "config.action.reload":
		return true
	}
	for _, p := range []string{"transforms.", "predicates.", "errors.", "key.converter", "value.converter", "header.converter",
		"consumer.override.", "producer.override.", "admin.override."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// namesInKey reports whether key holds topic between dots (or at an end): "topic.override.
// orders.collection" names "orders".
func namesInKey(key, topic string) bool {
	for i := 0; ; {
		j := strings.Index(key[i:], topic)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(topic)
		if (j == 0 || key[j-1] == '.') && (end == len(key) || key[end] == '.') {
			return true
		}
		i = j + 1
	}
}

// isTopicChar reports whether c may be part of a topic name (Kafka's legal characters).
func isTopicChar(c rune) bool {
	return c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// tokens splits v into the runs of characters a topic name may hold.
func tokens(v string) []string {
	return strings.FieldsFunc(v, func(c rune) bool { return !isTopicChar(c) })
}

// replaceToken replaces every token of v equal to from with to.
func replaceToken(v, from, to string) string {
	var b strings.Builder
	run := -1
	flush := func(end int) {
		if run >= 0 {
			if v[run:end] == from {
				b.WriteString(to)
			} else {
				b.WriteString(v[run:end])
			}
			run = -1
		}
	}
	for i, c := range v {
		if isTopicChar(c) {
			if run < 0 {
				run = i
			}
			continue
		}
		flush(i)
		b.WriteRune(c)
	}
	flush(len(v))
	return b.String()
}
