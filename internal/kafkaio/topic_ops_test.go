package kafkaio

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequireTopicOps names the first operation the principal lacks on a topic it may see, the
// first one asked for on a topic it may not see (existing or not: Kafka does not tell).
func TestRequireTopicOps(t *testing.T) {
	cl, _ := aclCluster(t, allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationRead))
	ctx := testContext(t)
	require.NoError(t, RequireTopicOps(ctx, cl, "User:probe", []TopicOps{
		{"allowed", []string{OpRead, OpDescribe}}}))
	err := RequireTopicOps(ctx, cl, "User:probe", []TopicOps{{"missing", []string{OpWrite}}})
	require.ErrorContains(t, err, `principal User:probe is not allowed to Write Topic "missing"`)
	err = RequireTopicOps(ctx, cl, "User:probe", []TopicOps{{"allowed", []string{OpRead, OpWrite}}})
	require.ErrorContains(t, err, `principal User:probe is not allowed to Write Topic "allowed" (TOPIC_AUTHORIZATION_FAILED)`)
	err = RequireTopicOps(ctx, cl, "User:probe", []TopicOps{{"allowed", []string{OpRead}}, {"refused", []string{OpRead, OpWrite}}})
	require.ErrorContains(t, err, `principal User:probe is not allowed to Read Topic "refused" (TOPIC_AUTHORIZATION_FAILED)`)
}
