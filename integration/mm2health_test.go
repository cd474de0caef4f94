package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
)

// TestMigrateMM2Health: before anything is stopped, a sink moved across MirrorMaker 2 whose
// group MM2 will not checkpoint is refused with the MM2 setting to change, instead of waiting
// for a checkpoint that never comes. Each case is its own MM2 flow (its own source alias, so
// its own checkpoints topic and MM2 config) over the same topic of A, mirrored to B:
//   - exclude: MM2 runs as connectors on B's Connect cluster; the checkpoint connector keeps
//     the default groups.exclude, which excludes connect-<name>;
//   - syncs: dedicated MM2 (its config in mm2-configs.<alias>.internal) with
//     emit.offset-syncs.enabled=false (Kafka 3.9+, KIP-1031): no offset syncs, no checkpoints;
//   - inferred: no MM2 config readable anywhere, other groups checkpointed, none for this one;
//   - stale: MM2 checkpointed the group two hours ago and not since, while A's group committed
//     further and its last consumed record is old, past --checkpoint-max-age 1h; beside it,
//     fresh: the same old checkpoint, but the group just consumed a new record: waiting is
//     right, it is not refused (its translation then says replay);
//   - healthy: the group included, its checkpoint current: the sink moves;
//   - lookahead: groups.exclude connect-(?!keep-).*, a Java regex Go's regexp cannot compile,
//     which excludes the group: refused, as MirrorMaker 2 reads it;
//   - unevaluable: groups.exclude with a Java construct that cannot be evaluated here as Java
//     would (\p{IsAlphabetic}): refused, with the pattern and why, never passed in silence;
//   - topics: the checkpoint connector's topics leave the sink's topic out: no checkpoint;
//   - unreadable: every checkpoint record of the group was written through a Connect
//     converter: refused, with their count and why;
//   - failed: the checkpoint connector is FAILED on B's Connect (its REST API given).
//
// With --allow-replay a refusal becomes a warning and the translation does not wait.
func TestMigrateMM2Health(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	cfgA, cfgB := testConfig(a), testConfig(b)
	cfgA.AllowedGroups, cfgB.AllowedGroups = []string{"connect-.*"}, []string{"connect-.*"}
	sfx := strings.TrimPrefix(cfgA.ConfigTopic, "connect-configs-")
	tag := strings.ReplaceAll(sfx, "-", "")
	targetAlias := "B" + tag
	orders, recent := "orders-"+sfx, "recent-"+sfx
	startAgent(t, cfgB, agent.Options{}) // it creates B's Connect topics, where MM2's connectors are
	clA, clB := newClient(t, cfgA), newClient(t, cfgB)
	clA.createTopic(orders, 1)
	clA.createTopic(recent, 1)
	var onA []*kgo.Record
	for k := range int64(40) {
		onA = append(onA, mm2Record(orders, 0, k)) // timestamps of 2023: old
	}
	for k := range int64(20) {
		r := mm2Record(recent, 0, k)
		r.Timestamp = time.Now() // just produced and consumed
		onA = append(onA, r)
	}
	produceExact(t, a.brokers, onA...)

	policy := func(c string) mm2.Policy {
		return mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: "X" + c + tag, TargetAlias: targetAlias}
	}
	n := func(s string) string { return s + "-" + sfx }
	// MM2's connector configs, as Connect stores them in a config topic.
	mm2Config := func(topic, name, class, alias string, extra map[string]string) {
		props := map[string]string{"connector.class": "org.apache.kafka.connect.mirror." + class, "name": name,
			"source.cluster.alias": alias, "target.cluster.alias": targetAlias, "source.cluster.bootstrap.servers": strings.Join(a.brokers, ","),
			"target.cluster.bootstrap.servers": strings.Join(b.brokers, ","), "topics": ".*"}
		for k, v := range extra {
			props[k] = v
		}
		v, err := json.Marshal(map[string]any{"properties": props})
		require.NoError(t, err)
		clB.produce(topic, kafka.Message{Key: []byte("connector-" + name), Value: v})
	}
	fixed := map[string]string{"groups.exclude": "console-consumer-.*, __.*"}
	checkpoint := func(c string, group, topic string, upstream, offset int64, at time.Time) *kgo.Record {
		p := policy(c)
		r := mm2Encoded(t, p.CheckpointsTopic(), mm2.Checkpoint{Group: group, Topic: p.RemoteTopic(topic), Partition: 0, UpstreamOffset: upstream, Offset: offset})
		r.Timestamp = at
		return r
	}
	flows := []string{"exclude", "syncs", "inferred", "stale", "healthy", "lookahead", "unevaluable", "topics", "unreadable", "failed"}
	for _, c := range flows {
		clB.createTopic(policy(c).CheckpointsTopic(), 1)
		clB.createTopic(policy(c).RemoteTopic(orders), 1)
	}
	clB.createTopic(policy("stale").RemoteTopic(recent), 1)
	now := time.Now()

	// exclude: MM2's connectors on B's Connect cluster, the checkpoint connector with MM2's
	// default group filter; MM2 checkpoints other groups.
	mm2Config(cfgB.ConfigTopic, "mm2-source-exclude-"+sfx, "MirrorSourceConnector", policy("exclude").SourceAlias, nil)
	mm2Config(cfgB.ConfigTopic, "mm2-checkpoint-exclude-"+sfx, "MirrorCheckpointConnector", policy("exclude").SourceAlias, nil)
	// syncs: dedicated MM2, the group included, offset syncs off.
	dedicated := "mm2-configs." + policy("syncs").SourceAlias + ".internal"
	clB.createTopic(dedicated, 1)
	mm2Config(dedicated, "MirrorSourceConnector", "MirrorSourceConnector", policy("syncs").SourceAlias, map[string]string{"emit.offset-syncs.enabled": "false"})
	mm2Config(dedicated, "MirrorCheckpointConnector", "MirrorCheckpointConnector", policy("syncs").SourceAlias, fixed)
	// stale and healthy: connectors on B's Connect cluster that include connect-.* groups.
	for _, c := range []string{"stale", "healthy", "unreadable", "failed"} {
		mm2Config(cfgB.ConfigTopic, "mm2-checkpoint-"+c+"-"+sfx, "MirrorCheckpointConnector", policy(c).SourceAlias, fixed)
	}
	mm2Config(cfgB.ConfigTopic, "mm2-checkpoint-lookahead-"+sfx, "MirrorCheckpointConnector", policy("lookahead").SourceAlias,
		map[string]string{"groups.exclude": "console-consumer-.*, connect-(?!keep-).*"})
	mm2Config(cfgB.ConfigTopic, "mm2-checkpoint-unevaluable-"+sfx, "MirrorCheckpointConnector", policy("unevaluable").SourceAlias,
		map[string]string{"groups.exclude": `connect-\p{IsAlphabetic}+-keep`})
	mm2Config(cfgB.ConfigTopic, "mm2-checkpoint-topics-"+sfx, "MirrorCheckpointConnector", policy("topics").SourceAlias,
		map[string]string{"groups.exclude": "", "topics": "payments-.*"})
	wrapped := checkpoint("unreadable", "connect-"+n("unreadable"), orders, 20, 20, now)
	wrapped.Value = fmt.Appendf(nil, `{"schema":{"type":"bytes","optional":false},"payload":%q}`, base64.StdEncoding.EncodeToString(wrapped.Value))
	produceExact(t, b.brokers,
		checkpoint("exclude", "app-"+sfx, orders, 5, 5, now),
		checkpoint("inferred", "app-"+sfx, orders, 5, 5, now),
		checkpoint("stale", "connect-"+n("stale"), orders, 10, 10, now.Add(-2*time.Hour)),
		checkpoint("stale", "connect-"+n("fresh"), recent, 10, 10, now.Add(-2*time.Hour)),
		checkpoint("healthy", "connect-"+n("healthy"), orders, 20, 20, now),
		wrapped, checkpoint("unreadable", "app-"+sfx, orders, 5, 5, now))

	// The sinks on A, created through an agent on A with their group offsets.
	agentA := startAgent(t, cfgA, agent.Options{})
	pub := newClient(t, cfgA)
	var ids []string
	for _, s := range []struct {
		name, topic string
		offset      int
	}{{"exclude", orders, 20}, {"syncs", orders, 20}, {"inferred", orders, 20}, {"stale", orders, 20}, {"fresh", recent, 20}, {"healthy", orders, 20},
		{"lookahead", orders, 20}, {"unevaluable", orders, 20}, {"topics", orders, 20}, {"unreadable", orders, 20}, {"failed", orders, 20}} {
		ids = append(ids, pub.publish(fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"out.txt","topics":%q},`+
			`"initial_offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":%d}}]}`,
			n(s.name), fileSink, s.topic, s.topic, s.offset), events.RequestOptions{}))
	}
	for _, id := range ids {
		r := pub.waitResult(id, 60*time.Second)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)

	// B's Connect REST API, for the status of MM2's checkpoint connector of flow "failed"; B has
	// the sink's plugin and takes its config.
	connectB := &connectStub{root: `{"version":"4.3.1","commit":"b","kafka_cluster_id":"cluster-B"}`,
		handle: func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.URL.Path == "/connector-plugins":
				fmt.Fprintf(w, `[{"class":%q,"type":"sink","version":"4.3.1"}]`, fileSink)
			case strings.HasSuffix(r.URL.Path, "/config/validate"):
				fmt.Fprintf(w, `{"name":%q,"error_count":0,"groups":[],"configs":[]}`, fileSink)
			case r.URL.Path == "/connectors/mm2-checkpoint-failed-"+sfx+"/status":
				fmt.Fprint(w, `{"name":"mm2-checkpoint-failed","connector":{"state":"FAILED","worker_id":"b:8083","trace":"org.apache.kafka.common.errors.TimeoutException: list consumer groups\n\tat x"},"tasks":[],"type":"source"}`)
			default:
				return false
			}
			return true
		}}
	connectURL := connectB.serve(t)

	// translatorLogs is what the last run's translator logged: a wait for checkpoints logs
	// "wait for mm2 checkpoints" as it starts.
	var translatorLogs *lockedBuffer
	run := func(c, include string, allowReplay bool, wait time.Duration) map[string]*apply.Entry {
		t.Helper()
		p := policy(c)
		translatorLogs = &lockedBuffer{}
		tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: b.brokers}, Source: kafkaio.Options{Brokers: a.brokers},
			Policy: p, Wait: wait, PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(translatorLogs, nil))})
		require.NoError(t, err)
		sel, err := source.NewSelection(source.SelectionFlags{Include: []string{include}})
		require.NoError(t, err)
		rep, _, err := migrate.Migrate(context.Background(), migrate.MigrateOptions{
			Options: migrate.Options{
				Topics:    &source.TopicsSource{Brokers: cfgA.Brokers, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic},
				Selection: sel, Logger: testLogger(t), SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2: &fleet.MM2{Translator: tr, Policy: p, AllowReplay: allowReplay, CheckpointMaxAge: time.Hour},
			},
			To: target.Target{Brokers: cfgB.Brokers, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic,
				ConfigTopic: cfgB.ConfigTopic, OffsetsTopic: cfgB.OffsetsTopic, ConnectURL: map[bool]string{true: connectURL}[c == "failed"]},
			SelectionKey: include + fmt.Sprint(allowReplay), Concurrency: 4, Timeout: 2 * time.Minute,
		})
		require.NoError(t, err)
		out := map[string]*apply.Entry{}
		for _, e := range rep.Connectors {
			out[strings.TrimSuffix(e.Name, "-"+sfx)] = e
		}
		return out
	}
	// refused checks that e was refused before anything was stopped or published, for the MM2
	// setting key, and returns its hazard.
	refused := func(t *testing.T, e *apply.Entry, key string) hazard.Hazard {
		t.Helper()
		require.Equal(t, apply.OutcomeSkipped, e.Outcome, "%s: %s %s", e.Name, e.FailedStep, e.Message)
		hs := refusals(mm2Hazards(e))
		require.Len(t, hs, 1, "%+v", e.Hazards)
		h := hs[0]
		t.Logf("%s: %s", e.Name, h)
		require.Equal(t, hazard.HazardMM2, h.Check)
		require.Equal(t, key, h.Key)
		require.True(t, h.Refuse)
		require.Contains(t, e.Message.String(), "refused before anything was stopped (mm2)")
		require.Empty(t, clB.groupOffsets("connect-"+e.Name), "nothing written on B")
		return h
	}

	t.Run("default groups.exclude", func(t *testing.T) {
		h := refused(t, run("exclude", n("exclude"), false, 20*time.Second)["exclude"], "groups.exclude")
		require.Contains(t, h.Message.String(), `"mm2-checkpoint-exclude-`+sfx+`"`)
		require.Contains(t, h.Message.String(), "console-consumer-.*, connect-.*, __.*")
		require.Contains(t, h.Fix.String(), `groups.exclude = console-consumer-.*, __.*`)
		require.Contains(t, h.Fix.String(), policy("exclude").SourceAlias+"->"+targetAlias+".groups.exclude")
	})
	t.Run("emit.offset-syncs.enabled=false", func(t *testing.T) {
		h := refused(t, run("syncs", n("syncs"), false, 20*time.Second)["syncs"], "emit.offset-syncs.enabled")
		require.Contains(t, h.Message.String(), dedicated)
		require.Contains(t, h.Fix.String(), policy("syncs").SourceAlias+"->"+targetAlias+".emit.offset-syncs.enabled")
	})
	t.Run("no MM2 config: inferred from the checkpoints", func(t *testing.T) {
		h := refused(t, run("inferred", n("inferred"), false, 20*time.Second)["inferred"], "groups.exclude")
		require.Contains(t, h.Message.String(), "no checkpoint at all")
		require.Contains(t, h.Fix.String(), `groups.exclude = console-consumer-.*, __.*`)
		require.Contains(t, h.Fix.String(), policy("inferred").SourceAlias+"->"+targetAlias+".groups.exclude")
	})
	t.Run("checkpoints past --checkpoint-max-age", func(t *testing.T) {
		es := run("stale", n("(stale|fresh)"), false, 0)
		h := refused(t, es["stale"], "")
		require.Contains(t, h.Message.String(), "older than CheckpointMaxAge 1h0m0s")
		fresh := es["fresh"]
		for _, h := range fresh.Hazards {
			require.False(t, h.Refuse, "%+v", h)
		}
		require.Equal(t, apply.OutcomeFailed, fresh.Outcome, "waited for, then translated with replay")
		require.Equal(t, apply.StepTranslateSinkOffsets, fresh.FailedStep)
	})
	t.Run("healthy moves", func(t *testing.T) {
		e := run("healthy", n("healthy"), false, 20*time.Second)["healthy"]
		hs := mm2Hazards(e)
		require.Empty(t, refusals(hs))
		require.Len(t, hs, 1, "one warning: the checkpoint connector's status was not read")
		require.Contains(t, hs[0].Message.String(), `not checked whether MirrorMaker 2's connector "mm2-checkpoint-healthy-`+sfx+`"`)
		require.Contains(t, hs[0].Message.String(), "give ToConnectURL")
		require.Equal(t, apply.OutcomeSucceeded, e.Outcome, "%s %s", e.FailedStep, e.Message)
		require.Equal(t, map[string]int64{policy("healthy").RemoteTopic(orders) + "/0": 20}, clB.groupOffsets("connect-"+n("healthy")))
	})
	t.Run("lookahead groups.exclude, as Java reads it", func(t *testing.T) {
		h := refused(t, run("lookahead", n("lookahead"), false, 20*time.Second)["lookahead"], "groups.exclude")
		require.Contains(t, h.Message.String(), "connect-(?!keep-).*")
		require.Contains(t, h.Fix.String(), "groups.exclude = console-consumer-.*")
	})
	t.Run("a pattern that cannot be evaluated", func(t *testing.T) {
		h := refused(t, run("unevaluable", n("unevaluable"), false, 20*time.Second)["unevaluable"], "groups.exclude")
		require.Contains(t, h.Message.String(), `cannot tell whether its groups.exclude (connect-\p{IsAlphabetic}+-keep) matches group "connect-`+n("unevaluable")+`"`)
		require.Contains(t, h.Message.String(), `the property \p{IsAlphabetic}`)
	})
	t.Run("the checkpoint connector's topics leave the topic out", func(t *testing.T) {
		h := refused(t, run("topics", n("topics"), false, 20*time.Second)["topics"], "topics")
		require.Contains(t, h.Message.String(), "leaves out topic "+orders)
		require.Contains(t, h.Fix.String(), "topics = payments-.*, "+strings.ReplaceAll(orders, "-", "-"))
	})
	t.Run("checkpoint records that cannot be read", func(t *testing.T) {
		h := refused(t, run("unreadable", n("unreadable"), false, 20*time.Second)["unreadable"], "")
		require.Contains(t, h.Message.String(), `none of the 1 checkpoint records of group "connect-`+n("unreadable")+`" in `+policy("unreadable").CheckpointsTopic()+" could be read")
		require.Contains(t, h.Message.String(), "converter_wrapped")
		require.NotContains(t, h.Message.String(), "0001-01-01")
		require.Contains(t, h.Fix.String(), "ByteArrayConverter")
	})
	t.Run("the checkpoint connector FAILED on B", func(t *testing.T) {
		h := refused(t, run("failed", n("failed"), false, 20*time.Second)["failed"], "")
		require.Contains(t, h.Message.String(), `"mm2-checkpoint-failed-`+sfx+`" (config topic `+cfgB.ConfigTopic+` on B) is FAILED`)
		require.Contains(t, h.Message.String(), "TimeoutException: list consumer groups")
		require.Contains(t, h.Fix.String(), "/restart")
		require.NotEmpty(t, connectB.called("GET /connectors/mm2-checkpoint-failed-"+sfx+"/status"))
	})
	t.Run("--allow-replay: a warning, and no wait", func(t *testing.T) {
		e := run("exclude", n("exclude"), true, 20*time.Second)["exclude"]
		require.NotContains(t, translatorLogs.String(), "wait for mm2 checkpoints", "no wait for a checkpoint that will not come")
		hs := mm2Hazards(e)
		require.Len(t, hs, 2, "%+v", hs)
		require.Equal(t, "groups.exclude", hs[1].Key)
		require.False(t, hs[0].Refuse)
		require.False(t, hs[1].Refuse)
		require.Equal(t, apply.OutcomeSucceeded, e.Outcome, "%s %s", e.FailedStep, e.Message)
		require.Empty(t, clB.groupOffsets("connect-"+n("exclude")), "missing: no offset on B")
	})
}

// refusals are the hazards of hs that refuse.
func refusals(hs []hazard.Hazard) []hazard.Hazard {
	var out []hazard.Hazard
	for _, h := range hs {
		if h.Refuse {
			out = append(out, h)
		}
	}
	return out
}

// mm2Hazards are e's MirrorMaker 2 hazards, the other checks' warnings aside (the plugin
// check's, without B's REST API here).
func mm2Hazards(e *apply.Entry) []hazard.Hazard {
	var out []hazard.Hazard
	for _, h := range e.Hazards {
		if h.Check == hazard.HazardMM2 {
			out = append(out, h)
		}
	}
	return out
}
