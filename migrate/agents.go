package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// groupsPerDescribe bounds the group ids of one DescribeGroups request.
const groupsPerDescribe = 100

// agentsOnB is what B's consumer groups say about the consumers of B's request topic.
type agentsOnB struct {
	// serving: groups whose agents advertise B's Connect topics; elsewhere: the Connect
	// topics other agents on the request topic advertise, by group; unknown: groups with
	// members on the request topic that advertise nothing (agents older than the
	// advertisement, or other consumers).
	serving, unknown []string
	elsewhere        map[string]events.Advertisement
}

// findAgents lists B's groups and describes them: which have members subscribed to the
// request topic, and what Connect topics those members advertise (events.Advertisement).
func findAgents(ctx context.Context, cl *kafka.Client, to Target) (agentsOnB, error) {
	found := agentsOnB{elsewhere: map[string]events.Advertisement{}}
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
			var ads []events.Advertisement
			consumes, advertised := false, false
			for _, m := range g.Members {
				if !slices.Contains(m.MemberMetadata.Topics, to.RequestTopic) {
					continue
				}
				consumes = true
				if ad, ok := events.ParseAdvertisement(m.MemberMetadata.UserData); ok {
					advertised = true
					ads = append(ads, ad)
				}
			}
			switch {
			case !consumes:
			case !advertised:
				found.unknown = append(found.unknown, g.GroupID)
			case slices.ContainsFunc(ads, func(a events.Advertisement) bool {
				return a.ConfigTopic == to.ConfigTopic && a.OffsetsTopic == to.OffsetsTopic
			}):
				found.serving = append(found.serving, g.GroupID)
			default:
				found.elsewhere[g.GroupID] = ads[0]
			}
		}
	}
	return found, nil
}

// checkAgents refuses a migration whose requests no agent of B's Connect cluster would take:
// the only agents consuming B's request topic write other Connect topics (B on A's Kafka
// cluster with the default request topic reaches A's agents), or, with requireAgent, no
// agent consumes it at all. It returns a warning when it cannot tell.
func checkAgents(ctx context.Context, cl *kafka.Client, to Target, requireAgent bool) (warning string, err error) {
	found, err := findAgents(ctx, cl, to)
	if err != nil {
		return "", precheckf("%v", err)
	}
	if len(found.serving) > 0 {
		return "", nil
	}
	if len(found.elsewhere) > 0 && len(found.unknown) == 0 {
		var groups []string
		for g, ad := range found.elsewhere {
			groups = append(groups, fmt.Sprintf("group %q writes config topic %q and offsets topic %q", g, ad.ConfigTopic, ad.OffsetsTopic))
		}
		slices.Sort(groups)
		return "", precheckf("the agents consuming B's request topic %q serve another Connect cluster (%s), not B's config topic %q "+
			"and offsets topic %q: give --request-topic and --result-topic of the agents running for B's Connect cluster, "+
			"or --to-config-topic and --to-offsets-topic if those are B's", to.RequestTopic, strings.Join(groups, "; "),
			to.ConfigTopic, to.OffsetsTopic)
	}
	if len(found.unknown) > 0 {
		return fmt.Sprintf("cannot tell which Connect topics the consumers of B's request topic %q write (group %s advertises none: "+
			"an agent older than this command?); make sure they write config topic %q and offsets topic %q",
			to.RequestTopic, strings.Join(found.unknown, ", "), to.ConfigTopic, to.OffsetsTopic), nil
	}
	if to.AgentGroup != "" {
		// Kafka lists only the groups the principal may Describe: a refusal of the agents'
		// group, not their absence, may be why none was found.
		dg, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{to.AgentGroup}})
		if err == nil && len(dg.Groups) == 1 {
			err = dg.Groups[0].Error
		}
		if _, refused := kafkaio.AuthorizationCode(err); refused {
			return "", precheckf("cannot see B's agents: %v (the agent check: Kafka lists only the consumer groups the principal may Describe)",
				&kafkaio.AuthzError{Principal: to.Principal, Operation: kafkaio.OpDescribe, ResourceType: kafkaio.ResourceGroup,
					Resource: to.AgentGroup, Code: kafka.GroupAuthorizationFailed})
		}
	}
	msg := fmt.Sprintf("no agent consumes B's request topic %q now (no consumer group on B has a member subscribed to it): "+
		"start one against B (OFFSETAGENT_BROKERS=%s, OFFSETAGENT_REQUEST_TOPIC=%s, OFFSETAGENT_CONFIG_TOPIC=%s, "+
		"OFFSETAGENT_OFFSETS_TOPIC=%s), or give the --request-topic its agents consume",
		to.RequestTopic, strings.Join(to.Brokers, ","), to.RequestTopic, to.ConfigTopic, to.OffsetsTopic)
	if requireAgent {
		return "", precheckf("%s; --allow-no-agent publishes anyway, and the requests wait for an agent until --timeout", msg)
	}
	return msg + "; the requests wait for an agent until --timeout", nil
}
