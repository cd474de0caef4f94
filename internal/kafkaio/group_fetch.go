package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxOffsetFetchVersion is the last OffsetFetch version without tagged fields. v5 and later
// return the committed leader epoch.
const maxOffsetFetchVersion = 5

// FetchGroupOffsets returns every committed offset of group (OffsetFetch with Topics null,
// v2+), each with its committed leader epoch (nil for none, or below OffsetFetch v5) and
// metadata, in the coordinator's order; partitions without a committed offset are left out.
// An error the coordinator answered for the group is a kafka.Error; the partitions it answered
// with an error come back joined, each wrapping its kafka.Error. A refusal for lack of an ACL
// is an *AuthzError naming Describe on the group.
func FetchGroupOffsets(ctx context.Context, cl *kafka.Client, group string) ([]GroupOffset, error) {
	offsets, err := fetchGroupOffsets(ctx, cl, group)
	return offsets, refusal(cl, err, OpDescribe, ResourceGroup, group)
}

func fetchGroupOffsets(ctx context.Context, cl *kafka.Client, group string) ([]GroupOffset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group // Topics nil: every partition the group has an offset for
	kres, err := exchangeGroup(ctx, cl, group, req, maxOffsetFetchVersion)
	if err != nil {
		return nil, err
	}
	res, ok := kres.(*kmsg.OffsetFetchResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected response %T", kres)
	}
	if res.ErrorCode != 0 {
		return nil, kafka.Error(res.ErrorCode)
	}
	var out []GroupOffset
	var errs []error
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				errs = append(errs, fmt.Errorf("topic %q partition %d: %w", t.Topic, p.Partition, kafka.Error(p.ErrorCode)))
				continue
			}
			if p.Offset < 0 {
				continue // no offset committed
			}
			o := GroupOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
			if res.Version >= 5 && p.LeaderEpoch >= 0 {
				epoch := p.LeaderEpoch
				o.LeaderEpoch = &epoch
			}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			out = append(out, o)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// FetchGroupOffsetsOf is FetchGroupOffsets for the named partitions only (OffsetFetch with
// Topics set). It exists for what the fetch of every partition hides: Kafka leaves out of that
// answer the topics the principal may not Describe, as if the group had no offsets there,
// while a partition asked for by name is answered with TOPIC_AUTHORIZATION_FAILED. Partitions
// answered with an error are returned in refused, by topic (the first error of each topic;
// an *AuthzError naming Describe on the topic for a missing ACL); partitions without a
// committed offset are left out. A refusal of the group is an *AuthzError naming Describe on
// the group.
func FetchGroupOffsetsOf(ctx context.Context, cl *kafka.Client, group string, topics map[string][]int) (offsets []GroupOffset, refused map[string]error, err error) {
	offsets, refused, err = fetchGroupOffsetsOf(ctx, cl, group, topics)
	for t, e := range refused {
		refused[t] = refusal(cl, e, OpDescribe, ResourceTopic, t)
	}
	return offsets, refused, refusal(cl, err, OpDescribe, ResourceGroup, group)
}

func fetchGroupOffsetsOf(ctx context.Context, cl *kafka.Client, group string, topics map[string][]int) (offsets []GroupOffset, refused map[string]error, err error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{}
	for t, ps := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rt.Partitions = append(rt.Partitions, int32(p))
		}
		req.Topics = append(req.Topics, rt)
	}
	kres, err := exchangeGroup(ctx, cl, group, req, maxOffsetFetchVersion)
	if err != nil {
		return nil, nil, err
	}
	res, ok := kres.(*kmsg.OffsetFetchResponse)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected response %T", kres)
	}
	if res.ErrorCode != 0 {
		return nil, nil, kafka.Error(res.ErrorCode)
	}
	refused = map[string]error{}
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				if refused[t.Topic] == nil {
					refused[t.Topic] = kafka.Error(p.ErrorCode)
				}
				continue
			}
			if p.Offset < 0 {
				continue
			}
			o := GroupOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
			if res.Version >= 5 && p.LeaderEpoch >= 0 {
				epoch := p.LeaderEpoch
				o.LeaderEpoch = &epoch
			}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			offsets = append(offsets, o)
		}
	}
	return offsets, refused, nil
}

// maxMetadataVersion is the last Metadata version without tagged fields.
const maxMetadataVersion = 8

// DescribeTopics asks a broker for the partitions of topics with a Metadata request of its
// own. kafka-go's Transport answers Client.Metadata from its cache of every topic the
// principal may Describe, where a topic it may not Describe is simply missing, as one that
// does not exist is; the broker answers TOPIC_AUTHORIZATION_FAILED for the first and
// UNKNOWN_TOPIC_OR_PARTITION for the second. The result maps each topic to its partitions, or
// to the broker's error for it in refused (an *AuthzError naming Describe on the topic for a
// missing ACL).
func DescribeTopics(ctx context.Context, cl *kafka.Client, topics []string) (partitions map[string][]int, refused map[string]error, err error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	kres, err := exchangeAny(ctx, cl, req, maxMetadataVersion)
	if err != nil {
		return nil, nil, err
	}
	res, ok := kres.(*kmsg.MetadataResponse)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected response %T", kres)
	}
	partitions, refused = map[string][]int{}, map[string]error{}
	for _, t := range res.Topics {
		if t.Topic == nil {
			continue
		}
		if t.ErrorCode != 0 {
			refused[*t.Topic] = refusal(cl, kafka.Error(t.ErrorCode), OpDescribe, ResourceTopic, *t.Topic)
			continue
		}
		for _, p := range t.Partitions {
			partitions[*t.Topic] = append(partitions[*t.Topic], int(p.Partition))
		}
	}
	return partitions, refused, nil
}

// clusterOpsSeeingAll are the Cluster operations Kafka answers for a principal that may do
// anything: every one it lists for the Cluster resource, ClusterAction among them (granted in
// practice only to brokers and super users).
var clusterOpsSeeingAll = []kmsg.ACLOperation{
	kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
	kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter,
	kmsg.ACLOperationDescribe,
}

// SeesEverything reports whether the brokers hide nothing from cl's principal: Metadata
// (v8, IncludeClusterAuthorizedOperations) says it may do every Cluster operation, which
// Kafka answers when it has no authorizer, or for a super user. A principal granted All on
// the Cluster resource alone also passes, though topics may still be hidden from it. A
// broker that does not answer the field counts as hiding.
func SeesEverything(ctx context.Context, cl *kafka.Client) (bool, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topic: the cluster part only
	req.IncludeClusterAuthorizedOperations = true
	kres, err := exchangeAny(ctx, cl, req, maxMetadataVersion)
	if err != nil {
		return false, err
	}
	res, ok := kres.(*kmsg.MetadataResponse)
	if !ok {
		return false, fmt.Errorf("unexpected response %T", kres)
	}
	if req.GetVersion() < 8 || res.AuthorizedOperations == math.MinInt32 {
		return false, nil
	}
	for _, op := range clusterOpsSeeingAll {
		if res.AuthorizedOperations&(1<<int32(op)) == 0 {
			return false, nil
		}
	}
	return true, nil
}
