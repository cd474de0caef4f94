package hazard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/javaregex"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/mm2"
)

// Across MirrorMaker 2 with a replication policy that renames topics (MM2's default policy:
// A's "T" is "A.T" on B), the sink of a pipeline moved to B reads the renamed topic "A.T",
// while the source moved with it keeps writing "T" on B: the pipeline stops delivering, and
// nothing fails. So before anything is stopped on A, every selected sink whose topics the
// policy renames is compared with every selected source: a source that writes a topic the sink
// reads makes the two a pipeline, and both are refused (skipped, with what to do), unless
// --sink-follows-source moves them (follow.go).
//
// What a source writes on A is known from two places, and both are used:
//
//   - Connect's own topic tracking (KIP-558, GET /connectors/{name}/topics on A's REST API):
//     every topic the connector's tasks produced to since the tracking was last reset, after
//     the SMTs; a worker with topic.tracking.enable=false answers 4xx, and an old worker has
//     no such endpoint: the config alone is read then.
//   - the source's config where it names its topics: `topic` (FileStreamSource and many
//     others), and Debezium's `topic.prefix` (`database.server.name` before Debezium 2.0),
//     under which it writes `<prefix>.<schema>.<table>`. A sink reading a topic of that
//     prefix is a match. The config does not show a topic an SMT reroutes records to: the
//     topic tracking does, once the source has written there.
//
// A sink with topics.regex matches a tracked or named topic its regex matches, and a Debezium
// prefix whose topics the regex may match: any topic the regex matches begins with its literal
// prefix, so a prefix compatible with it is a match. The regex is Java's, and is evaluated as
// Java evaluates it (internal/javaregex). Where that cannot be done (a construct javaregex
// does not evaluate, a match that gets no answer in time, a regex Java refuses), whether the
// two are a pipeline is not known: the pair is refused all the same, saying which pattern and
// why, since moving a pipeline that is one cuts it without an error.

// pipelinePair is a selected sink that reads on A topics a selected source writes.
type pipelinePair struct {
	sink, source *Subject
	// Topics are the sink's topics the source writes ("<prefix>.*" for a Debezium prefix
	// matched by a topics.regex), in order; how says where that was read.
	topics []string
	how    string
	// undecided, when no topic is known to be read, says why whether the sink reads what the
	// source writes is not known (its topics.regex could not be evaluated as Java would);
	// written is what the source writes then.
	undecided string
	written   []string
}

// written is what a source writes on A.
type written struct {
	names    []string // exact topic names
	prefixes []string // Debezium topic prefixes: "<prefix>" and "<prefix>.*"
	// from says where each name, and each prefix as "<prefix>.*", was read.
	from map[string]string
}

func (w *written) add(name, from string) {
	if w.from == nil {
		w.from = map[string]string{}
	}
	if _, seen := w.from[name]; seen {
		return
	}
	w.from[name] = from
	if prefix, ok := strings.CutSuffix(name, ".*"); ok {
		w.prefixes = append(w.prefixes, prefix)
	} else {
		w.names = append(w.names, name)
	}
}

// CheckPipelines finds the pipelines whose sink MirrorMaker 2's policy would cut off from its
// source on B, and refuses both connectors of each (see above). It runs before anything is
// stopped on A.
func (hc *Checks) CheckPipelines(ctx context.Context, entries []*Subject) {
	m := hc.opts.MM2
	if m == nil {
		return
	}
	var sources, sinks []*Subject
	for _, e := range entries {
		switch {
		case !e.Connector.Problem.IsZero():
		case e.Connector.Type == connectors.Source:
			sources = append(sources, e)
		case e.Connector.Type == connectors.Sink:
			sinks = append(sinks, e)
		}
	}
	if len(sources) == 0 || len(sinks) == 0 {
		return
	}
	writes := map[string]written{}
	for _, src := range sources {
		writes[src.Connector.Name] = hc.writes(ctx, src.Connector)
	}
	for _, sink := range sinks {
		var pairs []pipelinePair
		for _, src := range sources {
			w := writes[src.Connector.Name]
			topics, undecided := sinkReads(sink.Connector, w, m.Policy)
			switch {
			case len(topics) > 0:
				pairs = append(pairs, pipelinePair{sink: sink, source: src, topics: topics, how: w.origin(topics)})
			case undecided != "":
				all := slices.Clone(w.names)
				for _, p := range w.prefixes {
					all = append(all, p+".*")
				}
				pairs = append(pairs, pipelinePair{sink: sink, source: src, how: w.origin(all), undecided: undecided, written: all})
			}
		}
		if len(pairs) == 0 {
			continue
		}
		why := fleet.Textf("%s not given", fleet.SinkFollowsSource)
		if hc.opts.SinkFollowsSource {
			why = hc.cannotFollow(sink.Connector, pairs, m.Policy)
		}
		if why.IsZero() {
			follow(pairs)
			continue
		}
		for _, p := range pairs {
			refusePipeline(p, m.Policy, hc.opts.SinkFollowsSource, why)
		}
	}
	// A sink follows its sources only when they move too.
	for _, sink := range sinks {
		c := sink.Connector
		if sink.Follows == nil {
			continue
		}
		for _, src := range sink.Follows.Sources {
			if !src.Problem.IsZero() {
				sink.Follows = nil
				c.Problem = fleet.Textf("pipeline with source %q, which is skipped, so it stays on A with it: %v", src.Name, src.Problem)
				break
			}
		}
	}
}

// origin says where the topics a sink reads were found among what w writes.
func (w written) origin(topics []string) string {
	var how []string
	for _, t := range topics {
		from := w.from[t]
		if from == "" { // a name under a prefix
			for _, p := range w.prefixes {
				if connectors.UnderTopicPrefix(t, p) {
					from = w.from[p+".*"]
				}
			}
		}
		if from != "" && !slices.Contains(how, from) {
			how = append(how, from)
		}
	}
	return strings.Join(how, " and ")
}

// refusePipeline gives both connectors of p a Problem: the sink the whole message, the source
// a pointer to it. A connector in several pairs keeps its first message. why says why the
// pair is not moved with --sink-follows-source (asked says whether it was given).
func refusePipeline(p pipelinePair, policy mm2.Policy, asked bool, why fleet.Text) {
	var onB []string
	for _, t := range p.topics {
		onB = append(onB, remoteName(policy, t))
	}
	identity := fleet.Textf("use %s (IdentityReplicationPolicy on MirrorMaker 2, so that the source on B writes the topic MirrorMaker 2 fills with A's records)",
		fleet.Give{Setting: fleet.ReplicationPolicy, Value: "identity"})
	var what fleet.Text
	if p.undecided != "" {
		// Whether they are a pipeline is not known: refused as one, since one moved would be cut.
		what = fleet.Textf("across MirrorMaker 2 with the %s replication policy, whether the moved sink %q reads what the moved source %q writes (%s, "+
			"read from %s) cannot be decided: %s; if it does, the sink on B would read the renamed topics while the source on B writes these, "+
			"and the pipeline would stop delivering, without an error; %s, or, if the sink reads none of them, leave one of the two out of this run (%s)",
			PolicyName(policy), p.sink.Connector.Name, p.source.Connector.Name, strings.Join(p.written, ", "), p.how, p.undecided, identity, fleet.Exclude)
	} else {
		what = fleet.Textf("across MirrorMaker 2 with the %s replication policy, the moved sink %q would read %s on B, while the moved source %q "+
			"writes %s on B (read from %s): the pipeline would stop delivering, without an error; %s",
			PolicyName(policy), p.sink.Connector.Name, strings.Join(onB, ", "), p.source.Connector.Name, strings.Join(p.topics, ", "), p.how, identity)
	}
	switch {
	case asked:
		what = fleet.Textf("%s cannot move it: %v; %v", fleet.SinkFollowsSource, why, what)
	case p.undecided != "":
	default:
		what = what.Append(", or move the pair with %s %s (the sink on B then reads %s, from where the source on B starts writing)",
			fleet.StopSource, fleet.SinkFollowsSource, strings.Join(p.topics, ", "))
	}
	if p.sink.Connector.Problem.IsZero() {
		p.sink.Connector.Problem = fleet.Textf("pipeline with source %q: %v", p.source.Connector.Name, what)
	}
	if p.source.Connector.Problem.IsZero() {
		p.source.Connector.Problem = fleet.Textf("pipeline with sink %q, skipped with it: %v", p.sink.Connector.Name, what)
	}
}

func PolicyName(p mm2.Policy) string {
	if p.Kind == "" {
		return string(mm2.PolicyDefault)
	}
	return string(p.Kind)
}

// remoteName is the name on B of topic t on A, or of every topic under a "<prefix>.*".
func remoteName(p mm2.Policy, t string) string {
	if prefix, ok := strings.CutSuffix(t, ".*"); ok {
		return p.RemoteTopic(prefix) + ".*"
	}
	return p.RemoteTopic(t)
}

// writes reads what source c writes on A: its tracked topics (when A's REST API is given and
// tracks them) and the topics its config names.
func (hc *Checks) writes(ctx context.Context, c *fleet.Connector) written {
	var w written
	if names, ok := hc.a.ActiveTopics(ctx, c.Name); ok {
		for _, n := range names {
			w.add(n, "A's topic tracking, GET /connectors/"+c.Name+"/topics")
		}
	}
	props := c.Config.Map()
	if t := strings.TrimSpace(props["topic"]); t != "" {
		w.add(t, "its config's topic")
	}
	if strings.HasPrefix(props["connector.class"], "io.debezium.") {
		// The settings Debezium's topic names begin with (database.server.name before 2.0).
		for _, k := range []string{"topic.prefix", "database.server.name"} {
			if p := strings.TrimSpace(props[k]); p != "" {
				w.add(p+".*", "its config's "+k)
				break
			}
		}
	}
	return w
}

// sinkReads returns the topics sink c reads on A that w writes, when policy renames them on
// B: for a topics.regex sink, the written names the regex matches and "<prefix>.*" for a
// Debezium prefix it may match. undecided says why that is not known for some of them ("" when
// it is for all): the regex cannot be evaluated as Java would, or gave no answer for a name.
func sinkReads(c *fleet.Connector, w written, policy mm2.Policy) (topics []string, undecided string) {
	props := c.Config.Map()
	var out []string
	if list := strings.TrimSpace(props[mm2.TopicsKey]); list != "" {
		for _, t := range strings.Split(list, ",") {
			t = strings.TrimSpace(t)
			if t == "" || policy.RemoteTopic(t) == t || slices.Contains(out, t) {
				continue
			}
			if slices.Contains(w.names, t) || slices.ContainsFunc(w.prefixes, func(p string) bool { return connectors.UnderTopicPrefix(t, p) }) {
				out = append(out, t)
			}
		}
		return out, ""
	}
	// Connect's ConfigDef trims a STRING with String.trim: every char <= ' '.
	expr := strings.TrimFunc(props[mm2.TopicsRegexKey], func(r rune) bool { return r <= ' ' })
	if expr == "" || policy.Kind == mm2.PolicyIdentity || len(w.names)+len(w.prefixes) == 0 {
		return nil, ""
	}
	re, err := javaregex.Compile(expr)
	if err != nil {
		return nil, fmt.Sprintf("its %s is %v", mm2.TopicsRegexKey, err)
	}
	var why []string
	matches := func(name string) bool {
		ok, err := re.Matches(name)
		if err != nil {
			why = append(why, fmt.Sprintf("its %s %q gave no answer for %q: %v", mm2.TopicsRegexKey, expr, name, err))
		}
		return ok
	}
	for _, t := range w.names {
		if policy.RemoteTopic(t) != t && matches(t) {
			out = append(out, t)
		}
	}
	// Connect matches the whole name, so every topic the regex matches begins with its
	// literal prefix.
	lit := re.LiteralPrefix()
	for _, p := range w.prefixes {
		if strings.HasPrefix(p+".", lit) || strings.HasPrefix(lit, p+".") || matches(p) {
			out = append(out, p+".*")
		}
	}
	return out, strings.Join(why, "; ")
}

// Following is a sink that follows its sources.
type Following struct {
	Sources []*fleet.Connector
	// Topics are the sink's topics the sources write, under their names on A.
	Topics []string
	// Drained is how long A's sink took to consume all its sources wrote on A.
	Drained time.Duration
}

// follow makes the sink of pairs (one sink) follow their sources.
func follow(pairs []pipelinePair) {
	f := &Following{}
	for _, p := range pairs {
		f.Sources = append(f.Sources, p.source.Connector)
		for _, t := range p.topics {
			if !slices.Contains(f.Topics, t) {
				f.Topics = append(f.Topics, t)
			}
		}
	}
	pairs[0].sink.Follows = f
}

// cannotFollow says why sink c cannot follow the sources of pairs (zero when it can).
func (hc *Checks) cannotFollow(c *fleet.Connector, pairs []pipelinePair, policy mm2.Policy) fleet.Text {
	if !hc.opts.StopSource && !hc.opts.StopPlanned {
		return fleet.Textf("it needs %s: the sink on B starts where the source on B starts writing, once A's sink has consumed all the source wrote on A, and only a stopped source writes no more", fleet.StopSource)
	}
	if hc.a.Client() == nil {
		return fleet.Textf("it needs %s: A's sink's lag on the source's topics is read from A's brokers", fleet.FromBrokers)
	}
	props := c.Config.Map()
	if strings.TrimSpace(props[mm2.TopicsKey]) == "" {
		return fleet.Plain("the sink subscribes with topics.regex; it moves a sink with a topics list")
	}
	var followed, others []string
	for _, p := range pairs {
		followed = append(followed, p.topics...)
	}
	for _, t := range strings.Split(props[mm2.TopicsKey], ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(followed, t) && policy.RemoteTopic(t) != t {
			others = append(others, t)
		}
	}
	if len(others) > 0 {
		return fleet.Textf("the sink also reads %s, which no selected source writes and which it would read renamed on B; one sink cannot do both", strings.Join(others, ", "))
	}
	return fleet.Text{}
}
