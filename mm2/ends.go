package mm2

import (
	"context"
	"errors"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// TargetEnds returns the end offset (the last stable offset) of every partition of topic on
// the target cluster, indexed by partition; nil, with no error, when the topic does not exist
// there. The metadata request does not create the topic.
func (t *Translator) TargetEnds(ctx context.Context, topic string) ([]int64, error) {
	n, err := kafkaio.PartitionCount(ctx, t.target, topic)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return kafkaio.ListOffsets(ctx, t.target, topic, n, kafka.LastOffset)
}
