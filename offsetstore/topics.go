package offsetstore

import (
	"context"
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
)

// Connect's worker property names, quoted in its own error message (docs/connect-internals.md, "Config topic requirements").
const (
	configStorageTopicProperty = "config.storage.topic"
	offsetStorageTopicProperty = "offset.storage.topic"
)

// CheckConnectTopics verifies the config topic exists with exactly one partition and
// cleanup.policy=compact, and the offsets topic exists and is compact, as a Connect worker does
// on start. With create, it first creates the missing ones as Connect would (config: 1 partition,
// offsets: 25, compact, replication factor min(3, brokers): kafkaio.EnsureTopic). A refusal is
// the *kafkaio.AuthzError of the request refused.
func CheckConnectTopics(ctx context.Context, cl *kafka.Client, configTopic, offsetsTopic string, create bool) error {
	if create {
		compact := map[string]string{"cleanup.policy": "compact"}
		if err := kafkaio.EnsureTopic(ctx, cl, configTopic, configTopicPartitions, compact); err != nil {
			return err
		}
		if err := kafkaio.EnsureTopic(ctx, cl, offsetsTopic, offsetsTopicPartitions, compact); err != nil {
			return err
		}
	}
	n, err := kafkaio.PartitionCount(ctx, cl, configTopic)
	if err != nil {
		return fmt.Errorf("check config topic: %w", err)
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
		return fmt.Errorf("check offsets topic: %w", err)
	}
	return checkCompact(ctx, cl, offsetsTopic, offsetStorageTopicProperty)
}

// checkCompact fails unless topic's cleanup.policy is exactly compact
// (TopicAdmin.verifyTopicCleanupPolicyOnlyCompact). A principal without DescribeConfigs on the
// topic skips the check, as Connect's TopicAdmin does (it cannot verify the policy and goes
// on): DescribeConfigs is an optional ACL.
func checkCompact(ctx context.Context, cl *kafka.Client, topic, property string) error {
	policy, ok, err := kafkaio.TopicConfig(ctx, cl, topic, "cleanup.policy")
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
