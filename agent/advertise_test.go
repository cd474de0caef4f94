package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// The agent's group protocols keep kafka-go's names (agents of earlier versions share the
// group) and carry its topics in their user data.
func TestGroupBalancersAdvertiseTopics(t *testing.T) {
	bs := groupBalancers(Config{ConfigTopic: "cfg", OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res"})
	require.Len(t, bs, 2)
	require.Equal(t, "range", bs[0].ProtocolName())
	require.Equal(t, "roundrobin", bs[1].ProtocolName())
	for _, b := range bs {
		data, err := b.UserData()
		require.NoError(t, err)
		ad, ok := events.ParseAdvertisement(data)
		require.True(t, ok, "%s", data)
		require.Equal(t, events.Advertisement{Agent: "offsetagent", ConfigTopic: "cfg", OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res"}, ad)
	}
	for _, foreign := range []string{"", "{}", `{"agent":"other"}`, "\x00\x01"} {
		_, ok := events.ParseAdvertisement([]byte(foreign))
		require.False(t, ok, "%q", foreign)
	}
}
