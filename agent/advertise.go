package agent

import (
	"encoding/json"

	"github.com/segmentio/kafka-go"
)

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

// ParseAdvertisement reads a group member's user data; ok is false when it is not an agent's.
func ParseAdvertisement(userData []byte) (Advertisement, bool) {
	var a Advertisement
	if len(userData) == 0 || json.Unmarshal(userData, &a) != nil || a.Agent != AdvertisedAgent {
		return Advertisement{}, false
	}
	return a, true
}

// advertisingBalancer is a group balancer that assigns as its embedded one does (same
// protocol name, so agents of earlier versions share the group) and sends the agent's
// Advertisement as its user data, which the range and round-robin balancers ignore.
type advertisingBalancer struct {
	kafka.GroupBalancer
	userData []byte
}

func (b advertisingBalancer) UserData() ([]byte, error) { return b.userData, nil }

// groupBalancers are kafka-go's default balancers (range, then round robin), advertising c.
func groupBalancers(c Config) []kafka.GroupBalancer {
	data, _ := json.Marshal(Advertisement{Agent: AdvertisedAgent, ConfigTopic: c.ConfigTopic, OffsetsTopic: c.OffsetsTopic,
		RequestTopic: c.RequestTopic, ResultTopic: c.ResultTopic}) // strings only: it cannot fail
	return []kafka.GroupBalancer{
		advertisingBalancer{kafka.RangeGroupBalancer{}, data},
		advertisingBalancer{kafka.RoundRobinGroupBalancer{}, data},
	}
}
