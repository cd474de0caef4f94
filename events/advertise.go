package events

import (
	"encoding/json"
	"fmt"
	"slices"
)

// AdvertisedAgent is the value of Advertisement's "agent" field.
const AdvertisedAgent = "offsetagent"

// Advertisement is what every agent puts in the user data of its consumer group membership
// (the group protocol metadata each member sends with JoinGroup, which DescribeGroups shows
// to anyone allowed to describe the group): the Connect cluster it writes, the topics it reads
// and writes and the request sources it accepts. `offsetagent migrate` reads it to check,
// before anything is stopped or published, that the agents consuming B's request topic write
// B's Connect cluster (and not another Connect cluster's topics on the same Kafka cluster),
// publish to the result topic it reads and accept its requests' source; agents read it to
// refuse a group that mixes two Connect clusters.
//
// Fields were added over versions; an agent of an earlier version leaves the later ones out,
// and a reader takes a missing field for "unknown", never for a value.
type Advertisement struct {
	Agent string `json:"agent"`
	// KafkaClusterID is the cluster id of the brokers that hold ConfigTopic and OffsetsTopic
	// ("" from agents before it was advertised).
	KafkaClusterID string `json:"kafka_cluster_id,omitempty"`
	ConfigTopic    string `json:"config_topic"`
	OffsetsTopic   string `json:"offsets_topic"`
	RequestTopic   string `json:"request_topic"`
	ResultTopic    string `json:"result_topic"`
	// AllowedSources are the request sources the agent accepts (OFFSETAGENT_ALLOWED_SOURCES)
	// and AnySource says that it accepts every source (the variable is empty). Neither is set
	// by agents before they were advertised: what those accept is unknown.
	AllowedSources []string `json:"allowed_sources,omitempty"`
	AnySource      bool     `json:"any_source,omitempty"`
}

// Marshal encodes the advertisement as a member's user data.
func (a Advertisement) Marshal() []byte {
	a.Agent = AdvertisedAgent
	b, _ := json.Marshal(a) // strings only: it cannot fail
	return b
}

// ParseAdvertisement reads a group member's user data; ok is false when it is not an agent's.
func ParseAdvertisement(userData []byte) (Advertisement, bool) {
	var a Advertisement
	if len(userData) == 0 || json.Unmarshal(userData, &a) != nil || a.Agent != AdvertisedAgent {
		return Advertisement{}, false
	}
	return a, true
}

// Accepts reports whether the agent takes requests from source; known is false when the
// advertisement does not say (an agent of an earlier version).
func (a Advertisement) Accepts(source string) (accepts, known bool) {
	switch {
	case a.AnySource:
		return true, true
	case a.AllowedSources == nil:
		return false, false
	default:
		return slices.Contains(a.AllowedSources, source), true
	}
}

// SameConnectCluster reports whether a and b write the same Connect cluster: the same config
// and offsets topics on the same Kafka cluster. A cluster id that one of them does not
// advertise is not compared.
func (a Advertisement) SameConnectCluster(b Advertisement) bool {
	return a.ConfigTopic == b.ConfigTopic && a.OffsetsTopic == b.OffsetsTopic &&
		(a.KafkaClusterID == "" || b.KafkaClusterID == "" || a.KafkaClusterID == b.KafkaClusterID)
}

// ConnectCluster names the Connect cluster the agent writes, for messages.
func (a Advertisement) ConnectCluster() string {
	s := fmt.Sprintf("config topic %q and offsets topic %q", a.ConfigTopic, a.OffsetsTopic)
	if a.KafkaClusterID != "" {
		s += fmt.Sprintf(" on Kafka cluster %q", a.KafkaClusterID)
	}
	return s
}
