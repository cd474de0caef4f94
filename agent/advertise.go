package agent

import (
	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
)

// advertisingBalancer is a group balancer that assigns as its embedded one does (same
// protocol name, so agents of earlier versions share the group) and sends the agent's
// events.Advertisement as its user data, which the range and round-robin balancers ignore.
type advertisingBalancer struct {
	kafka.GroupBalancer
	userData []byte
}

func (b advertisingBalancer) UserData() ([]byte, error) { return b.userData, nil }

// groupBalancers are kafka-go's default balancers (range, then round robin), advertising the
// topics of c: `offsetagent migrate` checks with them that B's agents serve B's Connect topics.
func groupBalancers(c Config) []kafka.GroupBalancer {
	data := events.Advertisement{ConfigTopic: c.ConfigTopic, OffsetsTopic: c.OffsetsTopic,
		RequestTopic: c.RequestTopic, ResultTopic: c.ResultTopic}.Marshal()
	return []kafka.GroupBalancer{
		advertisingBalancer{kafka.RangeGroupBalancer{}, data},
		advertisingBalancer{kafka.RoundRobinGroupBalancer{}, data},
	}
}
