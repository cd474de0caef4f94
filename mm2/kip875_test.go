package mm2

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

func TestSinkPartitions(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[TopicPartition]int64
		err  string
	}{
		{name: "sink offsets", in: `{"offsets":[{"partition":{"kafka_partition":3,"kafka_topic":"orders"},"offset":{"kafka_offset":1000}},
			{"partition":{"kafka_topic":"payments","kafka_partition":0},"offset":{"kafka_offset":0}},
			{"partition":{"kafka_topic":"refunds","kafka_partition":1},"offset":null}]}`,
			want: map[TopicPartition]int64{{"orders", 3}: 1000, {"payments", 0}: 0}},
		{name: "no topic", in: `{"offsets":[{"partition":{"kafka_partition":3},"offset":{"kafka_offset":1}}]}`, err: "must contain the keys 'kafka_topic' and 'kafka_partition'"},
		{name: "negative offset", in: `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":3},"offset":{"kafka_offset":-1}}]}`,
			err: "t-3: invalid negative offset -1"},
		{name: "partition too large", in: `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":4294967296},"offset":{"kafka_offset":1}}]}`,
			err: "Failed to parse the following Kafka partition value in the provided offsets: '4294967296'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var co events.ConnectorOffsets
			require.NoError(t, json.Unmarshal([]byte(tt.in), &co))
			got, err := SinkPartitions(co.Offsets)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConnectorOffsets(t *testing.T) {
	tr := Translation{Partitions: []PartitionTranslation{
		{Target: TopicPartition{"A.orders", 1}, Verdict: VerdictReplay, Offset: 21},
		{Target: TopicPartition{"A.orders", 0}, Verdict: VerdictExact, Offset: 35},
		{Target: TopicPartition{"A.orders", 2}, Verdict: VerdictMissing},
	}}
	b, err := json.Marshal(events.ConnectorOffsets{Offsets: tr.ConnectorOffsets()})
	require.NoError(t, err)
	require.JSONEq(t, `{"offsets":[
		{"partition":{"kafka_partition":0,"kafka_topic":"A.orders"},"offset":{"kafka_offset":35}},
		{"partition":{"kafka_partition":1,"kafka_topic":"A.orders"},"offset":{"kafka_offset":21}}]}`, string(b))
}
