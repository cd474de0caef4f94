package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin requests about topics and groups that the product makes for Connect's topics, its
// own topics and sink connectors' groups: a topic's config, a topic created when it is
// missing, a group deleted, a group's offsets deleted. Each returns a refusal as a complete
// *AuthzError (the client's principal, the operation, the resource), and its callers only add
// what they were doing. A group's description is DescribeGroup (groups_describe.go).

// maxReplicationFactor bounds the replication factor of a topic EnsureTopic creates: Kafka's
// usual three, or every broker of a smaller cluster.
const maxReplicationFactor = 3

// TopicConfig returns the value of one config of topic; ok is false when the broker reports
// none. A refusal is an *AuthzError naming DescribeConfigs on topic.
func TopicConfig(ctx context.Context, cl *kafka.Client, topic, name string) (value string, ok bool, err error) {
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic,
			ResourceName: topic,
			ConfigNames:  []string{name},
		}},
	})
	if err != nil {
		return "", false, refusal(cl, fmt.Errorf("describe configs of topic %q: %w", topic, err), OpDescribeConfigs, ResourceTopic, topic)
	}
	for _, r := range res.Resources {
		if r.ResourceName != topic {
			continue
		}
		if r.Error != nil {
			return "", false, refusal(cl, fmt.Errorf("describe configs of topic %q: %w", topic, r.Error), OpDescribeConfigs, ResourceTopic, topic)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				value, ok = e.ConfigValue, true
			}
		}
	}
	return value, ok, nil
}

// EnsureTopic creates topic with partitions and configs, replication factor min(3, brokers),
// if it does not exist. An existing topic is left as it is. A refusal is an *AuthzError
// naming Describe on topic (the metadata request) or Create on it.
func EnsureTopic(ctx context.Context, cl *kafka.Client, topic string, partitions int, configs map[string]string) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return refusal(cl, fmt.Errorf("ensure topic %q: %w", topic, err), OpDescribe, ResourceTopic, topic)
	}
	for _, t := range md.Topics {
		if t.Name == topic && t.Error == nil && len(t.Partitions) > 0 {
			return nil
		}
	}
	entries := make([]kafka.ConfigEntry, 0, len(configs))
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	slices.SortFunc(entries, func(a, b kafka.ConfigEntry) int { return strings.Compare(a.ConfigName, b.ConfigName) })
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: max(1, min(maxReplicationFactor, len(md.Brokers))),
		ConfigEntries:     entries,
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		// Refused: the principal may not Create the topic, or (a topic that exists) may not
		// even Describe it, which Read, Write and Delete imply.
		return fmt.Errorf("create topic %q: %w", topic, refusal(cl, err, OpCreate, ResourceTopic, topic))
	}
	return nil
}

// DeleteGroup deletes group and its committed offsets at its coordinator, as the other group
// requests are sent (group_exchange.go, coordinator.go: kafka-go's Client.DeleteGroups finds
// the coordinator again for every call). An error wraps the coordinator's:
// kafka.GroupIdNotFound for a group that does not exist, kafka.NonEmptyGroup for one with
// members; a refusal is an *AuthzError naming Delete on the group.
func DeleteGroup(ctx context.Context, cl *kafka.Client, group string) error {
	if err := deleteGroup(ctx, cl, group); err != nil {
		return refusal(cl, fmt.Errorf("delete group %q: %w", group, err), OpDelete, ResourceGroup, group)
	}
	return nil
}

// maxDeleteGroupsVersion is the last DeleteGroups version without tagged fields.
const maxDeleteGroupsVersion = 1

func deleteGroup(ctx context.Context, cl *kafka.Client, group string) error {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	kres, err := exchangeGroup(ctx, cl, group, req, maxDeleteGroupsVersion)
	if err != nil {
		return err
	}
	res, ok := kres.(*kmsg.DeleteGroupsResponse)
	if !ok {
		return fmt.Errorf("unexpected response %T", kres)
	}
	for _, g := range res.Groups {
		if g.Group == group && g.ErrorCode != 0 {
			return kafka.Error(g.ErrorCode)
		}
	}
	return nil
}

// DeleteGroupOffsets deletes the committed offsets of group for the given partitions of each
// topic (Admin.deleteConsumerGroupOffsets). An error wraps the coordinator's: the group's
// (kafka.GroupIdNotFound for a group that does not exist) or each partition's, joined
// (kafka.GroupSubscribedToTopic for a topic the group's members consume). A refusal is an
// *AuthzError naming Delete on the group, or Read on the first topic refused.
func DeleteGroupOffsets(ctx context.Context, cl *kafka.Client, group string, partitions map[string][]int) error {
	res, err := cl.OffsetDelete(ctx, &kafka.OffsetDeleteRequest{GroupID: group, Topics: partitions})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		return refusal(cl, fmt.Errorf("delete offsets of group %q: %w", group, err), OpDelete, ResourceGroup, group)
	}
	topics := make([]string, 0, len(res.Topics))
	for topic := range res.Topics {
		topics = append(topics, topic)
	}
	slices.Sort(topics)
	var errs []error
	refusedTopic := ""
	for _, topic := range topics {
		for _, p := range res.Topics[topic] {
			if p.Error == nil {
				continue
			}
			errs = append(errs, fmt.Errorf("topic %q partition %d: %w", topic, p.Partition, p.Error))
			if _, refused := AuthorizationCode(p.Error); refused && refusedTopic == "" {
				refusedTopic = topic
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("delete offsets of group %q: %w", group, err)
		if refusedTopic != "" {
			return refusal(cl, err, OpRead, ResourceTopic, refusedTopic)
		}
		return err
	}
	return nil
}
