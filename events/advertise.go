package events

import "encoding/json"

// AdvertisedAgent is the value of Advertisement's "agent" field.
const AdvertisedAgent = "offsetagent"

// Advertisement is what every agent puts in the user data of its consumer group membership
// (the group protocol metadata each member sends with JoinGroup, which DescribeGroups shows
// to anyone allowed to describe the group): the topics it reads and writes. `offsetagent
// migrate` reads it to check, before publishing, that an agent consumes B's request topic and
// writes B's Connect topics, and not another Connect cluster's on the same Kafka cluster.
type Advertisement struct {
	Agent        string `json:"agent"`
	ConfigTopic  string `json:"config_topic"`
	OffsetsTopic string `json:"offsets_topic"`
	RequestTopic string `json:"request_topic"`
	ResultTopic  string `json:"result_topic"`
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
