package offsetstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// ErrGroupNotEmpty means the sink connector's consumer group still has members: its tasks are
// still running (or zombies are). Fail the request with Connect's message for that case (docs/connect-internals.md, "Sink connector offsets":
// "either because its tasks haven't stopped completely yet ..."); do not retry blindly.
var ErrGroupNotEmpty = errors.New("consumer group has active members")

// SinkGroup is the consumer group a sink connector named name with config props consumes
// with: consumer.override.group.id when it is set and not empty, else connect-<name>
// (docs/connect-internals.md, "Sink connector offsets").
func SinkGroup(name string, props map[string]string) string {
	if g := props["consumer.override.group.id"]; g != "" {
		return g
	}
	return "connect-" + name
}

// GroupOffset is a committed offset of a sink connector's consumer group, with the committed
// leader epoch and metadata that GroupOffsets reads, so that a snapshot commits back exactly
// what it found. An entry without them (LeaderEpoch nil, Metadata "") commits what Connect's
// PATCH commits: no epoch (-1) and empty metadata. The JSON form (the intent's snapshot)
// leaves both out when they are so, and reads an entry without them as such.
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// LeaderEpoch is the committed leader epoch; nil for none.
	LeaderEpoch *int32 `json:"leader_epoch,omitempty"`
	// Metadata is the committed metadata ("" for none; a broker stores a null as "").
	Metadata string `json:"metadata,omitempty"`
}

// GroupOffsets returns the committed offsets of group, each with its committed leader epoch
// and metadata (OffsetFetch v5+), sorted by topic and partition. An unknown group has none.
func (s *Store) GroupOffsets(ctx context.Context, group string) ([]GroupOffset, error) {
	gos, err := kafkaio.FetchGroupOffsets(ctx, s.client, group)
	if errors.Is(err, kafka.GroupIdNotFound) {
		return nil, nil // some brokers (kfake) say so for a group without offsets
	}
	if err != nil {
		return nil, wrapf(err, "fetch offsets of group %q", group)
	}
	out := make([]GroupOffset, len(gos))
	for i, o := range gos {
		out[i] = GroupOffset(o)
	}
	sortGroupOffsets(out)
	return out, nil
}

func sortGroupOffsets(o []GroupOffset) {
	slices.SortFunc(o, func(a, b GroupOffset) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// GroupMembers returns the number of members of group (0 for an unknown group).
func (s *Store) GroupMembers(ctx context.Context, group string) (int, error) {
	g, err := s.DescribeGroup(ctx, group)
	return g.Members, err
}

// GroupActivity is what DescribeGroups tells of a consumer group's life.
type GroupActivity struct {
	// State is the coordinator's word for the group: Empty, Stable, PreparingRebalance,
	// CompletingRebalance, or Dead (also a group the coordinator does not know).
	State string
	// Members is the number of its members.
	Members int
}

// Live reports whether the group has consumers, or is between generations with them: any
// state but Empty and Dead. A live group's offsets belong to whoever consumes with it.
func (g GroupActivity) Live() bool {
	return g.Members > 0 || (g.State != "" && g.State != "Empty" && g.State != "Dead")
}

// DescribeGroup returns the state and member count of group (kafkaio.DescribeGroup; none for
// an unknown group). A refusal is a *kafkaio.AuthzError naming Describe on the group.
func (s *Store) DescribeGroup(ctx context.Context, group string) (GroupActivity, error) {
	g, err := kafkaio.DescribeGroup(ctx, s.client, group)
	if err != nil {
		return GroupActivity{}, wrapf(err, "describe group %q", group)
	}
	return GroupActivity{State: g.State, Members: len(g.Members)}, nil
}

// DeleteGroup deletes group and its offsets (Connect's sink offset reset, docs/connect-internals.md, "Sink connector offsets"). A group that
// does not exist counts as deleted; a group with members fails with ErrGroupNotEmpty.
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	switch err := kafkaio.DeleteGroup(ctx, s.client, group); {
	case err == nil, errors.Is(err, kafka.GroupIdNotFound):
		return nil
	case errors.Is(err, kafka.NonEmptyGroup):
		return fmt.Errorf("%w: %w", ErrGroupNotEmpty, err)
	default:
		return err
	}
}

// CommitGroupOffsets commits offsets for group as Connect's alterSinkConnectorOffsets does
// through AdminClient.alterConsumerGroupOffsets with `new OffsetAndMetadata(offset)`
// (docs/connect-internals.md, "Sink connector offsets"): generation -1 and no member id, which the coordinator accepts
// only for an empty group (a new group is created empty), no committed leader epoch (-1) and
// empty metadata. The epoch matters: a consumer that resumes from a committed epoch checks it
// against the partition's epochs, and one that does not match (kafka-go's commit sends 0) reads
// as a truncation and makes it replay from the end of that epoch. An entry that carries an
// epoch or metadata (a snapshot GroupOffsets read, restored by a rollback) is committed with
// them, as it was found. A group with members fails with ErrGroupNotEmpty.
func (s *Store) CommitGroupOffsets(ctx context.Context, group string, offsets []GroupOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	commits := make([]kafkaio.GroupOffset, len(offsets))
	for i, o := range offsets {
		if o.Offset < 0 {
			return fmt.Errorf("commit offsets of group %q: topic %q partition %d: invalid negative offset %d", group, o.Topic, o.Partition, o.Offset)
		}
		commits[i] = kafkaio.GroupOffset(o)
	}
	err := kafkaio.CommitGroupOffsets(ctx, s.client, group, commits)
	if err == nil {
		return nil
	}
	var perPartition *kafkaio.GroupCommitError
	if errors.As(err, &perPartition) &&
		(errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress)) {
		// The coordinator rejects generation -1 while the group has members (Connect maps
		// UnknownMemberIdException to its "tasks haven't stopped" message).
		return fmt.Errorf("commit offsets of group %q: %w: %w", group, ErrGroupNotEmpty, err)
	}
	return wrapf(err, "commit offsets of group %q", group)
}

// wrapf adds what the store was doing to err, unless err is a refusal (*kafkaio.AuthzError),
// which names the operation and the resource itself: the caller adds what it asked for.
func wrapf(err error, format string, args ...any) error {
	var az *kafkaio.AuthzError
	if errors.As(err, &az) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// DeleteGroupOffsets deletes the committed offsets of the given partitions of group
// (Admin.deleteConsumerGroupOffsets, used by Connect for null entries of an alter request). A
// group that does not exist has nothing to delete.
func (s *Store) DeleteGroupOffsets(ctx context.Context, group string, partitions []GroupOffset) error {
	if len(partitions) == 0 {
		return nil
	}
	topics := map[string][]int{}
	for _, p := range partitions {
		topics[p.Topic] = append(topics[p.Topic], int(p.Partition))
	}
	switch err := kafkaio.DeleteGroupOffsets(ctx, s.client, group, topics); {
	case err == nil, errors.Is(err, kafka.GroupIdNotFound):
		return nil
	case errors.Is(err, kafka.GroupSubscribedToTopic):
		return fmt.Errorf("%w: %w", ErrGroupNotEmpty, err)
	default:
		return err
	}
}

// ProbeWrite reports whether the store's principal may Write topic (kafkaio.ProbeWrite):
// nil, or the broker's authorization error. Nothing is written.
func (s *Store) ProbeWrite(ctx context.Context, topic string) error {
	return kafkaio.ProbeWrite(ctx, s.client, topic)
}

// ProbeWrites is ProbeWrite for each of topics, in one request, which the store's producer
// sends beside the writes queued with it (kafkaio.Producer.ProbeWrites).
func (s *Store) ProbeWrites(ctx context.Context, topics []string) []error {
	return s.producer.ProbeWrites(ctx, topics)
}

// QueueProbeWrites queues ProbeWrites's questions on the store's producer
// (kafkaio.Producer.EnqueueProbes) and returns the wait for the answers.
func (s *Store) QueueProbeWrites(ctx context.Context, topics []string) func(context.Context) []error {
	return s.producer.EnqueueProbes(ctx, topics).Wait
}

// HoldWrites holds the store's producer until release (kafkaio.Producer.Hold): the writes
// queued meanwhile, the agent's intents included, go together.
func (s *Store) HoldWrites() (release func()) { return s.producer.Hold() }

// ProbeGroupCommit reports whether the store's principal may commit offsets of topics for
// group (kafkaio.ProbeGroupCommit). Nothing is committed.
func (s *Store) ProbeGroupCommit(ctx context.Context, group string, topics []string) error {
	return kafkaio.ProbeGroupCommit(ctx, s.client, group, topics)
}

// ProbeGroupDelete reports whether the store's principal may Delete group
// (kafkaio.ProbeGroupDelete). Nothing is deleted.
func (s *Store) ProbeGroupDelete(ctx context.Context, group, topic string) error {
	return kafkaio.ProbeGroupDelete(ctx, s.client, group, topic)
}

// ProbeRead reports whether the store's principal may Read topic (kafkaio.ProbeRead): nil,
// or the broker's authorization error. Nothing is fetched.
func (s *Store) ProbeRead(ctx context.Context, topic string) error {
	return kafkaio.ProbeRead(ctx, s.client, topic)
}
