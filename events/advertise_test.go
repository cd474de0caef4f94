package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An advertisement of an agent of an earlier version (topics only) is read with the later
// fields unknown: its accepted sources are not known, and its Kafka cluster is not compared.
func TestAdvertisementOfEarlierAgents(t *testing.T) {
	old, ok := ParseAdvertisement([]byte(`{"agent":"offsetagent","config_topic":"cfg","offsets_topic":"offs","request_topic":"req","result_topic":"res"}`))
	require.True(t, ok)
	now := Advertisement{KafkaClusterID: "kc", ConfigTopic: "cfg", OffsetsTopic: "offs", RequestTopic: "req", ResultTopic: "res", AnySource: true}
	tests := []struct {
		name           string
		ad             Advertisement
		source         string
		accepts, known bool
	}{
		{name: "earlier agent", ad: old, source: "/s", accepts: false, known: false},
		{name: "any source", ad: now, source: "/s", accepts: true, known: true},
		{name: "listed", ad: Advertisement{AllowedSources: []string{"/s"}}, source: "/s", accepts: true, known: true},
		{name: "not listed", ad: Advertisement{AllowedSources: []string{"/t"}}, source: "/s", accepts: false, known: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepts, known := tt.ad.Accepts(tt.source)
			require.Equal(t, [2]bool{tt.accepts, tt.known}, [2]bool{accepts, known})
		})
	}
	// Round trip, and the comparison of Connect clusters.
	back, ok := ParseAdvertisement(now.Marshal())
	require.True(t, ok)
	now.Agent = AdvertisedAgent
	require.Equal(t, now, back)
	require.True(t, now.SameConnectCluster(old), "an unknown cluster id is not compared")
	other := now
	other.KafkaClusterID = "kc2"
	require.False(t, now.SameConnectCluster(other))
	other = now
	other.ConfigTopic = "cfg2"
	require.False(t, now.SameConnectCluster(other))
	require.Equal(t, `config topic "cfg" and offsets topic "offs" on Kafka cluster "kc"`, now.ConnectCluster())
	require.Equal(t, `config topic "cfg" and offsets topic "offs"`, old.ConnectCluster())
}
