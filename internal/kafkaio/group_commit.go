package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An admin commit of a consumer group's offsets is a kmsg.OffsetCommitRequest sent to the
// group's coordinator (group_exchange.go): kafka-go's Client.OffsetCommit sends
// CommittedLeaderEpoch 0 from v6 on and has no way to set it, and a consumer that resumes from
// a committed epoch 0 on a partition whose epoch moved takes the offset for a truncated one and
// replays from the end of epoch 0.

// maxOffsetCommitVersion is the last OffsetCommit version without tagged fields. kafka-go
// negotiates at most this version anyway (its own OffsetCommit's last). v6 and later carry
// the committed leader epoch.
const maxOffsetCommitVersion = 7

// GroupOffset is one partition's committed offset of a group: what a commit writes and what
// FetchGroupOffsets reads.
type GroupOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	// LeaderEpoch is the committed leader epoch; nil for none (-1 on the wire).
	LeaderEpoch *int32
	// Metadata is the committed metadata ("" for none: a broker stores a null as "").
	Metadata string
}

// GroupCommitError is the error a coordinator answered for one partition of a commit. Err is
// a kafka.Error, so errors.Is(err, kafka.UnknownMemberId) and Classify work on it.
type GroupCommitError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *GroupCommitError) Error() string {
	return fmt.Sprintf("topic %q partition %d: %v", e.Topic, e.Partition, e.Err)
}

func (e *GroupCommitError) Unwrap() error { return e.Err }

// CommitError is the error of a commit the coordinator refused for some of its partitions.
// errors.Is and errors.As see each refusal (a *GroupCommitError); its text is theirs, joined.
type CommitError struct {
	// Committed is how many partitions of the commit the coordinator accepted.
	Committed int
	// Refused are the refused partitions, in the coordinator's order.
	Refused []*GroupCommitError
}

func (e *CommitError) Error() string { return errors.Join(e.Unwrap()...).Error() }

func (e *CommitError) Unwrap() []error {
	errs := make([]error, len(e.Refused))
	for i, r := range e.Refused {
		errs[i] = r
	}
	return errs
}

// notCommitted reports whether nothing of the commit is in the group: no partition accepted,
// and every refusal one that a coordinator answers before it appends the partition's offset
// (refusedBeforeCommit).
func (e *CommitError) notCommitted() bool {
	if e.Committed > 0 {
		return false
	}
	for _, r := range e.Refused {
		var kerr kafka.Error
		if !errors.As(r.Err, &kerr) || !slices.Contains(refusedBeforeCommit, kerr) {
			return false
		}
	}
	return true
}

// refusedBeforeCommit are the per-partition errors of an OffsetCommit that a coordinator
// answers before it appends the partition's offset to __consumer_offsets: the ACLs, the
// request's validity, the group's membership. COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and
// REQUEST_TIMED_OUT may follow an append (Kafka's GroupMetadataManager maps an append that
// timed out or lost its replicas to them); they are not here.
var refusedBeforeCommit = []kafka.Error{
	kafka.GroupAuthorizationFailed, kafka.TopicAuthorizationFailed, kafka.UnknownTopicOrPartition,
	kafka.OffsetMetadataTooLarge, kafka.InvalidCommitOffsetSize, kafka.UnknownMemberId,
	kafka.IllegalGeneration, kafka.RebalanceInProgress, kafka.InvalidGroupId,
}

// CommitGroupOffsets commits offsets for group as Kafka's Admin.alterConsumerGroupOffsets
// commits a map of OffsetAndMetadata: generation -1, no member id and no group instance id (an
// admin commit, which the coordinator accepts only for a group without members, and which
// creates an unknown group empty), and per partition the committed leader epoch and metadata
// given: for `new OffsetAndMetadata(offset)`, as Connect's alterSinkConnectorOffsets commits,
// no epoch (LeaderEpoch nil, -1 on the wire) and empty metadata. Below OffsetCommit v6 the
// request has no leader epoch field and the coordinator stores none. The partitions the
// coordinator refused come back joined, each a *GroupCommitError; an error of the round trip
// itself is returned as the transport gave it. A commit refused for any partition is a
// *CommitError; MayHaveWritten tells whether anything of it may be in the group. A refusal for
// lack of an ACL is worded as an *AuthzError (Read on the group when the group was refused,
// else Read on the first refused topic) that still unwraps to the *CommitError.
func CommitGroupOffsets(ctx context.Context, cl *kafka.Client, group string, offsets []GroupOffset) error {
	return groupCommitRefusal(cl, commitGroupOffsets(ctx, cl, group, offsets), group)
}

func commitGroupOffsets(ctx context.Context, cl *kafka.Client, group string, offsets []GroupOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetCommitRequest() // generation -1, retention -1 (the broker's default)
	req.Group = group
	topics := map[string]int{} // index in req.Topics
	for _, o := range offsets {
		i, ok := topics[o.Topic]
		if !ok {
			i = len(req.Topics)
			topics[o.Topic] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = o.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition() // leader epoch -1, timestamp -1
		metadata := o.Metadata
		p.Partition, p.Offset, p.Metadata = o.Partition, o.Offset, &metadata
		if o.LeaderEpoch != nil {
			p.LeaderEpoch = *o.LeaderEpoch
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	kres, err := exchangeGroup(ctx, cl, group, req, maxOffsetCommitVersion)
	if err != nil {
		return err
	}
	res, ok := kres.(*kmsg.OffsetCommitResponse)
	if !ok {
		return fmt.Errorf("unexpected response %T", kres)
	}
	ce := &CommitError{}
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				ce.Refused = append(ce.Refused, &GroupCommitError{Topic: t.Topic, Partition: p.Partition, Err: kafka.Error(p.ErrorCode)})
			} else {
				ce.Committed++
			}
		}
	}
	if len(ce.Refused) == 0 {
		return nil
	}
	return ce
}
