package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A connector is stopped on A through A's REST API (--stop-source): its target state becomes
// STOPPED in A's config topic, and A's workers, restarted or not, leave it stopped. When A's
// REST API cannot be reached at all (its workers died: a SIGKILL, a lost node), nobody can
// stop it so; but nobody runs it either while no worker of A holds it, and that is what A's
// Kafka cluster can tell. Connect's workers are the members of a consumer group of protocol
// type "connect" (their group.id), and the coordinator keeps, for each live member, its
// metadata and the assignment the group's leader gave it (offsetstore's worker group
// protocol). So, with --stop-source and A's REST API unreachable, the stop becomes this check
// of every Connect group on A's Kafka cluster:
//
//   - the principal may Describe the cluster (Kafka lists only the groups a principal may
//     Describe, all of them with Describe on the cluster): else a group of A's workers could
//     be missing from the listing, and the check cannot decide;
//   - a group whose leader has read its config topic past the end of A's config topic reads
//     another one: it is not A's (B's, on A's Kafka cluster; a third Connect cluster);
//   - in every other group with members: the group is stable (its assignments are shown
//     only then), every member's metadata and assignment decode, no assignment failed
//     (CONFIG_MISMATCH), none holds the connector or one of its tasks (a member killed less
//     than its session ago, session.timeout.ms, is still one), no reassignment of a departed
//     worker's work is scheduled (the incremental protocols' delay,
//     scheduled.rebalance.max.delay.ms: the connector may be among that work), and the
//     leader has read past the connector's record in A's config topic (a leader of A that had
//     not would assign it once it reads on).
//
// Any of these failing refuses the connector (skipped, untouched: nothing was stopped); all of
// them holding, the connector is stopped on A de facto: the migration reads its offsets from
// A's topics as after a stop, records how the stop was established (stopped_on_a_by), and
// warns that A's workers must not be restarted with it (its target state on A is still what it
// was: they would resume it). The verification checks again (a worker of A holding it by then
// runs it again, and A's later records are no evidence). A worker cut off from its group's
// coordinator but still writing to the brokers (a zombie) is not a member and is not seen.

// restUnreachable reports whether err, from a call to a Connect REST API, means that nothing
// answers there: a connection refused, no route, a name that does not resolve, a timeout. An
// HTTP answer of any status, or a TLS failure, is not (something answers).
func restUnreachable(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return false
	}
	if ue.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// WorkersOfA asks A's Kafka cluster who may run a connector: the Connect groups there.
type WorkersOfA struct {
	Client      *kafka.Client
	Principal   string
	ConfigTopic string
}

// maxConnectGroups bounds the Connect groups a check describes.
const maxConnectGroups = 1000

// connectGroupView is what the check found of one Connect group.
type connectGroupView struct {
	name, state string
	members     int
	// configOffset is how far the group's leader had read its config topic (-1 unknown).
	configOffset int64
}

// noneHolds establishes that no worker of A holds connector name (whose latest record in A's
// config topic is at recordAt, -1 when unknown), as the package's comment above says, and
// returns how, or an error saying which worker holds it or why the check cannot decide.
func (w WorkersOfA) NoneHolds(ctx context.Context, name string, recordAt int64) (string, error) {
	if err := kafkaio.RequireClusterOps(ctx, w.Client, w.Principal, kafkaio.OpDescribe); err != nil {
		return "", fmt.Errorf("cannot decide whether a worker of A runs it: Kafka lists only the consumer groups the principal may Describe, "+
			"so without Describe on A's cluster a group of A's workers may be out of sight: %w", err)
	}
	listed, err := kafkaio.ListGroups(ctx, w.Client)
	if err != nil {
		return "", fmt.Errorf("cannot decide whether a worker of A runs it: list A's consumer groups: %w", err)
	}
	var groups []kafkaio.DescribedGroup
	for _, g := range listed {
		if g.ProtocolType != offsetstore.ConnectProtocolType {
			continue
		}
		if len(groups) == maxConnectGroups {
			return "", fmt.Errorf("cannot decide whether a worker of A runs it: A's Kafka cluster has more than %d Connect groups", maxConnectGroups)
		}
		d, err := kafkaio.DescribeGroup(ctx, w.Client, g.Group)
		if err != nil {
			return "", fmt.Errorf("cannot decide whether a worker of A runs it: describe Connect group %q: %w", g.Group, err)
		}
		groups = append(groups, d)
	}
	// A's config topic's end, read after the groups: it only grows, so a leader past it now
	// was past it when its group was described.
	end, err := topicEnd(ctx, w.Client, w.ConfigTopic)
	if err != nil {
		return "", fmt.Errorf("cannot decide whether a worker of A runs it: read the end of A's config topic %q: %w", w.ConfigTopic, err)
	}
	var seen []string
	for _, d := range groups {
		v, err := judgeConnectGroup(d, name, recordAt, end)
		if err != nil {
			return "", err
		}
		seen = append(seen, v)
	}
	how := "no live worker of A holds it (A's Connect REST API unreachable; judged by the Connect groups on A's Kafka cluster"
	if len(seen) == 0 {
		return how + ": there is none)", nil
	}
	if len(seen) > 10 {
		seen = append(seen[:10], fmt.Sprintf("and %d more", len(seen)-10))
	}
	return how + ": " + strings.Join(seen, "; ") + ")", nil
}

// judgeConnectGroup judges one described Connect group for connector name (its record in A's
// config topic at recordAt, A's config topic ending at end): a refusal, or what it found.
func judgeConnectGroup(d kafkaio.DescribedGroup, name string, recordAt, end int64) (string, error) {
	undecided := func(why string, args ...any) error {
		return fmt.Errorf("cannot decide whether a worker of A runs it: Connect group %q: %s", d.Group, fmt.Sprintf(why, args...))
	}
	if len(d.Members) == 0 {
		return fmt.Sprintf("group %q has no member (%s)", d.Group, d.State), nil
	}
	if d.State != "Stable" {
		return "", undecided("%s with %d members: Kafka shows its members' assignments only once the group is stable; try again in a moment "+
			"(a worker killed less than its session ago, session.timeout.ms, is still a member)", d.State, len(d.Members))
	}
	type member struct {
		m    kafkaio.GroupMember
		meta offsetstore.WorkerMetadata
		a    *offsetstore.WorkerAssignment
	}
	var members []member
	leaderAt := int64(-1)
	for _, m := range d.Members {
		meta, err := offsetstore.DecodeWorkerMetadata(m.Metadata)
		if err != nil {
			return "", undecided("member %q: %v", m.MemberID, err)
		}
		a, err := offsetstore.DecodeWorkerAssignment(m.Assignment)
		if err != nil {
			return "", undecided("member %q (worker %s): %v", m.MemberID, meta.URL, err)
		}
		if a == nil {
			return "", undecided("member %q (worker %s) has no assignment though the group is stable", m.MemberID, meta.URL)
		}
		leaderAt = max(leaderAt, a.ConfigOffset)
		members = append(members, member{m, meta, a})
	}
	if leaderAt > end {
		return fmt.Sprintf("group %q reads another config topic than A's (its leader read to offset %d, A's ends at %d)", d.Group, leaderAt, end), nil
	}
	for _, x := range members {
		conns, tasks := offsetstore.WorkerHolds(x.meta, x.a)
		var held []string
		if slices.Contains(conns, name) {
			held = append(held, "connector "+name)
		}
		for _, t := range tasks {
			if t.Connector == name {
				held = append(held, "task "+t.String())
			}
		}
		if len(held) > 0 {
			return "", fmt.Errorf("A runs it: member %q of Connect group %q (worker %s, host %s) holds %s; a worker killed less than its session ago "+
				"(session.timeout.ms, 10s by default) is a member until its session expires: try again then, or stop the connector through A's REST API",
				x.m.MemberID, d.Group, x.meta.URL, x.m.ClientHost, strings.Join(held, " and "))
		}
	}
	for _, x := range members {
		switch {
		case x.a.Error != offsetstore.AssignmentNoError:
			return "", undecided("member %q (worker %s) was assigned nothing: its assignment failed with error %d (CONFIG_MISMATCH: the workers read their config topic further and join again)",
				x.m.MemberID, x.meta.URL, x.a.Error)
		case x.a.Delay > 0:
			return "", undecided("its leader assigns again the connectors and tasks of a worker that left in %s (scheduled.rebalance.max.delay.ms), and %q may be among them",
				time.Duration(x.a.Delay)*time.Millisecond, name)
		}
	}
	if recordAt >= 0 && leaderAt <= recordAt {
		return "", undecided("its leader read its config topic to offset %d, not past %q's record at offset %d of A's: if it is A's group, it assigns the connector once it reads on",
			leaderAt, name, recordAt)
	}
	return fmt.Sprintf("group %q's %d members hold no part of it", d.Group, len(members)), nil
}

// topicEnd is the sum over topic's partitions of their end offsets (a config topic has one).
func topicEnd(ctx context.Context, cl *kafka.Client, topic string) (int64, error) {
	n, err := kafkaio.PartitionCount(ctx, cl, topic)
	if err != nil {
		return 0, err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {}}}
	for p := range n {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	res, err := cl.ListOffsets(ctx, req)
	if err != nil {
		return 0, err
	}
	var end int64
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("partition %d: %w", p.Partition, p.Error)
		}
		end += p.LastOffset
	}
	return end, nil
}
