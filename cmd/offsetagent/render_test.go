package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

func TestWriteTableShowsHazardWarnings(t *testing.T) {
	e := &apply.Entry{Name: "inventory", TargetName: "inventory", Outcome: apply.OutcomePlanned,
		Hazards: []hazard.Hazard{{Check: hazard.HazardFamilyState, Key: "topic.heartbeat.prefix", Message: fleet.Plain("the heartbeat topic is not on B"), Fix: fleet.Plain("create it")}}}
	refusal := hazard.Hazard{Check: hazard.HazardPlugin, Message: fleet.Plain("B lacks the plugin"), Refuse: true}
	skipped := &apply.Entry{Name: "orders", TargetName: "orders", Outcome: apply.OutcomeSkipped,
		Message: fleet.Textf("refused before anything was stopped (plugin): %v", refusal), Hazards: []hazard.Hazard{refusal}}
	var many []*apply.Entry
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"} {
		many = append(many, &apply.Entry{Name: name, TargetName: name, Outcome: apply.OutcomePlanned,
			Hazards: []hazard.Hazard{{Check: hazard.HazardPlugin, Message: fleet.Plain("not checked"), Fix: fleet.Textf("give %s", fleet.ToConnectURL)}}})
	}
	var b strings.Builder
	require.NoError(t, writeTable(&b, &apply.Report{Connectors: append([]*apply.Entry{e, skipped}, many...)}))
	out := b.String()
	require.Contains(t, out, "warning: inventory: family_state: topic.heartbeat.prefix: the heartbeat topic is not on B; create it")
	require.Contains(t, out, "warning: c1, c2, c3, c4, c5 and 2 more: plugin: not checked; give --to-connect-url\n")
	require.Equal(t, 1, strings.Count(out, "not checked"), "one line for the same warning of many connectors:\n%s", out)
	require.Equal(t, 1, strings.Count(out, "B lacks the plugin"), "a refusal is the entry's message, not also a warning:\n%s", out)
}

// The settings rewritten for B are a line per reason, the keys of one transform on one line,
// and only for a connector with a body.
func TestWriteTableRewriteLines(t *testing.T) {
	s := func(v string) *string { return &v }
	why := "this transform gives each record back its topic's name on A"
	rws := []plan.Edit{
		{Key: "topics", OnA: s("orders"), OnB: s("A.orders"), Why: "MirrorMaker 2's default policy names A's topics so on B"},
		{Key: "transforms", OnA: s("route"), OnB: s("restoreTopicNamesOfA,route"), Why: why},
		{Key: "transforms.restoreTopicNamesOfA.type", OnB: s("org.apache.kafka.connect.transforms.RegexRouter"), Why: why},
		{Key: "transforms.restoreTopicNamesOfA.regex", OnB: s(`A\.(.*)`), Why: why},
	}
	rep := &apply.Report{Connectors: []*apply.Entry{
		{Name: "snk", TargetName: "snk", Outcome: apply.OutcomePlanned, Body: &apply.Body{}, Rewrites: rws},
		{Name: "skipped", TargetName: "skipped", Outcome: apply.OutcomeSkipped, Rewrites: rws},
	}}
	var table bytes.Buffer
	require.NoError(t, writeTable(&table, rep))
	require.Contains(t, table.String(), "\nrewritten for B: snk: topics: \"orders\" -> \"A.orders\": MirrorMaker 2's default policy names A's topics so on B\n")
	require.Contains(t, table.String(), "\nrewritten for B: snk: "+
		`transforms: "route" -> "restoreTopicNamesOfA,route"; `+
		`transforms.restoreTopicNamesOfA.type: (not set) -> "org.apache.kafka.connect.transforms.RegexRouter"; `+
		`transforms.restoreTopicNamesOfA.regex: (not set) -> "A\\.(.*)": `+why+"\n")
	require.NotContains(t, table.String(), "rewritten for B: skipped")
}

func TestWriteSummary(t *testing.T) {
	sinkPart := jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "A.orders"}}
	src := &cutover.Partition{Partition: jsonvalue.Map{{Key: "filename", Value: "f"}}, Verdict: cutover.VerdictWaiting}
	sink := &cutover.Partition{Partition: sinkPart, Verdict: cutover.VerdictMismatch, Detail: fleet.Plain("group on B committed 5, before the 8 placed")}
	c := &cutover.Cutover{MigrationID: "m-1", Connectors: []*cutover.Connector{
		{Name: "src", TargetName: "src-b", Type: "source", Partitions: []*cutover.Partition{src}},
		{Name: "sink", TargetName: "sink-b", Type: "sink", Partitions: []*cutover.Partition{sink}},
	}}
	var out bytes.Buffer
	require.NoError(t, writeSummary(&out, c))
	require.Equal(t, "cutover of migration m-1: 2 partitions of 2 connectors: 0 verified, 1 waiting, 1 mismatch, 0 unordered, 0 replay\n"+
		`mismatch: sink-b {"kafka_partition":0,"kafka_topic":"A.orders"}: group on B committed 5, before the 8 placed`+"\n"+
		"waiting: B has committed nothing new yet for 1 partitions (src-b): run migrate verify REPORT again once they have traffic\n", out.String())

	// A replay is listed apart from the mismatches.
	sink.Verdict, sink.Detail = cutover.VerdictVerified, fleet.Text{}
	src.Verdict, src.Detail = cutover.VerdictReplay, fleet.Plain("B produces again 3 records A produced past the offset placed")
	out.Reset()
	require.NoError(t, writeSummary(&out, c))
	require.Equal(t, "cutover of migration m-1: 2 partitions of 2 connectors: 1 verified, 0 waiting, 0 mismatch, 0 unordered, 1 replay\n"+
		`replay: src-b {"filename":"f"}: B produces again 3 records A produced past the offset placed`+"\n", out.String())
}

func TestWriteVerified(t *testing.T) {
	var out bytes.Buffer
	ok, err := writeVerified(&out, []strimzi.Verified{{Name: "a", OK: true, Message: "RUNNING with the 1 offsets placed"},
		{Name: "b", Message: "not on B: apply its manifest (the operator creates it)"}})
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, "CONNECTOR  OK   DETAIL\na          yes  RUNNING with the 1 offsets placed\nb          no   not on B: apply its manifest (the operator creates it)\n"+
		"2 connectors: 1 run with the offsets placed, 1 do not\n", out.String())
}

// While the verification waits, it says what for and for how long, then the counts as it goes.
func TestVerifyProgressLines(t *testing.T) {
	counts := map[cutover.Verdict]int{cutover.VerdictWaiting: 1}
	var out bytes.Buffer
	p := verifyProgress(&out)
	p(cutover.Waiting{First: true, Timeout: time.Hour, Every: time.Nanosecond, Counts: counts, Open: 1, Total: 1,
		Connectors: []string{"src-b"}, OffsetsTopics: []string{"connect-offsets"}})
	p(cutover.Waiting{Elapsed: 1400 * time.Millisecond, Timeout: time.Hour, Counts: counts})
	require.Equal(t, "verifying the cutover on B: waiting up to 1h0m0s for 1 of 1 partitions (src-b) to move past the offsets placed: "+
		"sources' new offsets in B's topic connect-offsets (Connect commits them every offset.flush.interval.ms, 60s by default); "+
		"now 0 verified, 1 waiting, 0 mismatch, 0 unordered, 0 replay; the counts every 1ns\n"+
		"cutover verification: 1s of 1h0m0s: 0 verified, 1 waiting, 0 mismatch, 0 unordered, 0 replay\n", out.String())
}

// While results are awaited, the line says how many are in, how many awaited and how long is
// left; with none in yet, where they are expected from.
func TestWaitLine(t *testing.T) {
	require.Equal(t, `waiting for results on topic "results": 0 of 1 in, 1 awaited, 5s left; none yet: B's agents must write their results to this topic (their OFFSETAGENT_RESULT_TOPIC)`,
		waitLine(apply.Wait{Topic: "results", Awaited: 1, Left: 5 * time.Second}))
	require.Equal(t, `waiting for results on topic "results": 2 of 3 in, 1 awaited, no deadline`, waitLine(apply.Wait{Topic: "results", In: 2, Awaited: 1}))
}
