package kafkaio

import (
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclCluster starts a kfake cluster with ACLs on, topics "allowed" and "refused", and a
// SCRAM user "probe" granted acls; it returns a client of that user and one of a superuser.
func aclCluster(t *testing.T, acls ...kfake.ACL) (user, admin *kafka.Client) {
	t.Helper()
	_, user, admin = aclClusterOf(t, acls...)
	return user, admin
}

// aclClusterOf is aclCluster with the cluster, for a test that injects a broker's answers.
func aclClusterOf(t *testing.T, acls ...kfake.ACL) (c *kfake.Cluster, user, admin *kafka.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "allowed", "refused"),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "probe", "pw", acls...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	client := func(user, pass string) *kafka.Client {
		mech, err := scram.Mechanism(scram.SHA256, user, pass)
		require.NoError(t, err)
		tr := &kafka.Transport{SASL: mech, DialTimeout: 5 * time.Second}
		t.Cleanup(tr.CloseIdleConnections)
		return &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...), Transport: tr, Timeout: 10 * time.Second}
	}
	return c, client("probe", "pw"), client("admin", "admin")
}

func allow(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: typ, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

// The probes tell a granted operation from a refused one, on topics and groups, and change
// nothing: no record, no commit.
func TestProbes(t *testing.T) {
	cl, admin := aclCluster(t,
		allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationWrite),
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationDelete),
		allow(kmsg.ACLResourceTypeGroup, "nodelete", kmsg.ACLOperationRead),
	)
	ctx := testContext(t)
	// kfake answers an OffsetDelete of an unknown group before its ACL check (Apache Kafka
	// checks first): the groups the Delete probe is asked about exist.
	entry := []GroupOffset{{Topic: "allowed", Partition: 1, Offset: 7}}
	require.NoError(t, CommitGroupOffsets(ctx, admin, "g", entry))
	require.NoError(t, CommitGroupOffsets(ctx, admin, "nodelete", entry))

	require.NoError(t, ProbeWrite(ctx, cl, "allowed"))
	require.ErrorIs(t, ProbeWrite(ctx, cl, "refused"), kafka.TopicAuthorizationFailed)
	// Several topics in one request, each with its own answer.
	errs := ProbeWrites(ctx, cl, []string{"allowed", "refused", "allowed"})
	require.Len(t, errs, 3)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.TopicAuthorizationFailed)
	require.ErrorContains(t, errs[1], `"refused"`)
	require.NoError(t, errs[2])
	require.NoError(t, ProbeRead(ctx, cl, "allowed"))
	require.ErrorIs(t, ProbeRead(ctx, cl, "refused"), kafka.TopicAuthorizationFailed)

	require.NoError(t, ProbeGroupCommit(ctx, cl, "g", []string{"allowed"}))
	err := ProbeGroupCommit(ctx, cl, "g", []string{"allowed", "refused"})
	require.ErrorIs(t, err, kafka.TopicAuthorizationFailed)
	require.ErrorContains(t, GroupAuthz(err, "User:probe", "g", OpRead, "refused"), `Read Topic "refused"`)
	err = ProbeGroupCommit(ctx, cl, "other", []string{"allowed"})
	require.ErrorIs(t, err, kafka.GroupAuthorizationFailed)
	require.ErrorContains(t, GroupAuthz(err, "User:probe", "other", OpRead, "allowed"), `Read Group "other"`)

	require.NoError(t, ProbeGroupDelete(ctx, cl, "g", "allowed"))
	require.ErrorIs(t, ProbeGroupDelete(ctx, cl, "nodelete", "allowed"), kafka.GroupAuthorizationFailed)

	// Nothing was written or committed.
	end, err := ListOffsets(ctx, cl, "allowed", 2, kafka.LastOffset)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 0}, end)
	for _, g := range []string{"g", "nodelete"} {
		offs, err := FetchGroupOffsets(ctx, admin, g)
		require.NoError(t, err)
		require.Equal(t, entry, offs, g)
	}
}

// The Write probes a Producer carries ride in its Produce requests beside the records queued
// with them, each topic answered on its own, and write nothing; probes whose first topic the
// principal may not Describe are asked on their own, with the same answers.
func TestProducerProbes(t *testing.T) {
	c, user, _ := aclClusterOf(t,
		allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationWrite),
	)
	ctx := testContext(t)
	p := NewProducer(Options{Brokers: []string{user.Addr.String()}, Transport: user.Transport.(*kafka.Transport), Principal: "User:probe"})
	require.Nil(t, p.Produce(ctx, []kafka.Message{{Topic: "allowed", Partition: 1, Value: []byte("warm-up")}}))

	seen := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
	release := p.Hold()
	probes := p.EnqueueProbes(ctx, []string{"allowed", "refused", "allowed"})
	write := p.Enqueue(ctx, []kafka.Message{{Topic: "allowed", Partition: 0, Value: []byte("v")}})
	release()
	errs := probes.Wait(ctx)
	require.Nil(t, write.Wait(ctx))
	require.Equal(t, 1, seen.Hits(), "the probes and the write in one Produce request")
	require.Len(t, errs, 3)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.TopicAuthorizationFailed)
	require.ErrorContains(t, errs[1], `principal User:probe is not allowed to Write Topic "refused"`)
	require.NoError(t, errs[2])
	require.Equal(t, int64(0), write.Offset(0))

	// A first topic whose leader the metadata does not give: asked on its own.
	errs = p.ProbeWrites(ctx, []string{"refused", "allowed"})
	require.ErrorIs(t, errs[0], kafka.TopicAuthorizationFailed)
	require.NoError(t, errs[1])

	end, err := ListOffsets(ctx, user, "allowed", 2, kafka.LastOffset)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1}, end, "the write and the warm-up, nothing else")
}

// Every call that makes a request returns a refusal as a complete *AuthzError: the principal
// of the client's Options, the operation the call needs and the resource, with the
// kafka-acls.sh line; the caller only adds what it was doing.
func TestCallsWordTheirRefusals(t *testing.T) {
	user, admin := aclCluster(t, allow(kmsg.ACLResourceTypeTopic, "allowed", kmsg.ACLOperationRead))
	cl := NewClient(Options{Brokers: []string{user.Addr.String()}, Transport: user.Transport.(*kafka.Transport), Principal: "User:probe"})
	cl.Timeout = 10 * time.Second
	require.Equal(t, "User:probe", PrincipalOf(cl))
	require.Empty(t, PrincipalOf(user))
	ctx := testContext(t)
	// kfake answers an OffsetDelete of an unknown group before its ACL check: g exists.
	require.NoError(t, CommitGroupOffsets(ctx, admin, "g", []GroupOffset{{Topic: "allowed", Offset: 1}}))
	producer := NewProducer(Options{Brokers: []string{user.Addr.String()}, Transport: user.Transport.(*kafka.Transport), Principal: "User:probe"})
	_, refusedOf, err := DescribeTopics(ctx, cl, []string{"refused"})
	require.NoError(t, err)

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"ProbeWrite", ProbeWrite(ctx, cl, "refused"), `Write Topic "refused"`},
		{"ProbeRead", ProbeRead(ctx, cl, "refused"), `Read Topic "refused"`},
		{"ProbeGroupCommit", ProbeGroupCommit(ctx, cl, "g", []string{"allowed"}), `Read Group "g"`},
		{"ProbeGroupDelete", ProbeGroupDelete(ctx, cl, "g", "allowed"), `Delete Group "g"`},
		{"CommitGroupOffsets", CommitGroupOffsets(ctx, cl, "g", []GroupOffset{{Topic: "allowed", Offset: 1}}), `Read Group "g"`},
		{"FetchGroupOffsets", func() error { _, err := FetchGroupOffsets(ctx, cl, "g"); return err }(), `Describe Group "g"`},
		{"DescribeTopics", refusedOf["refused"], `Describe Topic "refused"`},
		{"Producer.Write", producer.Write(ctx, "allowed", []Record{{Value: []byte("v")}}, []int32{0}, nil), `Write Topic "allowed"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var az *AuthzError
			require.ErrorAs(t, tc.err, &az)
			require.Equal(t, "User:probe", az.Principal)
			require.ErrorContains(t, tc.err, `principal User:probe is not allowed to `+tc.want)
			require.ErrorContains(t, tc.err, `kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:probe`)
		})
	}
}
