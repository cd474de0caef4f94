package kafkaio

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Listing and describing a cluster's groups with every byte the coordinator keeps: kafka-go's
// DescribeGroups decodes each member's metadata and assignment as a consumer's and drops the
// bytes of any other protocol (Connect's workers), and its ListGroups merges the brokers'
// answers without their error codes, so a coordinator that could not answer (loading its
// groups) would look like one with no group. These requests are franz-go's kmsg structures on
// the client's transport (group_exchange.go).

// maxListGroupsVersion and maxDescribeGroupsVersion are the last versions without tagged
// fields.
const (
	maxListGroupsVersion     = 2
	maxDescribeGroupsVersion = 4
)

// ListedGroup is one group a broker coordinates.
type ListedGroup struct {
	Group        string
	ProtocolType string // "consumer", "connect", "" for a group with only committed offsets
	Coordinator  int32  // the broker that listed it
}

// ListGroups lists the groups of every broker of the cluster (ListGroups goes to each broker,
// which lists the groups it coordinates), sorted by name. Kafka lists only the groups the
// principal may Describe (all of them with Describe on the cluster). A broker that answers
// with an error (its coordinator still loading, say) fails the listing, naming the broker:
// a listing without its groups would say they do not exist.
func ListGroups(ctx context.Context, cl *kafka.Client) ([]ListedGroup, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return nil, refusal(cl, fmt.Errorf("list the cluster's brokers: %w", err), OpDescribe, ResourceCluster, "")
	}
	var out []ListedGroup
	for _, b := range md.Brokers {
		e := &brokerExchange{id: int32(b.ID), kmsgExchange: kmsgExchange{req: kmsg.NewPtrListGroupsRequest(), maxVersion: maxListGroupsVersion,
			format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientIDOf(cl)))}}
		kres, err := roundTrip(ctx, cl, e)
		if err == nil {
			res, ok := kres.(*kmsg.ListGroupsResponse)
			switch {
			case !ok:
				err = fmt.Errorf("unexpected response %T", kres)
			case res.ErrorCode != 0:
				err = kafka.Error(res.ErrorCode)
			default:
				for _, g := range res.Groups {
					out = append(out, ListedGroup{Group: g.Group, ProtocolType: g.ProtocolType, Coordinator: int32(b.ID)})
				}
			}
		}
		if err != nil {
			return nil, refusal(cl, fmt.Errorf("list the groups of broker %d (%s:%d): %w", b.ID, b.Host, b.Port, err), OpDescribe, ResourceCluster, "")
		}
	}
	slices.SortFunc(out, func(a, b ListedGroup) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// DescribedGroup is a group as its coordinator describes it.
type DescribedGroup struct {
	Group string
	// State is the coordinator's: "Stable", "PreparingRebalance", "CompletingRebalance",
	// "Empty" or "Dead" (a group the coordinator does not know).
	State        string
	ProtocolType string
	// Protocol is the protocol the members agreed on; the coordinator gives it, and the
	// members' metadata and assignments, only while the group is Stable.
	Protocol string
	Members  []GroupMember
}

// GroupMember is one member of a described group, with the bytes of its metadata for the
// group's protocol and of the assignment the leader gave it (empty while the group is not
// Stable).
type GroupMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// DescribeGroup describes group at its coordinator. A refusal for lack of an ACL is an
// *AuthzError naming Describe on the group; another error the coordinator answered for the
// group is a kafka.Error.
func DescribeGroup(ctx context.Context, cl *kafka.Client, group string) (DescribedGroup, error) {
	d, err := describeGroup(ctx, cl, group)
	return d, refusal(cl, err, OpDescribe, ResourceGroup, group)
}

func describeGroup(ctx context.Context, cl *kafka.Client, group string) (DescribedGroup, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	kres, err := exchangeGroup(ctx, cl, group, req, maxDescribeGroupsVersion)
	if err != nil {
		return DescribedGroup{}, err
	}
	res, ok := kres.(*kmsg.DescribeGroupsResponse)
	if !ok || len(res.Groups) != 1 {
		return DescribedGroup{}, fmt.Errorf("unexpected response %T for group %q", kres, group)
	}
	g := res.Groups[0]
	if g.ErrorCode != 0 {
		if kafka.Error(g.ErrorCode) == kafka.GroupIdNotFound { // DescribeGroups v6+: a group the coordinator does not know
			return DescribedGroup{Group: group, State: "Dead"}, nil
		}
		return DescribedGroup{}, kafka.Error(g.ErrorCode)
	}
	d := DescribedGroup{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol}
	for _, m := range g.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Metadata: m.ProtocolMetadata, Assignment: m.MemberAssignment}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		d.Members = append(d.Members, gm)
	}
	return d, nil
}
