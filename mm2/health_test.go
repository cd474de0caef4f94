package mm2

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// MM2's configuration judged as MM2 judges a group: Connect's LIST parsing (commas, blanks, an
// empty value is an empty list), whole-name matching of the entries joined by |, Java's regex
// (lookahead evaluated, what cannot be evaluated refused with the pattern and why), the
// defaults, groups.exclude's former name, the topic filters of the checkpoint and source
// connectors, the checkpoint connector's status, and a group filter of its own left unjudged,
// said so. The fix names the exact value to set, for both deployments.
func TestConfigFindings(t *testing.T) {
	policy := Policy{Kind: PolicyDefault, SourceAlias: "A", TargetAlias: "B"}
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: []string{"127.0.0.1:1"}}, Policy: policy})
	require.NoError(t, err)
	running := &ConnectorStatus{}
	running.Connector.State = "RUNNING"
	running.Tasks = []TaskStatus{{ID: 0, State: "RUNNING"}}
	status := func(state string, tasks ...string) *ConnectorStatus {
		st := &ConnectorStatus{}
		st.Connector.State = state
		for i, s := range tasks {
			st.Tasks = append(st.Tasks, TaskStatus{ID: i, State: s, Trace: "org.apache.kafka.connect.errors.ConnectException: boom\n\tat x"})
		}
		return st
	}
	withStatus := func(st *ConnectorStatus, dedicated bool, cfg map[string]string) Setup {
		return Setup{Checkpoint: []MM2Connector{{Name: "cp", Topic: "t", Dedicated: dedicated, Config: cfg, Status: st}}}
	}
	checkpoint := func(dedicated bool, cfg map[string]string) Setup { return withStatus(running, dedicated, cfg) }
	type want struct{ key, text string }
	tests := []struct {
		name   string
		setup  Setup
		group  string
		topics []string
		want   []want // the blocking findings: key, and text in the fix
		notes  []want // the others: key, and text in the message
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
		{name: "own group filter", setup: checkpoint(false, map[string]string{"group.filter.class": "com.example.Filter"}), group: "connect-s",
			notes: []want{{GroupFilterClassKey, "com.example.Filter"}}},
		{name: "checkpoints off", setup: checkpoint(false, map[string]string{"groups.exclude": "", "emit.checkpoints.enabled": "FALSE"}), group: "connect-s",
			want: []want{{EmitCheckpointsKey, "set emit.checkpoints.enabled = true (the default) on"}}},
		{name: "disabled", setup: checkpoint(true, map[string]string{"groups.exclude": "", "enabled": "false"}), group: "connect-s",
			want: []want{{EnabledKey, "set A->B.enabled = true (the default) in mm2.properties"}}},
		{name: "offset syncs off on the source connector", group: "connect-s",
			setup: Setup{Source: []MM2Connector{{Name: "src", Config: map[string]string{"emit.offset-syncs.enabled": "false"}}}},
			want:  []want{{EmitOffsetSyncsKey, `set emit.offset-syncs.enabled = true (the default) on the MirrorSourceConnector "src"`}}},
		{name: "one of two checkpoint connectors takes it", group: "connect-s", setup: Setup{Checkpoint: []MM2Connector{
			{Name: "a", Config: map[string]string{}, Status: running}, {Name: "b", Config: map[string]string{"groups.exclude": ""}, Status: running}}}},

		// Java's regex, as MirrorMaker 2 reads it.
		{name: "lookahead excludes it", setup: checkpoint(false, map[string]string{"groups.exclude": "connect-(?!keep-).*"}), group: "connect-s",
			want: []want{{GroupsExcludeKey, `set groups.exclude = "" (empty) on`}}},
		{name: "lookahead spares it", setup: checkpoint(false, map[string]string{"groups.exclude": "connect-(?!keep-).*"}), group: "connect-keep-s"},
		{name: "lookbehind in groups", setup: checkpoint(false, map[string]string{"groups": ".*(?<!-test)", "groups.exclude": ""}), group: "connect-s-test",
			want: []want{{GroupsKey, `set groups = .*(?<!-test), connect-s-test on`}}},
		{name: "a flag spans the entries after it", setup: checkpoint(false, map[string]string{"groups": "x, (?i)y, connect-s", "groups.exclude": ""}), group: "CONNECT-S"},
		{name: "entries are joined, not grouped", setup: checkpoint(false, map[string]string{"groups": "(connect-a, connect-s)", "groups.exclude": ""}), group: "connect-s"},
		{name: "a pattern not evaluated", setup: checkpoint(false, map[string]string{"groups.exclude": `connect-\b.*`}), group: "connect-s",
			want: []want{{GroupsExcludeKey, "or give AllowReplay"}}},
		{name: "a pattern Java refuses", setup: checkpoint(false, map[string]string{"groups": "connect-s{1,2}", "groups.exclude": ""}), group: "connect-s",
			want: []want{{GroupsKey, "correct groups: MirrorMaker 2's MirrorCheckpointConnector does not start with it"}}},
		{name: "an empty entry", setup: checkpoint(false, map[string]string{"groups": "connect-s,", "groups.exclude": ""}), group: "connect-s",
			want: []want{{GroupsKey, "correct groups"}}},

		// The topic filters.
		{name: "checkpoint connector's topics leave one out", setup: checkpoint(false, map[string]string{"groups.exclude": "", "topics": "orders"}),
			group: "connect-s", topics: []string{"orders", "payments"}, want: []want{{TopicsKey, `set topics = orders, payments on the MirrorCheckpointConnector "cp"`}}},
		{name: "checkpoint connector's topics.exclude", setup: checkpoint(false, map[string]string{"groups.exclude": "", "topics.exclude": "pay.*, x"}),
			group: "connect-s", topics: []string{"orders", "payments"}, want: []want{{TopicsExcludeKey, "set topics.exclude = x on"}}},
		{name: "MM2's default topics.exclude", setup: checkpoint(false, map[string]string{"groups.exclude": ""}),
			group: "connect-s", topics: []string{"mm2-offsets.A.internal"}, want: []want{{TopicsExcludeKey, `set topics.exclude = .*\.replica, __.* on`}}},
		{name: "a topic only earlier releases exclude by default", setup: checkpoint(false, map[string]string{"groups.exclude": ""}),
			group: "connect-s", topics: []string{"orders-internal"}, want: []want{{TopicsExcludeKey, `set topics.exclude = mm2.*\.internal, .*\.replica, __.* on`}}},
		{name: "own topic filter", setup: checkpoint(false, map[string]string{"groups.exclude": "", "topic.filter.class": "com.example.T"}), group: "connect-s",
			notes: []want{{TopicFilterClassKey, "com.example.T"}}},
		{name: "no source connector replicates the topic", group: "connect-s", topics: []string{"orders", "payments"},
			setup: Setup{Source: []MM2Connector{{Name: "src1", Config: map[string]string{"topics": "orders"}}, {Name: "src2", Config: map[string]string{"topics": "x.*"}}},
				Checkpoint: checkpoint(false, map[string]string{"groups.exclude": ""}).Checkpoint},
			want: []want{{TopicsKey, `set topics = orders, payments on the MirrorSourceConnector "src1"`}, {TopicsKey, `set topics = x.*, payments on the MirrorSourceConnector "src2"`}}},
		{name: "another source connector replicates it", group: "connect-s", topics: []string{"orders"},
			setup: Setup{Source: []MM2Connector{{Name: "src1", Config: map[string]string{"topics": "x"}}, {Name: "src2", Config: map[string]string{}}},
				Checkpoint: checkpoint(false, map[string]string{"groups.exclude": ""}).Checkpoint}},

		// The checkpoint connector's status on its Connect cluster.
		{name: "status not read", setup: withStatus(nil, false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			notes: []want{{"", `not checked whether MirrorMaker 2's connector "cp" (config topic t on B) is running`}}},
		{name: "failed", setup: withStatus(status("FAILED"), false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			want: []want{{"", "POST /connectors/cp/restart"}}},
		{name: "stopped", setup: withStatus(status("STOPPED"), false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			want: []want{{"", "PUT /connectors/cp/resume"}}},
		{name: "every task failed", setup: withStatus(status("RUNNING", "FAILED", "FAILED"), false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			want: []want{{"", "restart"}}},
		{name: "one task of two failed", setup: withStatus(status("RUNNING", "RUNNING", "FAILED"), false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			notes: []want{{"", "1 of the 2 tasks"}}},
		{name: "no task yet", setup: withStatus(status("RUNNING"), false, map[string]string{"groups.exclude": ""}), group: "connect-s"},
		{name: "unassigned", setup: withStatus(status("UNASSIGNED"), false, map[string]string{"groups.exclude": ""}), group: "connect-s",
			notes: []want{{"", "is UNASSIGNED"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topics := tt.topics
			if topics == nil {
				topics = []string{"orders"}
			}
			var blocked, notes []Finding
			for _, f := range tr.configFindings(tt.group, topics, tt.setup) {
				if f.Blocked {
					blocked = append(blocked, f)
				} else {
					notes = append(notes, f)
				}
			}
			require.Len(t, blocked, len(tt.want), "%+v", blocked)
			for i, w := range tt.want {
				require.Equal(t, w.key, blocked[i].Key)
				require.Contains(t, blocked[i].Fix.String(), w.text)
			}
			if tt.notes != nil || len(blocked) == 0 {
				require.Len(t, notes, len(tt.notes), "%+v", notes)
			}
			for i, w := range tt.notes {
				require.Equal(t, w.key, notes[i].Key)
				require.Contains(t, notes[i].Message.String(), w.text)
			}
		})
	}
}

// Checkpoint records of the group that cannot be read (here wrapped by a Connect converter,
// as when MM2's connectors run without ByteArrayConverter) are said as such, with their count
// and why, and block the sink: no checkpoint of the group is usable and MM2 keeps writing them
// the same way. They are never aged as a checkpoint written at year 1. A record whose group
// cannot be read at all is named beside a group without checkpoints.
func TestHealthUnreadableCheckpoints(t *testing.T) {
	policy := Policy{SourceAlias: "A"}
	cp := policy.CheckpointsTopic()
	b := startCluster(t, map[string]int32{cp: 1})
	wrapped := func(group string, upstream int64) *kgo.Record {
		r := checkpointRecord(t, cp, Checkpoint{Group: group, Topic: "A.orders", UpstreamOffset: upstream, Offset: upstream})
		r.Value = []byte(`{"schema":{"type":"bytes","optional":false},"payload":"` + base64.StdEncoding.EncodeToString(r.Value) + `"}`)
		return r
	}
	produce(t, b, wrapped("connect-s", 5), wrapped("connect-s", 7), wrapped("connect-s", 9),
		checkpointRecord(t, cp, Checkpoint{Group: "app", Topic: "A.orders", UpstreamOffset: 3, Offset: 3}),
		&kgo.Record{Topic: cp, Key: []byte{0x00, 0xff, 'a'}, Value: []byte{0}})
	tr, err := NewTranslator(Config{Target: kafkaio.Options{Brokers: b}, Policy: policy})
	require.NoError(t, err)
	committed := map[TopicPartition]int64{{"orders", 0}: 10}
	for _, maxAge := range []time.Duration{0, time.Hour} {
		fs, err := tr.Health(testContext(t), "connect-s", committed, HealthCheck{MaxAge: maxAge, Setup: Setup{Looked: []string{"x: no such topic"}}})
		require.NoError(t, err)
		var blocked []Finding
		for _, f := range fs {
			require.NotContains(t, f.Message.String(), "0001-01-01")
			if f.Blocked {
				blocked = append(blocked, f)
			}
		}
		require.Len(t, blocked, 1, "--checkpoint-max-age %s: %+v", maxAge, fs)
		require.Contains(t, blocked[0].Message.String(), `none of the 3 checkpoint records of group "connect-s" in A.checkpoints.internal could be read (the last, at offset 2: `)
		require.Contains(t, blocked[0].Message.String(), "converter_wrapped")
		require.Contains(t, blocked[0].Fix.String(), "ByteArrayConverter")
	}

	fs, err := tr.Health(testContext(t), "connect-none", committed, HealthCheck{Setup: Setup{Checkpoint: []MM2Connector{{Name: "cp", Config: map[string]string{"groups.exclude": ""}}}}})
	require.NoError(t, err)
	var said bool
	for _, f := range fs {
		if strings.Contains(f.Message.String(), "holds 1 record(s) that could not be read at all") {
			said = true
			require.False(t, f.Blocked)
			require.Contains(t, f.Message.String(), "at offset 4")
		}
	}
	require.True(t, said, "%+v", fs)
}
