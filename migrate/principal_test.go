package migrate

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// A request B's brokers refuse names the principal of B's credentials, whatever client made
// it: the state topic's (created by --stop-source) and the cutover verification's are built
// with B's principal. Built without it, they worded every refusal as User:ANONYMOUS's, and the
// operator granted the ACL to nobody.
func TestRefusalOnBNamesPrincipal(t *testing.T) {
	allow := func(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: typ, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c := startKfakeCluster(t, kfake.SeedTopics(2, "T"), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "alice", "pw", allow(kmsg.ACLResourceTypeTopic, "T", kmsg.ACLOperationDescribe)))
	brokers := c.ListenAddrs()
	transport := func(user, pass string) *kafka.Transport {
		mech, err := scram.Mechanism(scram.SHA256, user, pass)
		require.NoError(t, err)
		tr := &kafka.Transport{SASL: mech, MetadataTTL: time.Second}
		t.Cleanup(tr.CloseIdleConnections)
		return tr
	}
	alice := transport("alice", "pw")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kafkaio.NewClient(kafkaio.Options{Brokers: brokers, Transport: transport("admin", "admin"), Principal: "User:admin"})
	require.NoError(t, kafkaio.CommitGroupOffsets(ctx, admin, "connect-snk", []kafkaio.GroupOffset{{Topic: "T", Partition: 0, Offset: 7}}))
	to := target.Target{Brokers: brokers, Transport: alice, Principal: "User:alice"}

	tests := []struct {
		name string
		run  func(ctx context.Context) error
		want string
	}{
		{"state topic created for --stop-source", func(ctx context.Context) error {
			// B's principal reaches the state store as migrate gives it: from its Target.
			o := &MigrateOptions{To: to, Options: Options{States: &source.StateStore{Topic: "states", MigrationID: "m1"}}}
			st, _ := o.stateStore()
			_, err := source.OpenStates(ctx, st, "", true, slog.New(slog.DiscardHandler))
			return err
		}, `principal User:alice is not allowed to Create Topic "states"`},
		{"cutover verification", func(ctx context.Context) error {
			cut := &cutover.Cutover{MigrationID: "m1", Connectors: []*cutover.Connector{{Name: "snk", TargetName: "snk", Type: "sink", Group: "connect-snk",
				Partitions: []*cutover.Partition{{Partition: jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "T"}}, OnA: fleet.KafkaOffset(5), Placed: fleet.KafkaOffset(5),
					Translation: "as read", Verdict: cutover.VerdictWaiting}}}}}
			return cutover.Verify(ctx, cut, cutover.VerifyOptions{Brokers: to.Brokers, Transport: to.Transport, Principal: to.Principal})
		}, `principal User:alice is not allowed to Describe Group "connect-snk"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(ctx)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "ANONYMOUS")
		})
	}
}
