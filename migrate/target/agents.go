package target

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// groupsPerDescribe bounds the group ids of one DescribeGroups request.
const groupsPerDescribe = 100

// agentOnB is one member of a consumer group on B that consumes B's request topic and
// advertises itself as an agent (events.Advertisement).
type agentOnB struct {
	group string
	ad    events.Advertisement
}

// agentsOnB is what B's consumer groups say about the consumers of B's request topic.
type agentsOnB struct {
	// serving: members that advertise B's Connect cluster; elsewhere: members that advertise
	// another one (other Connect topics, or B's topic names on another Kafka cluster);
	// unknown: groups with members on the request topic that advertise nothing (agents older
	// than the advertisement, or other consumers).
	serving, elsewhere []agentOnB
	unknown            []string
}

// findAgents lists B's groups and describes them: which have members subscribed to the
// request topic, and what Connect cluster those members advertise (events.Advertisement),
// compared with B's: Kafka cluster clusterB and to's Connect topics.
func findAgents(ctx context.Context, cl *kafka.Client, to Target, clusterB string) (agentsOnB, error) {
	var found agentsOnB
	b := events.Advertisement{KafkaClusterID: clusterB, ConfigTopic: to.ConfigTopic, OffsetsTopic: to.OffsetsTopic}
	lg, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err == nil && lg.Error != nil {
		err = lg.Error
	}
	if err != nil {
		return found, fmt.Errorf("list B's consumer groups: %w", err)
	}
	ids := make([]string, 0, len(lg.Groups))
	for _, g := range lg.Groups {
		ids = append(ids, g.GroupID)
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, groupsPerDescribe) {
		dg, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: chunk})
		if err != nil {
			return found, fmt.Errorf("describe B's consumer groups: %w", err)
		}
		for _, g := range dg.Groups {
			// A group kafka-go cannot decode (not a consumer group: Connect's workers, say)
			// has an error and no members.
			consumes, advertised := false, false
			for _, m := range g.Members {
				if !slices.Contains(m.MemberMetadata.Topics, to.RequestTopic) {
					continue
				}
				consumes = true
				ad, ok := events.ParseAdvertisement(m.MemberMetadata.UserData)
				if !ok {
					continue
				}
				advertised = true
				if b.SameConnectCluster(ad) {
					found.serving = append(found.serving, agentOnB{g.GroupID, ad})
				} else {
					found.elsewhere = append(found.elsewhere, agentOnB{g.GroupID, ad})
				}
			}
			if consumes && !advertised {
				found.unknown = append(found.unknown, g.GroupID)
			}
		}
	}
	return found, nil
}

// checkAgents refuses a migration that B's agents would not carry out as asked, before
// anything is stopped on A: an agent consuming B's request topic writes another Connect
// cluster (B on A's Kafka cluster with the default request topic reaches A's agents, and
// B's agent started with A's group shares A's request topic out with them), B's agents
// publish their results to another topic than the one migrate reads (to.ResultTopic), or
// refuse the requests' source (OFFSETAGENT_ALLOWED_SOURCES); with requireAgent, no agent
// consumes the request topic at all. It returns warnings for what it cannot tell (agents of
// an earlier version advertise less).
func checkAgents(ctx context.Context, cl *kafka.Client, to Target, clusterB, source string, requireAgent bool) (warnings []fleet.Text, err error) {
	found, err := findAgents(ctx, cl, to, clusterB)
	if err != nil {
		return nil, fleet.Precheckf("%v", err)
	}
	if len(found.elsewhere) > 0 {
		return nil, elsewhereError(found, to, clusterB)
	}
	if len(found.serving) > 0 {
		return servingChecks(found.serving, to, source)
	}
	if len(found.unknown) > 0 {
		return []fleet.Text{fleet.Textf("cannot tell which Connect topics the consumers of B's request topic %q write (group %s advertises none: "+
			"an agent older than this command?); make sure they write config topic %q and offsets topic %q",
			to.RequestTopic, strings.Join(found.unknown, ", "), to.ConfigTopic, to.OffsetsTopic)}, nil
	}
	if to.AgentGroup != "" {
		// Kafka lists only the groups the principal may Describe: a refusal of the agents'
		// group, not their absence, may be why none was found.
		dg, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{to.AgentGroup}})
		if err == nil && len(dg.Groups) == 1 {
			err = dg.Groups[0].Error
		}
		if _, refused := kafkaio.AuthorizationCode(err); refused {
			return nil, fleet.Precheckf("cannot see B's agents: %v (the agent check: Kafka lists only the consumer groups the principal may Describe)",
				&kafkaio.AuthzError{Principal: to.Principal, Operation: kafkaio.OpDescribe, ResourceType: kafkaio.ResourceGroup,
					Resource: to.AgentGroup, Code: kafka.GroupAuthorizationFailed})
		}
	}
	msg := fleet.Textf("no agent consumes B's request topic %q now (no consumer group on B has a member subscribed to it): "+
		"start one against B (OFFSETAGENT_BROKERS=%s, OFFSETAGENT_REQUEST_TOPIC=%s, OFFSETAGENT_CONFIG_TOPIC=%s, "+
		"OFFSETAGENT_OFFSETS_TOPIC=%s), or give the %s its agents consume",
		to.RequestTopic, strings.Join(to.Brokers, ","), to.RequestTopic, to.ConfigTopic, to.OffsetsTopic, fleet.RequestTopic)
	if requireAgent {
		return nil, fleet.Precheckf("%v; %s publishes anyway, and the requests wait for an agent until %s", msg, fleet.AllowNoAgent, fleet.Timeout)
	}
	return []fleet.Text{msg.Append("; the requests wait for an agent until %s", fleet.Timeout)}, nil
}

// elsewhereError is the refusal of agents on B's request topic that write another Connect
// cluster than B's, naming both: whichever of them owns a request's partition would write it.
func elsewhereError(found agentsOnB, to Target, clusterB string) error {
	var groups []string
	otherKafka := false
	for _, a := range found.elsewhere {
		// The Kafka cluster is named where it is what differs.
		ad := a.ad
		if ad.KafkaClusterID == clusterB {
			ad.KafkaClusterID = ""
		} else if ad.KafkaClusterID != "" {
			otherKafka = true
		}
		if g := fmt.Sprintf("group %q writes %s", a.group, ad.ConnectCluster()); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	b := fleet.Textf("config topic %q and offsets topic %q", to.ConfigTopic, to.OffsetsTopic)
	if otherKafka {
		b = b.Append(" on Kafka cluster %q (%s)", clusterB, fleet.ToBrokers)
	}
	var mixed []string
	for _, a := range found.serving {
		if slices.ContainsFunc(found.elsewhere, func(e agentOnB) bool { return e.group == a.group }) && !slices.Contains(mixed, a.group) {
			mixed = append(mixed, a.group)
		}
	}
	msg := fleet.Textf("the agents consuming B's request topic %q serve another Connect cluster (%s), not B's %v: "+
		"give %s and %s of the agents running for B's Connect cluster, "+
		"or %s and %s if those are B's", to.RequestTopic, strings.Join(groups, "; "), b,
		fleet.RequestTopic, fleet.ResultTopic, fleet.ToConfigTopic, fleet.ToOffsetsTopic)
	if len(mixed) > 0 {
		slices.Sort(mixed)
		msg = msg.Append("; group %s also holds agents of B's Connect cluster: a request would be written to whichever Connect cluster "+
			"its partition's owner writes, and the agents refuse every request while their group mixes two. A group and a request topic "+
			"must serve one Connect cluster only: give B's agents their own OFFSETAGENT_GROUP_ID and OFFSETAGENT_REQUEST_TOPIC",
			strings.Join(quoteAll(mixed), ", "))
	}
	return fleet.Precheckf("%v", msg)
}

// servingChecks refuses agents of B's Connect cluster that would not answer the run: results
// published to another topic than to.ResultTopic (the run would wait for them until
// --timeout), or source not among the sources they accept (every request would fail).
func servingChecks(serving []agentOnB, to Target, source string) (warnings []fleet.Text, err error) {
	var results, refusing, unknown []string
	for _, a := range serving {
		if a.ad.ResultTopic != "" && a.ad.ResultTopic != to.ResultTopic {
			if r := fmt.Sprintf("group %q publishes to %q", a.group, a.ad.ResultTopic); !slices.Contains(results, r) {
				results = append(results, r)
			}
		}
		switch accepts, known := a.ad.Accepts(source); {
		case !known:
			if !slices.Contains(unknown, a.group) {
				unknown = append(unknown, a.group)
			}
		case !accepts:
			if r := fmt.Sprintf("group %q accepts %q", a.group, a.ad.AllowedSources); !slices.Contains(refusing, r) {
				refusing = append(refusing, r)
			}
		}
	}
	var errs []any
	if len(results) > 0 {
		slices.Sort(results)
		errs = append(errs, fleet.Textf("B's agents publish their results to another topic than %q, the one this run reads "+
			"(%s, else OFFSETAGENT_RESULT_TOPIC): %s; the run would wait for results until %s: give %s "+
			"as B's agents' OFFSETAGENT_RESULT_TOPIC", to.ResultTopic, fleet.ResultTopic, strings.Join(results, ", "), fleet.Timeout, fleet.ResultTopic))
	}
	if len(refusing) > 0 {
		slices.Sort(refusing)
		errs = append(errs, fleet.Textf("B's agents refuse the requests of this run, which have source %q: their OFFSETAGENT_ALLOWED_SOURCES "+
			"does not list it (%s); add %q to it, or give %s ID where %sID is listed", source, strings.Join(refusing, "; "),
			source, fleet.MigrationID, fleet.RequestSourcePrefix))
	}
	if len(errs) > 0 {
		return nil, fleet.Precheckf(strings.TrimSuffix(strings.Repeat("%v; ", len(errs)), "; "), errs...)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return []fleet.Text{fleet.Textf("cannot tell whether B's agents accept the requests' source %q (group %s advertises no allowed sources: "+
			"an agent older than this command?); make sure their OFFSETAGENT_ALLOWED_SOURCES is empty or lists it",
			source, strings.Join(quoteAll(unknown), ", "))}, nil
	}
	return nil, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
