package mm2

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// policyGoldens is testdata/replication-policy-goldens.json, printed by MirrorMaker 2's own
// DefaultReplicationPolicy (tools/oracle/PolicyOracle.java, make goldens; integration/realkafka's
// TestGoldens runs it on the real tier and compares).
type policyGoldens struct {
	KafkaVersion string       `json:"kafka_version"`
	Cases        []policyCase `json:"cases"`
}

type policyCase struct {
	Separator     string  `json:"separator"`
	Topic         string  `json:"topic"`
	TopicSource   *string `json:"topic_source"`
	UpstreamTopic *string `json:"upstream_topic"`
	OriginalTopic string  `json:"original_topic"`
	FormatRemote  string  `json:"format_remote"`
	Renamed       string  `json:"renamed"`
}

// optional turns (value, ok) into Java's nullable String.
func optional(s string, ok bool) *string {
	if !ok {
		return nil
	}
	return &s
}

// The default policy names topics exactly as DefaultReplicationPolicy does, including names
// with empty segments ("B.", "B..orders", "B.orders.", ".orders"), where Java's split drops
// trailing empty strings but keeps a leading one.
func TestGoldenReplicationPolicy(t *testing.T) {
	b, err := os.ReadFile("testdata/replication-policy-goldens.json")
	require.NoError(t, err)
	var g policyGoldens
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Cases)
	for _, c := range g.Cases {
		t.Run(c.Separator+" "+c.Topic, func(t *testing.T) {
			p := Policy{SourceAlias: "A", Separator: c.Separator}
			require.Equal(t, c.TopicSource, optional(p.defaultTopicSource(c.Topic)), "topicSource")
			require.Equal(t, c.UpstreamTopic, optional(p.upstreamTopic(c.Topic)), "upstreamTopic")
			require.Equal(t, c.OriginalTopic, p.originalTopic(c.Topic), "originalTopic")
			require.Equal(t, c.FormatRemote, p.RemoteTopic(c.Topic), "formatRemoteTopic")
			p.TargetAlias = "B"
			require.Equal(t, c.Renamed, p.RemoteTopic(c.Topic), "renameTopicPartition")
		})
	}
}
