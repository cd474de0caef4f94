package kafkaio

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The deletion of one consumer group, sent to its coordinator as the other group requests are
// (group_exchange.go, coordinator.go; DescribeGroup in groups_describe.go): kafka-go's
// Client.DeleteGroups finds the coordinator again for every call.

// maxDeleteGroupsVersion is the last version without tagged fields.
const maxDeleteGroupsVersion = 1

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
