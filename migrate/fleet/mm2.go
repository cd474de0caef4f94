package fleet

import (
	"log/slog"
	"time"

	"github.com/offsetagent/offsetagent/mm2"
)

// SinkOffsetsMode says what happens to a sink connector's offsets.
type SinkOffsetsMode string

// Sink offset modes.
const (
	// SinkOffsetsCopy carries sink offsets as they are: right when A and B share a Kafka
	// cluster or an offset-preserving link.
	SinkOffsetsCopy SinkOffsetsMode = "copy"
	// SinkOffsetsNone creates sinks without initial_offsets.
	SinkOffsetsNone SinkOffsetsMode = "none"
)

// SinkOffsetsTranslate translates sink offsets through MirrorMaker 2's checkpoints on B
// (with MM2's settings).
const SinkOffsetsTranslate SinkOffsetsMode = "translate"

// DefaultCheckpointMaxAge is --checkpoint-max-age's default: well past MM2's
// emit.checkpoints.interval.seconds (default 60) and the offset flush that promotes its latest
// offset sync (offset.flush.interval.ms, default 60 s), so that only MM2 no longer checkpointing
// a group is older.
const DefaultCheckpointMaxAge = 15 * time.Minute

// MM2 are MirrorMaker 2's settings for --sink-offsets translate: each sink's group offsets on
// A go through MM2's checkpoints on B, its topics are renamed by MM2's replication policy in
// the offsets and the config, and a partition that is not exact fails the connector unless
// AllowReplay is set. Data only: the stages that read them do the work.
type MM2 struct {
	Translator *mm2.Translator
	// Policy is the translator's policy: it renames `topics` and `topics.regex`.
	Policy mm2.Policy
	// AllowReplay accepts replay and missing partitions (--allow-replay): a missing one gets
	// no offset, so the sink starts it at the earliest record of B's topic.
	AllowReplay bool
	// Logger receives a warning per connector accepted with replay or missing partitions;
	// nil discards them.
	Logger *slog.Logger
	// CheckpointMaxAge is --checkpoint-max-age: a group whose newest checkpoint is older than
	// this, while A's commits are ahead of it, is one MM2 no longer checkpoints (mm2health.go);
	// 0 skips that check.
	CheckpointMaxAge time.Duration
	// ConfigTopics are the topics on B where MM2's connector configs are read (--mm2-config-topic);
	// none means B's Connect config topic, mm2.DedicatedConfigTopic and mm2.StrimziConfigTopic.
	ConfigTopics []string
}
