package offsetstore

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The store's group and topic requests refused by the brokers come back as a
// *kafkaio.AuthzError naming the store's principal, the operation and the resource, worded by
// kafkaio's request itself: the store adds nothing but what it was doing.
func TestStoreRefusalsNamePrincipal(t *testing.T) {
	allow := func(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: typ, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(1, "orders", "refused"),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "agent", "pw",
			allow(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeGroup, "connect-sink", kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeGroup, "connect-sink", kmsg.ACLOperationDelete)))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	// kfake checks no topic ACL in an OffsetDelete; Apache Kafka answers a partition of a topic
	// the principal may not Read so.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetDelete}, Topic: "refused", Err: kerr.TopicAuthorizationFailed, Count: -1})
	brokers := c.ListenAddrs()
	transport := func(user, pass string) *kafka.Transport {
		mech, err := scram.Mechanism(scram.SHA256, user, pass)
		require.NoError(t, err)
		tr := &kafka.Transport{SASL: mech, DialTimeout: 5 * time.Second}
		t.Cleanup(tr.CloseIdleConnections)
		return tr
	}
	ctx := testContext(t)
	admin := kafkaio.NewClient(kafkaio.Options{Brokers: brokers, Transport: transport("admin", "admin"), Principal: "User:admin"})
	// kfake answers an OffsetDelete or a DeleteGroups of an unknown group before its ACL
	// check (Apache Kafka checks first): the groups exist.
	for _, g := range []string{"connect-sink", "connect-other"} {
		require.NoError(t, kafkaio.CommitGroupOffsets(ctx, admin, g, []kafkaio.GroupOffset{{Topic: "orders", Offset: 1}, {Topic: "refused", Offset: 1}}))
	}
	opts := Options{Brokers: brokers, ConfigTopic: testConfigTopic, OffsetsTopic: testOffsetsTopic,
		Transport: transport("agent", "pw"), Principal: "User:agent"}
	s, err := New(opts)
	require.NoError(t, err)

	tests := []struct {
		name string
		call func(context.Context) error
		want string
	}{
		{"DescribeGroup", func(ctx context.Context) error { _, err := s.DescribeGroup(ctx, "connect-other"); return err },
			`Describe Group "connect-other"`},
		{"DeleteGroup", func(ctx context.Context) error { return s.DeleteGroup(ctx, "connect-other") }, `Delete Group "connect-other"`},
		{"DeleteGroupOffsets of a group refused", func(ctx context.Context) error {
			return s.DeleteGroupOffsets(ctx, "connect-other", []GroupOffset{{Topic: "orders"}})
		}, `Delete Group "connect-other"`},
		{"DeleteGroupOffsets of a topic refused", func(ctx context.Context) error {
			return s.DeleteGroupOffsets(ctx, "connect-sink", []GroupOffset{{Topic: "refused"}})
		}, `Read Topic "refused"`},
		{"CheckConnectTopics creating them", func(ctx context.Context) error {
			return CheckConnectTopics(ctx, kafkaio.NewClient(opts.Cluster()), testConfigTopic, testOffsetsTopic, true)
		}, `Create Topic "connect-configs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(ctx)
			var az *kafkaio.AuthzError
			require.ErrorAs(t, err, &az)
			require.ErrorContains(t, err, `principal User:agent is not allowed to `+tt.want)
		})
	}
}
