package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A sink's offsets read from A's brokers must be all of them, or the sink is refused: "not
// allowed to see" must never pass for "nothing there". Kafka's OffsetFetch for every
// partition of a group leaves out the topics the principal may not Describe, silently, as if
// the group had no offsets there; B's sink would then replay those topics from the start.
// So, beside that fetch:
//
//   - the group itself: a refused fetch names the group and the Describe it needs;
//   - `topics`: each named topic is described (Metadata) and its partitions asked for by name,
//     which Kafka answers with TOPIC_AUTHORIZATION_FAILED instead of leaving them out;
//   - `topics.regex`: which topics the regex matches is known only to A's workers (a topic
//     the principal may not Describe is not listed to it either), so the offsets are compared
//     with A's REST API (GET /connectors/{name}/offsets, read by the worker's own principal,
//     which consumes those topics), when --from-connect-url is given; without it the sink
//     is refused, since its completeness cannot be shown, unless the brokers hide nothing
//     from the principal (kafkaio.SeesEverything: no authorizer, or a super user).
//
// Committed offsets of topics the sink no longer consumes (taken out of `topics`) and may not
// be described stay unseen: the sink does not read them on B either.
//
// With AllowUnreadable, what cannot be read is left out with a warning instead.

// sinkOffsets reads sink c's committed offsets on A and proves them complete (see above).
func (r *topicsReader) sinkOffsets(ctx context.Context, c *fleet.Connector) ([]events.ConnectorOffset, error) {
	// A sink's topics (`topics`) are described side by side with the fetch of its group's
	// offsets, not after it: neither needs the other, and each read of a sink's offsets (its
	// stop barrier makes two) waited for two round trips to A one after the other.
	var described describeResult
	if topics := listedTopics(c); len(topics) > 0 {
		described = r.describeAhead(ctx, topics)
	}
	gos, err := r.store.GroupOffsets(ctx, c.Group)
	if err != nil {
		var az *kafkaio.AuthzError
		if errors.As(err, &az) {
			return nil, fmt.Errorf("read the sink's committed offsets: %w", err)
		}
		return nil, err
	}
	unreadable, extra, err := r.unreadable(ctx, c, gos, described)
	if err != nil {
		return nil, err
	}
	if len(unreadable) > 0 {
		causes := make([]any, len(unreadable))
		for i, u := range unreadable {
			causes[i] = u
		}
		msg := fleet.Textf("the committed offsets of group %q cannot all be read, and a partition left out would be replayed from the start on B: %v",
			c.Group, fleet.Textf(strings.TrimSuffix(strings.Repeat("%v; ", len(causes)), "; "), causes...))
		if !r.src.AllowUnreadable {
			return nil, fleet.Errorf("%v; or pass %s to go on without them", msg, fleet.AllowUnreadable)
		}
		fleet.Warn(r.logger, fleet.Textf("sink offsets left out (%s)", fleet.AllowUnreadable), "connector", c.Name, "err", msg)
	}
	for _, e := range extra {
		if !slices.ContainsFunc(gos, func(g offsetstore.GroupOffset) bool { return g.Topic == e.Topic && g.Partition == e.Partition }) {
			gos = append(gos, offsetstore.GroupOffset(e))
		}
	}
	slices.SortFunc(gos, func(a, b offsetstore.GroupOffset) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	out := make([]events.ConnectorOffset, 0, len(gos))
	for _, g := range gos {
		out = append(out, handlers.SinkOffset(g))
	}
	return out, nil
}

// listedTopics are the topics of sink c's `topics`, each once; none without it.
func listedTopics(c *fleet.Connector) []string {
	list, ok := c.Config.Get("topics")
	if !ok || strings.TrimSpace(list) == "" {
		return nil
	}
	var topics []string
	for _, t := range strings.Split(list, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	return topics
}

// describeResult is the answer of a description of topics (describer.describe) under way;
// nil when none was started.
type describeResult func() (map[string][]int, map[string]error, error)

// describeAhead starts describing topics and returns the function that waits for the answer.
func (r *topicsReader) describeAhead(ctx context.Context, topics []string) describeResult {
	type answer struct {
		parts  map[string][]int
		failed map[string]error
		err    error
	}
	got := make(chan answer, 1) // the describer's call ends with ctx: nothing is left waiting
	go func() {
		var a answer
		a.parts, a.failed, a.err = r.topics.describe(ctx, topics)
		got <- a
	}()
	return func() (map[string][]int, map[string]error, error) {
		a := <-got
		return a.parts, a.failed, a.err
	}
}

// unreadable returns what keeps the sink's offsets from being complete (AuthzErrors and the
// like), and offsets the fetch of every partition did not return but a fetch by name did. An
// error is a failure to check at all. described, when not nil, is the description of the
// sink's `topics` started already.
func (r *topicsReader) unreadable(ctx context.Context, c *fleet.Connector, gos []offsetstore.GroupOffset, described describeResult) ([]error, []kafkaio.GroupOffset, error) {
	if topics := listedTopics(c); len(topics) > 0 {
		return r.checkTopics(ctx, c.Group, topics, gos, described)
	}
	if re, ok := c.Config.Get("topics.regex"); ok && strings.TrimSpace(re) != "" {
		if r.rest == nil {
			// Nothing is hidden from a principal the brokers allow everything (no
			// authorizer, or a super user): the group's offsets are then complete.
			if all, err := kafkaio.SeesEverything(ctx, r.client); err == nil && all {
				return nil, nil, nil
			}
			return []error{fleet.Errorf("the sink subscribes with topics.regex, and Kafka leaves the topics principal %s may not Describe out of a group's offsets; "+
				"which topics the regex matches only A's workers know: give %s, whose offsets (read by the worker's principal) are compared", r.principal(), fleet.FromConnectURL)}, nil, nil
		}
		worker, err := r.rest.offsets(ctx, c)
		if err != nil {
			return nil, nil, fmt.Errorf("compare with A's REST API (topics.regex): %w", err)
		}
		var missing []string
		for _, o := range worker {
			t, _ := o.Partition.Get("kafka_topic")
			topic, _ := t.(string)
			p, _ := o.Partition.Get("kafka_partition")
			part := fmt.Sprint(p)
			if topic == "" {
				continue
			}
			if !slices.ContainsFunc(gos, func(g offsetstore.GroupOffset) bool { return g.Topic == topic && fmt.Sprint(g.Partition) == part }) &&
				!slices.Contains(missing, topic) {
				missing = append(missing, topic)
			}
		}
		if len(missing) == 0 {
			return nil, nil, nil
		}
		slices.Sort(missing)
		return r.checkTopics(ctx, c.Group, missing, gos, nil)
	}
	return nil, nil, nil
}

// checkTopics describes topics and asks for the group's offsets of their partitions by name.
// A topic that does not exist has no offsets; one the principal may not Describe, or whose
// partitions the coordinator refuses, is unreadable. gos are the group's offsets the fetch of
// every partition returned: when they hold every partition of the topics described, the
// fetch by name is not made, since it could tell nothing more (see covered). described, when
// not nil, is the description of topics started already.
func (r *topicsReader) checkTopics(ctx context.Context, group string, topics []string, gos []offsetstore.GroupOffset, described describeResult) ([]error, []kafkaio.GroupOffset, error) {
	if described == nil {
		described = func() (map[string][]int, map[string]error, error) { return r.topics.describe(ctx, topics) }
	}
	parts, failed, err := described()
	if err != nil {
		return nil, nil, fmt.Errorf("describe the sink's topics: %w", err)
	}
	var unreadable []error
	for _, t := range topics {
		e := failed[t]
		switch {
		case e == nil || errors.Is(e, kafka.UnknownTopicOrPartition):
			// Described, or does not exist (no offsets there).
		default:
			if _, ok := kafkaio.AuthorizationCode(e); ok {
				unreadable = append(unreadable, e) // DescribeTopics' *kafkaio.AuthzError
				continue
			}
			return nil, nil, fmt.Errorf("describe topic %q: %w", t, e)
		}
	}
	if len(parts) == 0 || covered(gos, parts) {
		return unreadable, nil, nil
	}
	offs, refused, err := kafkaio.FetchGroupOffsetsOf(ctx, r.client, group, parts)
	if err != nil {
		if _, ok := kafkaio.AuthorizationCode(err); ok {
			return append(unreadable, err), nil, nil // FetchGroupOffsetsOf's *kafkaio.AuthzError
		}
		return nil, nil, fmt.Errorf("fetch offsets of group %q for the sink's topics: %w", group, err)
	}
	names := make([]string, 0, len(refused))
	for t := range refused {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		if _, ok := kafkaio.AuthorizationCode(refused[t]); ok {
			unreadable = append(unreadable, refused[t]) // a *kafkaio.AuthzError
			continue
		}
		unreadable = append(unreadable, fmt.Errorf("topic %q: %w", t, refused[t]))
	}
	return unreadable, offs, nil
}

func (r *topicsReader) principal() string {
	if r.src.Principal == "" {
		return "User:ANONYMOUS"
	}
	return r.src.Principal
}

// covered reports whether gos hold a committed offset for every partition of parts. The fetch
// of every partition leaves out only the topics the principal may not Describe (all their
// partitions) and the partitions without a committed offset, and answers a partition it
// cannot read with an error (GroupOffsets fails then): a partition it returned is one the
// fetch by name would return the same, without a refusal. So when every partition of the
// sink's topics is there, the fetch by name, a round trip to the group's coordinator for each
// read of a sink's offsets (three for each sink a migration stops: the listing's, and the two
// of its stop barrier), is left out.
func covered(gos []offsetstore.GroupOffset, parts map[string][]int) bool {
	have := make(map[string]map[int32]bool, len(parts))
	for _, g := range gos {
		if _, named := parts[g.Topic]; !named {
			continue
		}
		if have[g.Topic] == nil {
			have[g.Topic] = map[int32]bool{}
		}
		have[g.Topic][g.Partition] = true
	}
	for t, ps := range parts {
		for _, p := range ps {
			if !have[t][int32(p)] {
				return false
			}
		}
	}
	return true
}
