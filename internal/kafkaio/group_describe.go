package kafkaio

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The description and deletion of one consumer group, sent to its coordinator as the other
// group requests are (group_exchange.go, coordinator.go): kafka-go's Client.DescribeGroups and
// DeleteGroups find the coordinator again for every call.

// Last versions without tagged fields.
const (
	maxDescribeGroupsVersion = 4
	maxDeleteGroupsVersion   = 1
)

// GroupState is what DescribeGroups tells of one consumer group.
type GroupState struct {
	// State is the coordinator's word for the group: Empty, Stable, PreparingRebalance,
	// CompletingRebalance, Dead, or "" when the coordinator does not say.
	State string
	// Members is the number of its members.
	Members int
}

// DescribeGroup describes group at its coordinator. An error the coordinator answered for
// the group is a kafka.Error (kafka.GroupIdNotFound for a group some brokers do not know).
func DescribeGroup(ctx context.Context, cl *kafka.Client, group string) (GroupState, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	kres, err := exchangeGroup(ctx, cl, group, req, maxDescribeGroupsVersion)
	if err != nil {
		return GroupState{}, err
	}
	res, ok := kres.(*kmsg.DescribeGroupsResponse)
	if !ok {
		return GroupState{}, fmt.Errorf("unexpected response %T", kres)
	}
	for _, g := range res.Groups {
		if g.Group != group {
			continue
		}
		if g.ErrorCode != 0 {
			return GroupState{}, kafka.Error(g.ErrorCode)
		}
		return GroupState{State: g.State, Members: len(g.Members)}, nil
	}
	return GroupState{}, nil
}

// DeleteGroup deletes group and its committed offsets at its coordinator. An error the
// coordinator answered for the group is a kafka.Error (kafka.GroupIdNotFound,
// kafka.NonEmptyGroup, ...).
func DeleteGroup(ctx context.Context, cl *kafka.Client, group string) error {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	kres, err := exchangeGroup(ctx, cl, group, req, maxDeleteGroupsVersion)
	if err != nil {
		return err
	}
	res, ok := kres.(*kmsg.DeleteGroupsResponse)
	if !ok {
		return fmt.Errorf("unexpected response %T", kres)
	}
	for _, g := range res.Groups {
		if g.Group == group && g.ErrorCode != 0 {
			return kafka.Error(g.ErrorCode)
		}
	}
	return nil
}
