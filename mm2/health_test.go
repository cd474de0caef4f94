package mm2

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// MM2's configuration judged as MM2 judges a group: Connect's LIST parsing (commas, blanks, an
// empty value is an empty list), whole-name matching of the entries joined by |, the defaults,
// groups.exclude's former name, and a group filter of its own left unjudged. The fix names the
// exact value to set, for both deployments.
func TestConfigFindings(t *testing.T) {
	policy := Policy{Kind: PolicyDefault, SourceAlias: "A", TargetAlias: "B"}
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: []string{"127.0.0.1:1"}}, Policy: policy})
	require.NoError(t, err)
	checkpoint := func(dedicated bool, cfg map[string]string) Setup {
		return Setup{Checkpoint: []MM2Connector{{Name: "cp", Topic: "t", Dedicated: dedicated, Config: cfg}}}
	}
	type want struct{ key, fix string }
	tests := []struct {
		name  string
		setup Setup
		group string
		want  []want
	}{
		{name: "default exclude", setup: checkpoint(false, map[string]string{}), group: "connect-s",
			want: []want{{GroupsExcludeKey, `set groups.exclude = console-consumer-.*, __.* on the MirrorCheckpointConnector "cp" (or, were MirrorMaker 2 dedicated, A->B.groups.exclude = console-consumer-.*, __.*`}}},
		{name: "default exclude, dedicated", setup: checkpoint(true, map[string]string{}), group: "connect-s",
			want: []want{{GroupsExcludeKey, "set A->B.groups.exclude = console-consumer-.*, __.* in mm2.properties"}}},
		{name: "default exclude, another group", setup: checkpoint(false, map[string]string{}), group: "app"},
		{name: "exclude changed", setup: checkpoint(false, map[string]string{"groups.exclude": "console-consumer-.*,__.*"}), group: "connect-s"},
		{name: "exclude empty", setup: checkpoint(false, map[string]string{"groups.exclude": " "}), group: "connect-s"},
		{name: "former name", setup: checkpoint(false, map[string]string{"groups.blacklist": "connect-s ,  x"}), group: "connect-s",
			want: []want{{GroupsExcludeKey, "set groups.exclude = x on"}}},
		{name: "groups leaves it out", setup: checkpoint(false, map[string]string{"groups": "app-.*", "groups.exclude": ""}), group: "connect-s.1",
			want: []want{{GroupsKey, `set groups = app-.*, connect-s\.1 on`}}},
		{name: "groups empty", setup: checkpoint(false, map[string]string{"groups": "", "groups.exclude": ""}), group: "connect-s",
			want: []want{{GroupsKey, "set groups = connect-s on"}}},
		{name: "whole name", setup: checkpoint(false, map[string]string{"groups.exclude": "connect"}), group: "connect-s"},
		{name: "own group filter", setup: checkpoint(false, map[string]string{"group.filter.class": "com.example.Filter"}), group: "connect-s"},
		{name: "checkpoints off", setup: checkpoint(false, map[string]string{"groups.exclude": "", "emit.checkpoints.enabled": "FALSE"}), group: "connect-s",
			want: []want{{EmitCheckpointsKey, "set emit.checkpoints.enabled = true (the default) on"}}},
		{name: "disabled", setup: checkpoint(true, map[string]string{"groups.exclude": "", "enabled": "false"}), group: "connect-s",
			want: []want{{EnabledKey, "set A->B.enabled = true (the default) in mm2.properties"}}},
		{name: "offset syncs off on the source connector", group: "connect-s",
			setup: Setup{Source: []MM2Connector{{Name: "src", Config: map[string]string{"emit.offset-syncs.enabled": "false"}}}},
			want:  []want{{EmitOffsetSyncsKey, `set emit.offset-syncs.enabled = true (the default) on the MirrorSourceConnector "src"`}}},
		{name: "one of two checkpoint connectors takes it", group: "connect-s", setup: Setup{Checkpoint: []MM2Connector{
			{Name: "a", Config: map[string]string{}}, {Name: "b", Config: map[string]string{"groups.exclude": ""}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tr.configFindings(tt.group, tt.setup)
			require.Len(t, fs, len(tt.want), "%+v", fs)
			for i, w := range tt.want {
				require.Equal(t, w.key, fs[i].Key)
				require.True(t, fs[i].Blocked)
				require.Contains(t, fs[i].Fix, w.fix)
			}
		})
	}
}
