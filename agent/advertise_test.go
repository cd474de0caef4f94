package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// The agent's group protocols keep kafka-go's names (agents of earlier versions share the
// group) and carry its Connect cluster, topics and accepted sources in their user data.
func TestGroupBalancersAdvertiseTopics(t *testing.T) {
	cfg := Config{ConfigTopic: "cfg", OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res"}
	tests := []struct {
		name    string
		sources []string
		want    events.Advertisement
	}{
		{name: "every source", want: events.Advertisement{Agent: "offsetagent", KafkaClusterID: "kc", ConfigTopic: "cfg",
			OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res", AnySource: true}},
		{name: "allowed sources", sources: []string{"/a", "/b"}, want: events.Advertisement{Agent: "offsetagent", KafkaClusterID: "kc",
			ConfigTopic: "cfg", OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res", AllowedSources: []string{"/a", "/b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			c.AllowedSources = tt.sources
			bs := groupBalancers(c, "kc")
			require.Len(t, bs, 2)
			require.Equal(t, "range", bs[0].ProtocolName())
			require.Equal(t, "roundrobin", bs[1].ProtocolName())
			for _, b := range bs {
				data, err := b.UserData()
				require.NoError(t, err)
				ad, ok := events.ParseAdvertisement(data)
				require.True(t, ok, "%s", data)
				require.Equal(t, tt.want, ad)
			}
		})
	}
	for _, foreign := range []string{"", "{}", `{"agent":"other"}`, "\x00\x01"} {
		_, ok := events.ParseAdvertisement([]byte(foreign))
		require.False(t, ok, "%q", foreign)
	}
}
