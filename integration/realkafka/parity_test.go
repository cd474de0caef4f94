package realkafka_test

import (
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// The byte parity proofs run on every Kafka version the tier covers: their bodies are in
// package tier.

// TestOffsetsRecordsByteParity: for every connector family of the registry, the records
// offsetagent writes to the offsets topic are the records Connect's own PATCH
// /connectors/NAME/offsets writes for the same offsets (tier.OffsetsRecordsByteParity).
func TestOffsetsRecordsByteParity(t *testing.T) { tier.OffsetsRecordsByteParity(t, env) }

// TestConfigRecordsParity: the config records offsetagent writes for a new connector are the
// ones Connect's own POST /connectors writes, in each initial state (tier.ConfigRecordsParity).
func TestConfigRecordsParity(t *testing.T) { tier.ConfigRecordsParity(t, env) }

// TestSinkOffsetsParity: the consumer group offsets offsetagent commits for a sink connector are
// the ones Connect's own PATCH commits (tier.SinkOffsetsParity).
func TestSinkOffsetsParity(t *testing.T) { tier.SinkOffsetsParity(t, env) }
