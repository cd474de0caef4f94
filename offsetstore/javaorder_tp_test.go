package offsetstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJavaTopicPartitionOrder holds the order to what a JVM prints for a
// HashMap<TopicPartition, Long> filled in topic-and-partition order (kafka-clients 4.3.1's
// TopicPartition, OpenJDK 17): the order Connect lists a sink connector's offsets in.
func TestJavaTopicPartitionOrder(t *testing.T) {
	tests := []struct {
		topics []string
		n      int32
		want   string
	}{
		{[]string{"orders"}, 2, "orders-0 orders-1"},
		{[]string{"sim-topic-1a2b"}, 2, "sim-topic-1a2b-0 sim-topic-1a2b-1"},
		{[]string{"a"}, 20, "a-2 a-1 a-0 a-19 a-18 a-17 a-16 a-15 a-14 a-13 a-12 a-11 a-10 a-9 a-8 a-7 a-6 a-5 a-4 a-3"},
		{[]string{"x.y"}, 3, "x.y-1 x.y-2 x.y-0"},
		{[]string{"orders", "t1", "zz"}, 3, "zz-1 zz-0 orders-0 orders-1 orders-2 t1-2 t1-1 t1-0 zz-2"},
	}
	for _, tt := range tests {
		var o []GroupOffset
		for _, topic := range tt.topics {
			for p := range tt.n {
				o = append(o, GroupOffset{Topic: topic, Partition: p})
			}
		}
		JavaTopicPartitionOrder(o)
		var got []string
		for _, g := range o {
			got = append(got, fmt.Sprintf("%s-%d", g.Topic, g.Partition))
		}
		require.Equal(t, tt.want, strings.Join(got, " "), "%v", tt.topics)
	}
}
