package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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

// advertisement is what the agent of c tells its group and `offsetagent migrate`: the Connect
// cluster it writes (its Kafka cluster's id and Connect topics), its own topics and the
// request sources it accepts.
func advertisement(c Config, clusterID string) events.Advertisement {
	ad := events.Advertisement{KafkaClusterID: clusterID, ConfigTopic: c.ConfigTopic, OffsetsTopic: c.OffsetsTopic,
		RequestTopic: c.RequestTopic, ResultTopic: c.ResultTopic}
	if len(c.AllowedSources) == 0 {
		ad.AnySource = true
	} else {
		ad.AllowedSources = slices.Clone(c.AllowedSources)
	}
	return ad
}

// groupBalancers are kafka-go's default balancers (range, then round robin), advertising the
// agent of c on Kafka cluster clusterID: `offsetagent migrate` checks with them that B's
// agents serve B's Connect cluster, and the agents that their group holds one Connect cluster.
func groupBalancers(c Config, clusterID string) []kafka.GroupBalancer {
	data := advertisement(c, clusterID).Marshal()
	return []kafka.GroupBalancer{
		advertisingBalancer{kafka.RangeGroupBalancer{}, data},
		advertisingBalancer{kafka.RoundRobinGroupBalancer{}, data},
	}
}

// groupCheckTimeout bounds the description of the agent's group at each generation.
const groupCheckTimeout = 10 * time.Second

// checkGroup describes the agent's consumer group at the start of a generation, before any of
// its requests is fetched, and compares what each member advertises with the Connect cluster
// this agent writes. A group whose members write two Connect clusters (B's agent started with
// A's group and request topic, where the defaults lead) shares out one request topic between
// them: a request would be written to whichever cluster its partition's owner writes. While
// that holds, the agent is not ready and refuses every request before any step (process.go);
// members that advertise nothing (agents of earlier versions, other consumers) are not judged.
// When the group cannot be described, the previous verdict stands.
func (a *Agent) checkGroup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, groupCheckTimeout)
	defer cancel()
	own := advertisement(a.cfg, a.clusterID)
	dg, err := a.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{a.cfg.GroupID}})
	if err == nil && len(dg.Groups) != 1 {
		err = fmt.Errorf("%d groups described", len(dg.Groups))
	} else if err == nil {
		err = dg.Groups[0].Error
	}
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("describe the consumer group to check its members' Connect clusters", "group", a.cfg.GroupID, "err", err)
		}
		return
	}
	var others []string
	for _, m := range dg.Groups[0].Members {
		ad, ok := events.ParseAdvertisement(m.MemberMetadata.UserData)
		if !ok || own.SameConnectCluster(ad) {
			continue
		}
		others = append(others, fmt.Sprintf("member %s at %s writes %s", m.MemberID, m.ClientHost, ad.ConnectCluster()))
	}
	slices.Sort(others)
	if len(others) == 0 {
		if a.health.setMixed("") != "" {
			a.log.Info("the consumer group holds the agents of one Connect cluster again: requests are served", "group", a.cfg.GroupID)
		}
		return
	}
	mixed := fmt.Sprintf("consumer group %q mixes two Connect clusters: this agent writes %s; %s. Every request is refused "+
		"until each Connect cluster's agents have a group and a request topic of their own (OFFSETAGENT_GROUP_ID, OFFSETAGENT_REQUEST_TOPIC)",
		a.cfg.GroupID, own.ConnectCluster(), strings.Join(others, "; "))
	a.health.setMixed(mixed)
	a.log.Error("consumer group mixes two Connect clusters: every request is refused", "group", a.cfg.GroupID,
		"writes", own.ConnectCluster(), "others", strings.Join(others, "; "))
}
