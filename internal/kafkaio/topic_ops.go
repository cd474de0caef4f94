package kafkaio

import (
	"context"
	"fmt"
	"math"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicOps are operations a caller needs on one topic (OpRead, OpWrite, OpDescribe,
// OpDescribeConfigs, ...), in the order a refusal is named: the first one missing is.
type TopicOps struct {
	Topic string
	Ops   []string
}

// topicOpBits are the ACL operations RequireTopicOps knows, by name.
var topicOpBits = map[string]kmsg.ACLOperation{
	OpRead: kmsg.ACLOperationRead, OpWrite: kmsg.ACLOperationWrite, OpCreate: kmsg.ACLOperationCreate,
	OpDelete: kmsg.ACLOperationDelete, OpDescribe: kmsg.ACLOperationDescribe,
	OpDescribeConfigs: kmsg.ACLOperationDescribeConfigs,
}

// RequireTopicOps asks the brokers behind cl, in one Metadata request (v8,
// IncludeTopicAuthorizedOperations, KIP-430), which operations cl's principal may do on each
// topic of need, without reading or writing anything, and returns an *AuthzError naming
// principal, the operation and the topic for the first operation that is not allowed: before
// a command changes anything, so that a permission it would miss half-way is refused at the
// start. A topic the principal may not Describe is refused for its first operation (each of
// Read, Write, Delete and DescribeConfigs implies Describe). A topic that does not exist, and
// a broker that does not answer the field, pass: other checks see to those.
func RequireTopicOps(ctx context.Context, cl *kafka.Client, principal string, need []TopicOps) error {
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	seen := map[string]bool{}
	for _, n := range need {
		if n.Topic == "" || seen[n.Topic] {
			continue
		}
		seen[n.Topic] = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n.Topic)
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kres, err := exchangeAny(ctx, cl, req, maxMetadataVersion)
	if err != nil {
		return err
	}
	res, ok := kres.(*kmsg.MetadataResponse)
	if !ok {
		return fmt.Errorf("unexpected response %T", kres)
	}
	byTopic := map[string]kmsg.MetadataResponseTopic{}
	for _, t := range res.Topics {
		if t.Topic != nil {
			byTopic[*t.Topic] = t
		}
	}
	for _, n := range need {
		t, ok := byTopic[n.Topic]
		if !ok || len(n.Ops) == 0 {
			continue
		}
		refuse := func(op string) error {
			return &AuthzError{Principal: principal, Operation: op, ResourceType: ResourceTopic, Resource: n.Topic,
				Code: kafka.TopicAuthorizationFailed}
		}
		switch code := kafka.Error(t.ErrorCode); {
		case code == kafka.TopicAuthorizationFailed:
			return refuse(n.Ops[0])
		case code != 0:
			continue // does not exist, or not known yet: not a permission
		}
		// 0 as well: a principal that sees the topic may at least Describe it, so a broker
		// answering 0 did not fill the field in.
		if req.GetVersion() < 8 || t.AuthorizedOperations == math.MinInt32 || t.AuthorizedOperations == 0 {
			continue
		}
		for _, op := range n.Ops {
			bit, known := topicOpBits[op]
			if known && t.AuthorizedOperations&(1<<int32(bit)) == 0 {
				return refuse(op)
			}
		}
	}
	return nil
}

// RequireClusterOps asks the brokers behind cl (Metadata v8, IncludeClusterAuthorizedOperations,
// KIP-430) whether cl's principal may do ops on the cluster, and returns an *AuthzError naming
// principal, the operation and the cluster for the first that is not allowed. Unlike
// RequireTopicOps it does not pass when it cannot tell: a broker that does not answer the
// field is an error, for callers whose conclusion would rest on the permission (a listing of
// the groups is complete only with Describe on the cluster).
func RequireClusterOps(ctx context.Context, cl *kafka.Client, principal string, ops ...string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none
	req.IncludeClusterAuthorizedOperations = true
	kres, err := exchangeAny(ctx, cl, req, maxMetadataVersion)
	if err != nil {
		return err
	}
	res, ok := kres.(*kmsg.MetadataResponse)
	if !ok {
		return fmt.Errorf("unexpected response %T", kres)
	}
	if req.GetVersion() < 8 || res.AuthorizedOperations == math.MinInt32 {
		return fmt.Errorf("the brokers do not say which operations principal %q may do on the cluster (Metadata v%d)", principal, req.GetVersion())
	}
	for _, op := range ops {
		bit, known := topicOpBits[op]
		if !known {
			return fmt.Errorf("operation %q on the cluster: unknown", op)
		}
		if res.AuthorizedOperations&(1<<int32(bit)) == 0 {
			return &AuthzError{Principal: principal, Operation: op, ResourceType: ResourceCluster, Code: kafka.ClusterAuthorizationFailed}
		}
	}
	return nil
}
