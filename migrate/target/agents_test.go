package target

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

type userDataBalancer struct {
	kafka.GroupBalancer
	data []byte
}

func (b userDataBalancer) UserData() ([]byte, error) { return b.data, nil }

// What B's agents advertise decides the agent check: agents of an earlier version, which
// advertise their topics only, are taken on their topics with a warning that their sources
// are unknown; agents that list their sources are refused or taken on them.
func TestCheckAgentsAdvertisements(t *testing.T) {
	brokers := kafkatest.Kfake(t).ListenAddrs()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	const source = fleet.RequestSourcePrefix + "m-1"
	tests := []struct {
		name     string
		userData string // with %[1]q the request topic
		warning  string
		refusal  string
	}{
		{name: "earlier agent", userData: `{"agent":"offsetagent","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res"}`,
			warning: `cannot tell whether B's agents accept the requests' source "/offsetagent/migrate/m-1"`},
		{name: "every source", userData: `{"agent":"offsetagent","kafka_cluster_id":"kfake","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res","any_source":true}`},
		{name: "source listed", userData: `{"agent":"offsetagent","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res","allowed_sources":["/x","/offsetagent/migrate/m-1"]}`},
		{name: "source not listed", userData: `{"agent":"offsetagent","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res","allowed_sources":["/x"]}`,
			refusal: `B's agents refuse the requests of this run, which have source "/offsetagent/migrate/m-1": their OFFSETAGENT_ALLOWED_SOURCES does not list it (group "g-3" accepts ["/x"])`},
		{name: "another result topic", userData: `{"agent":"offsetagent","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res-2","any_source":true}`,
			refusal: `B's agents publish their results to another topic than "res", the one this run reads (ResultTopic, else OFFSETAGENT_RESULT_TOPIC): group "g-4" publishes to "res-2"`},
		{name: "another Kafka cluster", userData: `{"agent":"offsetagent","kafka_cluster_id":"other","config_topic":"cfg","offsets_topic":"offs","request_topic":%[1]q,"result_topic":"res","any_source":true}`,
			refusal: `serve another Connect cluster (group "g-5" writes config topic "cfg" and offsets topic "offs" on Kafka cluster "other"), not B's config topic "cfg" and offsets topic "offs" on Kafka cluster "kfake" (ToBrokers)`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			topic := fmt.Sprintf("requests-%d", i)
			_, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}})
			require.NoError(t, err)
			cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: fmt.Sprintf("g-%d", i), Brokers: brokers, Topics: []string{topic},
				GroupBalancers: []kafka.GroupBalancer{userDataBalancer{kafka.RangeGroupBalancer{}, []byte(fmt.Sprintf(tt.userData, topic))}},
				Timeout:        10 * time.Second})
			require.NoError(t, err)
			defer cg.Close()
			_, err = cg.Next(ctx)
			require.NoError(t, err)
			_, ok := events.ParseAdvertisement([]byte(fmt.Sprintf(tt.userData, topic)))
			require.True(t, ok)

			to := Target{Brokers: brokers, RequestTopic: topic, ResultTopic: "res", ConfigTopic: "cfg", OffsetsTopic: "offs"}
			warnings, err := checkAgents(ctx, cl, to, "kfake", source, true)
			if tt.refusal != "" {
				require.ErrorIs(t, err, fleet.ErrPrecheck)
				require.ErrorContains(t, err, tt.refusal)
				return
			}
			require.NoError(t, err)
			if tt.warning == "" {
				require.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				require.Contains(t, warnings[0].String(), tt.warning)
			}
		})
	}
}
