package migrate

import "time"

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
// (MM2Sinks is the SinkTranslator that does it).
const SinkOffsetsTranslate SinkOffsetsMode = "translate"

// DefaultCheckpointMaxAge is --checkpoint-max-age's default: well past MM2's
// emit.checkpoints.interval.seconds (default 60) and the offset flush that promotes its latest
// offset sync (offset.flush.interval.ms, default 60 s), so that only MM2 no longer checkpointing
// a group is older.
const DefaultCheckpointMaxAge = 15 * time.Minute
