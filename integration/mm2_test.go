package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
)

// produceExact writes records to their own partitions, in order, keeping their timestamps and
// headers (as MirrorMaker 2 copies them).
func produceExact(t *testing.T, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// mm2Record is record k of topic/partition on A: distinct key, value, timestamp and header.
func mm2Record(topic string, partition int32, k int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition,
		Key:       fmt.Appendf(nil, "%s-%d-key-%d", topic, partition, k),
		Value:     fmt.Appendf(nil, `{"n":%d}`, k),
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(partition)*1_000_000 + k),
		Headers:   []kgo.RecordHeader{{Key: "trace", Value: fmt.Append(nil, k%7)}}}
}

// mirrorOf is MM2's copy of r on B: same timestamp, key, value and headers, on topic.
func mirrorOf(r *kgo.Record, topic string) *kgo.Record {
	c := *r
	c.Topic = topic
	return &c
}

func mm2Encoded(t *testing.T, topic string, v interface {
	Key() ([]byte, error)
	Value() ([]byte, error)
}) *kgo.Record {
	t.Helper()
	k, err := v.Key()
	require.NoError(t, err)
	val, err := v.Value()
	require.NoError(t, err)
	return &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: val}
}

// TestMigrateSinksAcrossMirrorMaker2 translates sink offsets across MirrorMaker 2. A holds sink connectors
// whose groups read `orders` (2 partitions) and `payments`; MirrorMaker 2 (played by the test,
// its records written with the project's own encoder) mirrored them to B with offset shifts,
// wrote checkpoints to B and offset syncs to A:
//   - B's copy of orders-0 starts at A's record 5 (B = A - 5); orders-1 has A's records 0..2
//     twice after an MM2 restart (B = A + 3); payments (identity policy) follows two records
//     of B's own (B = A + 2).
//
// Sinks: exact (checkpoints of the current commits), lag (a checkpoint of an older commit, a
// topics.regex and a DLQ), none (no checkpoint: MM2's default groups.exclude, refused before
// anything is stopped unless --allow-replay), stale (a checkpoint
// above the commit) and wrapped (a checkpoint a JsonConverter wrapped, its only one: refused
// before anything is stopped, with the count of records that cannot be read) under the default
// policy; ident under the identity policy. Without --allow-replay only exact succeeds; with
// --exact and --allow-replay, lag becomes exact and the missing ones get no offset. B's groups
// hold exactly the expected offsets.
func TestMigrateSinksAcrossMirrorMaker2(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	cfgA, cfgB := testConfig(a), testConfig(b)
	cfgA.AllowedGroups, cfgB.AllowedGroups = []string{"connect-.*"}, []string{"connect-.*"}
	sfx := strings.TrimPrefix(cfgA.ConfigTopic, "connect-configs-")
	alias := "A" + strings.ReplaceAll(sfx, "-", "")
	targetAlias := "B" + strings.ReplaceAll(sfx, "-", "")
	orders, payments, dlq := "orders-"+sfx, "payments-"+sfx, "dlq-"+sfx
	def := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: alias, TargetAlias: targetAlias}
	ident := mm2.Policy{Kind: mm2.PolicyIdentity, SourceAlias: alias, TargetAlias: targetAlias}
	remote := def.RemoteTopic(orders)
	require.Equal(t, alias+"."+orders, remote)
	cpTopic, syncsTopic := def.CheckpointsTopic(), def.OffsetSyncsTopic(targetAlias)
	clA, clB := newClient(t, cfgA), newClient(t, cfgB)
	clA.createTopic(orders, 2)
	clA.createTopic(payments, 1)
	clA.createTopic(syncsTopic, 1)
	clB.createTopic(remote, 2)
	clB.createTopic(payments, 1)
	clB.createTopic(cpTopic, 1)

	var onA, onB []*kgo.Record
	for k := range int64(40) {
		onA = append(onA, mm2Record(orders, 0, k), mm2Record(orders, 1, k))
	}
	for k := int64(5); k < 40; k++ {
		onB = append(onB, mirrorOf(mm2Record(orders, 0, k), remote))
	}
	for k := range int64(3) {
		onB = append(onB, mirrorOf(mm2Record(orders, 1, k), remote))
	}
	for k := range int64(40) {
		onB = append(onB, mirrorOf(mm2Record(orders, 1, k), remote))
	}
	onB = append(onB, &kgo.Record{Topic: payments, Value: []byte("b-0")}, &kgo.Record{Topic: payments, Value: []byte("b-1")})
	for k := range int64(20) {
		onA = append(onA, mm2Record(payments, 0, k))
		onB = append(onB, mirrorOf(mm2Record(payments, 0, k), payments))
	}
	for _, s := range []mm2.OffsetSync{{Topic: orders, Partition: 0, UpstreamOffset: 5, Offset: 0},
		{Topic: orders, Partition: 0, UpstreamOffset: 20, Offset: 15}, {Topic: orders, Partition: 0, UpstreamOffset: 25, Offset: 20},
		{Topic: orders, Partition: 0, UpstreamOffset: 28, Offset: 23}} {
		onA = append(onA, mm2Encoded(t, syncsTopic, s))
	}
	produceExact(t, a.brokers, onA...)
	produceExact(t, b.brokers, onB...)

	wrapped := mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-wrapped-" + sfx, Topic: remote, Partition: 0, UpstreamOffset: 16, Offset: 11})
	wrapped.Key = []byte(`"` + base64.StdEncoding.EncodeToString(wrapped.Key) + `"`)
	wrapped.Value = []byte(`"` + base64.StdEncoding.EncodeToString(wrapped.Value) + `"`)
	produceExact(t, b.brokers,
		mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-exact-" + sfx, Topic: remote, Partition: 0, UpstreamOffset: 20, Offset: 15}),
		mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-exact-" + sfx, Topic: remote, Partition: 1, UpstreamOffset: 10, Offset: 13}),
		mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-lag-" + sfx, Topic: remote, Partition: 0, UpstreamOffset: 25, Offset: 20}),
		mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-stale-" + sfx, Topic: remote, Partition: 0, UpstreamOffset: 35, Offset: 30}),
		wrapped,
		mm2Encoded(t, cpTopic, mm2.Checkpoint{Group: "connect-ident-" + sfx, Topic: payments, Partition: 0, UpstreamOffset: 10, Offset: 12}))

	// The sinks on A, created through an agent on A with their group offsets.
	sink := func(name, topicsKey, topics, topic, extra string, offsets map[int]int) string {
		var es []string
		for p := range 2 {
			if o, ok := offsets[p]; ok {
				es = append(es, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, topic, p, o))
			}
		}
		return fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"out.txt",%q:%q%s},"initial_offsets":[%s]}`,
			name, fileSink, topicsKey, topics, extra, strings.Join(es, ","))
	}
	n := func(s string) string { return s + "-" + sfx }
	agentA := startAgent(t, cfgA, agent.Options{})
	pub := newClient(t, cfgA)
	var ids []string
	for _, body := range []string{
		sink(n("exact"), "topics", orders, orders, "", map[int]int{0: 20, 1: 10}),
		sink(n("lag"), "topics.regex", "orders-.*", orders, `,"errors.deadletterqueue.topic.name":"`+dlq+`"`, map[int]int{0: 30}),
		sink(n("none"), "topics", orders, orders, "", map[int]int{0: 12}),
		sink(n("stale"), "topics", orders, orders, "", map[int]int{0: 8}),
		sink(n("wrapped"), "topics", orders, orders, "", map[int]int{0: 16}),
		sink(n("ident"), "topics", payments, payments, "", map[int]int{0: 10}),
	} {
		ids = append(ids, pub.publish(body, events.RequestOptions{}))
	}
	for _, id := range ids {
		r := pub.waitResult(id, 60*time.Second)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)
	require.Equal(t, map[string]int64{orders + "/0": 30}, clA.groupOffsets("connect-"+n("lag")))
	startAgent(t, cfgB, agent.Options{})

	options := func(policy mm2.Policy, include string, exact, allowReplay bool) migrate.MigrateOptions {
		t.Helper()
		tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: b.brokers}, Source: kafkaio.Options{Brokers: a.brokers},
			Policy: policy, Exact: exact, OffsetSyncs: &mm2.OffsetSyncsLocation{Cluster: kafkaio.Options{Brokers: a.brokers}, Topic: syncsTopic}})
		require.NoError(t, err)
		sel, err := source.NewSelection(source.SelectionFlags{Include: []string{include}})
		require.NoError(t, err)
		return migrate.MigrateOptions{
			Options: migrate.Options{
				Topics:    &source.TopicsSource{Brokers: cfgA.Brokers, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic},
				Selection: sel, Logger: testLogger(t), SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2: &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: allowReplay},
			},
			To: target.Target{Brokers: cfgB.Brokers, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic,
				ConfigTopic: cfgB.ConfigTopic, OffsetsTopic: cfgB.OffsetsTopic},
			SelectionKey: include + string(policy.Kind), Concurrency: 4, Timeout: 2 * time.Minute,
		}
	}
	run := func(policy mm2.Policy, include string, exact, allowReplay bool) *apply.Report {
		t.Helper()
		rep, _, err := migrate.Migrate(context.Background(), options(policy, include, exact, allowReplay))
		require.NoError(t, err)
		return rep
	}
	type entry struct {
		outcome, step string
		report        mm2.Report
	}
	entries := func(rep *apply.Report) map[string]entry {
		out := map[string]entry{}
		for _, e := range rep.Connectors {
			if e.Outcome == apply.OutcomeSkipped {
				out[strings.TrimSuffix(e.Name, "-"+sfx)] = entry{outcome: string(e.Outcome)}
				continue
			}
			tr, ok := e.Translation.(*apply.SinkTranslation)
			require.True(t, ok, "%s: translation %T: %s %s %s", e.Name, e.Translation, e.Outcome, e.FailedStep, e.Message)
			out[strings.TrimSuffix(e.Name, "-"+sfx)] = entry{string(e.Outcome), e.FailedStep, tr.Report}
		}
		return out
	}
	bound := func(v int64) *int64 { return &v }
	rpt := func(kind mm2.PolicyKind, parts, exact, replay, missing int, rb *int64, missingParts ...string) mm2.Report {
		if missingParts == nil {
			missingParts = []string{}
		}
		return mm2.Report{Policy: kind, Partitions: parts, Exact: exact, Replay: replay, Missing: missing, ReplayBound: rb, MissingPartitions: missingParts}
	}
	const failed = apply.StepTranslateSinkOffsets

	// Run 1, default policy, neither --exact nor --allow-replay: only exact succeeds; none is
	// refused before anything is stopped (MM2's default groups.exclude, inferred; wrapped:
	// none of its checkpoint records can be read).
	defaultSinks := "(exact|lag|none|stale|wrapped)-" + sfx

	// The plan of run 1 holds each translated sink's partitions as translated from the offsets
	// read now: on A and on B, A's committed offset, B's, the verdict and the replay bound.
	pf, _, err := migrate.Plan(context.Background(), options(def, defaultSinks, false, false))
	require.NoError(t, err)
	planned := map[string]*plan.Translation{}
	for _, fc := range pf.Connectors {
		planned[strings.TrimSuffix(fc.Name, "-"+sfx)] = fc.Translation
	}
	require.NotNil(t, planned["exact"])
	require.Equal(t, string(mm2.PolicyDefault), planned["exact"].Policy)
	require.Len(t, planned["exact"].Partitions, 2)
	for _, p := range planned["exact"].Partitions {
		require.Equal(t, "exact", p.Verdict, "%+v", p)
		require.NotNil(t, p.OffsetB, "%+v", p)
		require.Equal(t, def.SourceAlias+"."+p.OnA, p.OnB, "B's partition, renamed by the default policy")
	}
	require.Len(t, planned["lag"].Partitions, 1)
	lag := planned["lag"].Partitions[0]
	require.Equal(t, "replay", lag.Verdict, "%+v", lag)
	require.Equal(t, int64(5), *lag.ReplayBound)
	require.Nil(t, planned["none"], "refused before its offsets were translated")
	rep := run(def, defaultSinks, false, false)
	require.False(t, rep.OK())
	require.Equal(t, map[string]entry{
		"exact":   {"succeeded", "", rpt(mm2.PolicyDefault, 2, 2, 0, 0, bound(0))},
		"lag":     {"failed", failed, rpt(mm2.PolicyDefault, 1, 0, 1, 0, bound(5))},
		"none":    {outcome: "skipped"},
		"stale":   {"failed", failed, rpt(mm2.PolicyDefault, 1, 0, 0, 1, bound(0), remote+"-0")},
		"wrapped": {outcome: "skipped"},
	}, entries(rep))
	messages := map[string]string{}
	for _, e := range rep.Connectors {
		messages[strings.TrimSuffix(e.Name, "-"+sfx)] = e.Message.String()
	}
	require.Contains(t, messages["lag"], "1 of 1 partitions replay (at most 5 records delivered again)")
	require.Contains(t, messages["none"], "refused before anything was stopped (mm2)")
	require.Contains(t, messages["none"], "MirrorMaker 2's default groups.exclude (console-consumer-.*, connect-.*, __.*) excludes it")
	require.Contains(t, messages["none"], "groups.exclude = console-consumer-.*, __.*")
	require.Contains(t, messages["stale"], "stale checkpoint refused: its upstreamOffset 35 is above the committed offset 8")
	require.Contains(t, messages["wrapped"], "refused before anything was stopped (mm2)")
	require.Contains(t, messages["wrapped"], `none of the 1 checkpoint records of group "connect-`+n("wrapped")+`" in `+cpTopic+" could be read")
	require.Contains(t, messages["wrapped"], "checkpoint key: converter_wrapped")
	require.Equal(t, map[string]int64{remote + "/0": 15, remote + "/1": 13}, clB.groupOffsets("connect-"+n("exact")))
	require.Empty(t, clB.groupOffsets("connect-"+n("lag")), "a failed connector writes nothing on B")

	// Run 2: --exact finds A's record 29 on B (at 24); --allow-replay lets the missing ones
	// through without offsets. exact already succeeded and is not published again.
	rep = run(def, defaultSinks, true, true)
	for _, e := range rep.Connectors {
		require.Empty(t, e.Message, e.Name)
	}
	require.True(t, rep.OK(), "%+v", entries(rep))
	require.Equal(t, map[string]entry{
		"exact":   {"succeeded", "", rpt(mm2.PolicyDefault, 2, 2, 0, 0, bound(0))},
		"lag":     {"succeeded", "", rpt(mm2.PolicyDefault, 1, 1, 0, 0, bound(0))},
		"none":    {"succeeded", "", rpt(mm2.PolicyDefault, 1, 0, 0, 1, bound(0), remote+"-0")},
		"stale":   {"succeeded", "", rpt(mm2.PolicyDefault, 1, 0, 0, 1, bound(0), remote+"-0")},
		"wrapped": {"succeeded", "", rpt(mm2.PolicyDefault, 1, 0, 0, 1, bound(0), remote+"-0")},
	}, entries(rep))
	require.Len(t, clB.readAll(cfgB.RequestTopic), 1+1+4, "the plan asked B's agent to plan exact (a dry run), run 1 published exact only, run 2 the four others")
	require.Equal(t, map[string]int64{remote + "/0": 15, remote + "/1": 13}, clB.groupOffsets("connect-"+n("exact")))
	require.Equal(t, map[string]int64{remote + "/0": 25}, clB.groupOffsets("connect-"+n("lag")))
	for _, s := range []string{"none", "stale", "wrapped"} {
		require.Empty(t, clB.groupOffsets("connect-"+n(s)), s)
	}
	// Configs on B: topics renamed, topics.regex rewritten, the DLQ untouched.
	configB := clB.live(cfgB.ConfigTopic)
	require.Contains(t, configB["connector-"+n("exact")].Value, `"topics":"`+remote+`"`)
	lagConfig := configB["connector-"+n("lag")].Value
	require.Contains(t, lagConfig, `"topics.regex":"`+alias+`\\.(?:orders-.*)"`)
	require.Contains(t, lagConfig, `"errors.deadletterqueue.topic.name":"`+dlq+`"`)

	// Run 3, identity policy: payments keeps its name; the checkpoint of the current commit is exact.
	rep = run(ident, n("ident"), false, false)
	require.True(t, rep.OK(), "%+v", entries(rep))
	require.Equal(t, map[string]entry{"ident": {"succeeded", "", rpt(mm2.PolicyIdentity, 1, 1, 0, 0, bound(0))}}, entries(rep))
	require.Equal(t, map[string]int64{payments + "/0": 12}, clB.groupOffsets("connect-"+n("ident")))
	require.Contains(t, clB.live(cfgB.ConfigTopic)["connector-"+n("ident")].Value, `"topics":"`+payments+`"`)
}
