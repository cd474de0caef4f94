package migrate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
)

// The cutover report names what a rollback of the migration calls and reads: both REST APIs
// without their userinfo, the state topic when it is on B, MirrorMaker 2's policy, and an
// operator-managed B.
func TestCutoverDescribesForRollback(t *testing.T) {
	tests := []struct {
		name string
		opts MigrateOptions
		want cutover.Cutover
	}{
		{name: "stop-source, MM2",
			opts: MigrateOptions{Options: Options{ConnectURL: "http://u:secret@a:8083", StopSource: true,
				MM2: &fleet.MM2{Policy: mm2.Policy{SourceAlias: "A", TargetAlias: "B"}}},
				To: target.Target{Brokers: []string{"b:9092"}, ConnectURL: "http://b:8083"}},
			want: cutover.Cutover{FromConnectURL: "http://a:8083", ToConnectURL: "http://b:8083", StateTopic: source.DefaultStateTopic,
				MM2: &cutover.MM2{SourceAlias: "A", TargetAlias: "B", Policy: "default"}}},
		{name: "state topic elsewhere, identity policy, Strimzi",
			opts: MigrateOptions{Options: Options{StopSource: true, States: &source.StateStore{Brokers: []string{"c:9092"}, Topic: "st"},
				MM2: &fleet.MM2{Policy: mm2.Policy{Kind: mm2.PolicyIdentity, SourceAlias: "A", Separator: "_"}}},
				To: target.Target{Brokers: []string{"b:9092"}}, Strimzi: &strimzi.Target{}},
			want: cutover.Cutover{MM2: &cutover.MM2{SourceAlias: "A", Policy: "identity", Separator: "_"}, OperatorManaged: true}},
		{name: "no stop-source: no state topic",
			opts: MigrateOptions{Options: Options{ConnectURL: "http://a:8083"}, To: target.Target{Brokers: []string{"b:9092"}}},
			want: cutover.Cutover{FromConnectURL: "http://a:8083"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got cutover.Cutover
			tt.opts.describeForRollback(&got)
			require.Equal(t, tt.want, got)
		})
	}
}
