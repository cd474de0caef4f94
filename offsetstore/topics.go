package offsetstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
)

// Partition counts Connect creates its topics with (docs/connect-internals.md, "Config topic requirements"
// and "Offsets topic requirements").
const (
	configTopicPartitions  = 1
	offsetsTopicPartitions = 25
	maxReplicationFactor   = 3
)

// Connect's worker property names, quoted in its own error message (docs/connect-internals.md, "Config topic requirements").
const (
	configStorageTopicProperty = "config.storage.topic"
	offsetStorageTopicProperty = "offset.storage.topic"
)

// CheckConnectTopics verifies the config topic exists with exactly one partition and
// cleanup.policy=compact, and the offsets topic exists and is compact, as a Connect worker does
// on start. With create, it first creates the missing ones as Connect would (config: 1 partition,
// offsets: 25, compact, replication factor min(3, brokers)).
func CheckConnectTopics(ctx context.Context, cl *kafka.Client, configTopic, offsetsTopic string, create bool) error {
	if create {
		compact := map[string]string{"cleanup.policy": "compact"}
		if err := EnsureTopic(ctx, cl, configTopic, configTopicPartitions, compact); err != nil {
			return err
		}
		if err := EnsureTopic(ctx, cl, offsetsTopic, offsetsTopicPartitions, compact); err != nil {
			return err
		}
	}
	n, err := kafkaio.PartitionCount(ctx, cl, configTopic)
	if err != nil {
		return fmt.Errorf("check config topic: %w", kafkaio.Authz(err, kafkaio.PrincipalOf(cl), kafkaio.OpDescribe, kafkaio.ResourceTopic, configTopic))
	}
	if n != configTopicPartitions {
		// KafkaConfigBackingStore.start's message, verbatim.
		return fmt.Errorf("Topic '%s' supplied via the '%s' property is required to have a single partition in order to guarantee consistency of connector configurations, but found %d partitions.", //nolint:staticcheck // Connect's text
			configTopic, configStorageTopicProperty, n)
	}
	if err := checkCompact(ctx, cl, configTopic, configStorageTopicProperty); err != nil {
		return err
	}
	if _, err := kafkaio.PartitionCount(ctx, cl, offsetsTopic); err != nil {
		return fmt.Errorf("check offsets topic: %w", kafkaio.Authz(err, kafkaio.PrincipalOf(cl), kafkaio.OpDescribe, kafkaio.ResourceTopic, offsetsTopic))
	}
	return checkCompact(ctx, cl, offsetsTopic, offsetStorageTopicProperty)
}

// checkCompact fails unless topic's cleanup.policy is exactly compact
// (TopicAdmin.verifyTopicCleanupPolicyOnlyCompact). A principal without DescribeConfigs on the
// topic skips the check, as Connect's TopicAdmin does (it cannot verify the policy and goes
// on): DescribeConfigs is an optional ACL.
func checkCompact(ctx context.Context, cl *kafka.Client, topic, property string) error {
	policy, ok, err := TopicConfig(ctx, cl, topic, "cleanup.policy")
	if _, refused := kafkaio.AuthorizationCode(err); refused {
		return nil
	}
	if err != nil {
		return err
	}
	if !ok {
		policy = "delete" // Kafka's default when the broker reports nothing
	}
	var policies []string
	for p := range strings.SplitSeq(policy, ",") {
		policies = append(policies, strings.TrimSpace(p))
	}
	if !slices.Equal(policies, []string{"compact"}) {
		return fmt.Errorf("topic %q supplied via the %q property has cleanup.policy=%q: Connect requires only compact", topic, property, policy)
	}
	return nil
}

// TopicConfig returns the value of one config of topic; ok is false when the broker reports
// none. A refusal is a *kafkaio.AuthzError naming DescribeConfigs on topic and cl's principal.
func TopicConfig(ctx context.Context, cl *kafka.Client, topic, name string) (value string, ok bool, err error) {
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic,
			ResourceName: topic,
			ConfigNames:  []string{name},
		}},
	})
	if err != nil {
		return "", false, kafkaio.Authz(fmt.Errorf("describe configs of topic %q: %w", topic, err),
			kafkaio.PrincipalOf(cl), kafkaio.OpDescribeConfigs, kafkaio.ResourceTopic, topic)
	}
	for _, r := range res.Resources {
		if r.ResourceName != topic {
			continue
		}
		if r.Error != nil {
			return "", false, kafkaio.Authz(fmt.Errorf("describe configs of topic %q: %w", topic, r.Error),
				kafkaio.PrincipalOf(cl), kafkaio.OpDescribeConfigs, kafkaio.ResourceTopic, topic)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				value, ok = e.ConfigValue, true
			}
		}
	}
	return value, ok, nil
}

// EnsureTopic creates topic with partitions and configs, replication factor min(3, brokers), if
// it does not exist. An existing topic is left as it is.
func EnsureTopic(ctx context.Context, cl *kafka.Client, topic string, partitions int, configs map[string]string) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("ensure topic %q: %w", topic, err)
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
		return fmt.Errorf("create topic %q: %w", topic, kafkaio.Authz(err, kafkaio.PrincipalOf(cl), kafkaio.OpCreate, kafkaio.ResourceTopic, topic))
	}
	return nil
}
