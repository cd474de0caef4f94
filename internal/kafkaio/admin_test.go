package kafkaio

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Each admin request words its refusal itself: an *AuthzError with the principal of the
// client's Options, the operation the request needs and the resource; the caller only adds
// what it was doing.
func TestAdminRequestsWordTheirRefusals(t *testing.T) {
	c, user, admin := aclClusterOf(t,
		allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "deletable", kmsg.ACLOperationDelete),
		allow(kmsg.ACLResourceTypeGroup, "deletable", kmsg.ACLOperationRead),
	)
	cl := NewClient(Options{Brokers: []string{user.Addr.String()}, Transport: user.Transport.(*kafka.Transport), Principal: "User:probe"})
	cl.Timeout = 10 * time.Second
	// A transport whose metadata names the topic asked about: one that lists every topic
	// sees only those the principal may Describe, and an unauthorized one as missing.
	named := &kafka.Transport{SASL: user.Transport.(*kafka.Transport).SASL, MetadataTopics: []string{"refused"}}
	t.Cleanup(named.CloseIdleConnections)
	clNamed := NewClient(Options{Brokers: []string{user.Addr.String()}, Transport: named, Principal: "User:probe"})
	clNamed.Timeout = 10 * time.Second
	// kfake checks no topic ACL in an OffsetDelete; Apache Kafka answers a partition of a topic
	// the principal may not Read so.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetDelete}, Topic: "refused", Err: kerr.TopicAuthorizationFailed, Count: -1})
	ctx := testContext(t)
	// kfake answers an OffsetDelete or a DeleteGroups of an unknown group before its ACL check
	// (Apache Kafka checks first): the groups exist.
	for _, g := range []string{"g", "deletable"} {
		require.NoError(t, CommitGroupOffsets(ctx, admin, g, []GroupOffset{{Topic: "allowed", Offset: 1}, {Topic: "refused", Offset: 1}}))
	}

	tests := []struct {
		name string
		call func(context.Context) error
		want string
	}{
		{"TopicConfig", func(ctx context.Context) error {
			_, _, err := TopicConfig(ctx, cl, "refused", "cleanup.policy")
			return err
		}, `DescribeConfigs Topic "refused"`},
		{"EnsureTopic", func(ctx context.Context) error { return EnsureTopic(ctx, cl, "new", 1, nil) }, `Create Topic "new"`},
		{"PartitionCount", func(ctx context.Context) error { _, err := PartitionCount(ctx, clNamed, "refused"); return err }, `Describe Topic "refused"`},
		{"DescribeGroup", func(ctx context.Context) error { _, err := DescribeGroup(ctx, cl, "g"); return err }, `Describe Group "g"`},
		{"DeleteGroup", func(ctx context.Context) error { return DeleteGroup(ctx, cl, "g") }, `Delete Group "g"`},
		{"DeleteGroupOffsets of a group refused", func(ctx context.Context) error {
			return DeleteGroupOffsets(ctx, cl, "g", map[string][]int{"allowed": {0}})
		}, `Delete Group "g"`},
		{"DeleteGroupOffsets of a topic refused", func(ctx context.Context) error {
			return DeleteGroupOffsets(ctx, cl, "deletable", map[string][]int{"allowed": {0}, "refused": {0}})
		}, `Read Topic "refused"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(ctx)
			var az *AuthzError
			require.ErrorAs(t, err, &az)
			require.Equal(t, "User:probe", az.Principal)
			require.ErrorContains(t, err, `principal User:probe is not allowed to `+tt.want)
			require.ErrorContains(t, err, `kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:probe`)
			_, refused := AuthorizationCode(err)
			require.True(t, refused, "errors.Is and Classify see the broker's code through it")
		})
	}
}

// What the admin requests do when allowed: a topic created once with its configs, a config
// read, a group's offsets and the group deleted, and the coordinator's answers for a group
// that does not exist or has members kept for the caller to judge.
func TestAdminRequests(t *testing.T) {
	_, cl := aclCluster(t)
	ctx := testContext(t)

	require.NoError(t, EnsureTopic(ctx, cl, "compacted", 3, map[string]string{"cleanup.policy": "compact"}))
	require.NoError(t, EnsureTopic(ctx, cl, "compacted", 5, nil), "an existing topic is left as it is")
	n, err := PartitionCount(ctx, cl, "compacted")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	v, ok, err := TopicConfig(ctx, cl, "compacted", "cleanup.policy")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "compact", v)
	_, err = PartitionCount(ctx, cl, "missing")
	require.ErrorIs(t, err, kafka.UnknownTopicOrPartition)

	entries := []GroupOffset{{Topic: "compacted", Partition: 0, Offset: 4}, {Topic: "compacted", Partition: 1, Offset: 5}}
	require.NoError(t, CommitGroupOffsets(ctx, cl, "g", entries))
	require.NoError(t, DeleteGroupOffsets(ctx, cl, "g", map[string][]int{"compacted": {0}}))
	left, err := FetchGroupOffsets(ctx, cl, "g")
	require.NoError(t, err)
	require.Equal(t, entries[1:], left)
	require.NoError(t, DeleteGroup(ctx, cl, "g"))
	require.ErrorIs(t, DeleteGroup(ctx, cl, "g"), kafka.GroupIdNotFound)
	require.ErrorIs(t, DeleteGroupOffsets(ctx, cl, "g", map[string][]int{"compacted": {0}}), kafka.GroupIdNotFound)
}
