package kafkaio

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// ListGroups asks every broker, each of which lists the groups it coordinates, and
// DescribeGroup gives a member's metadata and assignment bytes whatever the protocol (kafka-go's
// own DescribeGroups reads them as a consumer's and drops a Connect worker's).
func TestListAndDescribeGroups(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	groups := []string{"connect-a", "connect-b", "connect-c", "orders-consumers", "x", "y"}
	for i, g := range groups {
		typ, proto := "connect", "sessioned"
		if i >= 3 {
			typ, proto = "consumer", "range"
		}
		kafkatest.JoinGroup(t, brokers, g, kafkatest.Member{ProtocolType: typ, Protocol: proto,
			Metadata: []byte("metadata of " + g), Assignment: []byte("assignment of " + g)})
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: testTransport(t)}
	ctx := testContext(t)
	listed, err := ListGroups(ctx, cl)
	require.NoError(t, err)
	var names []string
	coordinators := map[int32]bool{}
	for _, g := range listed {
		names = append(names, g.Group)
		coordinators[g.Coordinator] = true
		want := "consumer"
		if strings.HasPrefix(g.Group, "connect-") {
			want = "connect"
		}
		require.Equal(t, want, g.ProtocolType, g.Group)
	}
	require.Equal(t, groups, names, "every broker's groups, sorted")
	require.Greater(t, len(coordinators), 1, "the groups are spread over the brokers: each broker was asked")

	d, err := DescribeGroup(ctx, cl, "connect-b")
	require.NoError(t, err)
	require.Equal(t, "Stable", d.State)
	require.Equal(t, "connect", d.ProtocolType)
	require.Equal(t, "sessioned", d.Protocol)
	require.Len(t, d.Members, 1)
	require.Equal(t, []byte("metadata of connect-b"), d.Members[0].Metadata)
	require.Equal(t, []byte("assignment of connect-b"), d.Members[0].Assignment)
	require.NotEmpty(t, d.Members[0].MemberID)

	d, err = DescribeGroup(ctx, cl, "no-such-group")
	require.NoError(t, err)
	require.Equal(t, "Dead", d.State)
	require.Empty(t, d.Members)
}

// A group the principal may not Describe is refused with the principal, the operation and
// the group, as every refusal of this package is worded.
func TestDescribeGroupRefused(t *testing.T) {
	cl, _ := aclCluster(t, allow(kmsg.ACLResourceTypeGroup, "seen", kmsg.ACLOperationDescribe))
	cl = NewClient(Options{Brokers: []string{cl.Addr.String()}, Transport: cl.Transport.(*kafka.Transport), Principal: "User:probe"})
	ctx := testContext(t)
	_, err := DescribeGroup(ctx, cl, "hidden")
	var ae *AuthzError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, OpDescribe, ae.Operation)
	require.Equal(t, ResourceGroup, ae.ResourceType)
	require.Equal(t, "hidden", ae.Resource)
	require.Contains(t, err.Error(), "User:probe")
	_, err = DescribeGroup(ctx, cl, "seen")
	require.NoError(t, err)
}

// A listing of the groups is complete only with Describe on the cluster: RequireClusterOps
// names the principal and the cluster when it is missing.
func TestRequireClusterOps(t *testing.T) {
	cl, admin := aclCluster(t, allow(kmsg.ACLResourceTypeGroup, "seen", kmsg.ACLOperationDescribe))
	ctx := testContext(t)
	err := RequireClusterOps(ctx, cl, "User:probe", OpDescribe)
	var ae *AuthzError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, ResourceCluster, ae.ResourceType)
	require.Equal(t, OpDescribe, ae.Operation)
	require.Contains(t, err.Error(), "User:probe")
	require.NoError(t, RequireClusterOps(ctx, admin, "User:admin", OpDescribe))
}
