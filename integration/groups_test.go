package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// OFFSETAGENT_ALLOWED_GROUPS bounds the consumer groups a sink request may wipe and rewrite:
// consumer.override.group.id outside it fails at validate_config, naming the group and the
// variable, and the group keeps its offsets. The default is connect-.*.
func TestAllowedGroups(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	a := startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	cl.createTopic("payments", 2)
	commitGroup(t, cl, "billing-service", map[int]int64{0: 40, 1: 41}, "payments")
	commitGroup(t, cl, "connect-audit-sink", map[int]int64{0: 7}, "payments")

	sink := func(name, group string) string {
		override := ""
		if group != "" {
			override = `,"consumer.override.group.id":"` + group + `"`
		}
		return `{"name":"` + name + `","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"payments"` + override + `},
		  "initial_offsets":[{"partition":{"kafka_topic":"payments","kafka_partition":0},"offset":{"kafka_offset":1}}]}`
	}

	id := cl.publish(sink("steal", "billing-service"), events.RequestOptions{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "validate_config", res.Data.FailedStep)
	require.Equal(t, 400, res.Data.ErrorCode)
	require.Contains(t, res.Data.Message, `"billing-service"`)
	require.Contains(t, res.Data.Message, "OFFSETAGENT_ALLOWED_GROUPS")
	require.Equal(t, map[string]int64{"payments/0": 40, "payments/1": 41}, cl.groupOffsets("billing-service"))
	require.Empty(t, cl.readAll(cfg.ConfigTopic), "config topic untouched")

	// The default group and an override inside connect-.* are allowed.
	id = cl.publish(sink("audit-sink", ""), events.RequestOptions{})
	res = cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, map[string]int64{"payments/0": 1}, cl.groupOffsets("connect-audit-sink"))
	id = cl.publish(sink("renamed-sink", "connect-renamed"), events.RequestOptions{})
	res = cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, 2.0, a.metric(t, "offsetagent_requests_total", "result", "succeeded"))
}

// A configured list replaces the default: each regexp matches the whole group id.
func TestAllowedGroupsConfigured(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.AllowedGroups = []string{"team-a-.*", "connect-.*"}
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	cl.createTopic("payments", 1)

	tests := []struct {
		name, group, want string
	}{
		{name: "matches the first pattern", group: "team-a-sink", want: events.TypeCreateSucceeded},
		{name: "matches the second pattern", group: "connect-x", want: events.TypeCreateSucceeded},
		{name: "a pattern matches the whole id, not a part", group: "xteam-a-sink", want: events.TypeCreateFailed},
		{name: "outside every pattern", group: "team-b-sink", want: events.TypeCreateFailed},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"name":"s` + strings.Repeat("x", i) + `","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"payments","consumer.override.group.id":"` + tt.group + `"},
			  "initial_offsets":[{"partition":{"kafka_topic":"payments","kafka_partition":0},"offset":{"kafka_offset":3}}]}`
			res := cl.waitResult(cl.publish(body, events.RequestOptions{}), resultWait)
			require.Equal(t, tt.want, res.Type, res.Data.Message)
			if tt.want == events.TypeCreateFailed {
				require.Equal(t, "validate_config", res.Data.FailedStep)
				require.Contains(t, res.Data.Message, "team-a-.*")
			}
		})
	}
}

// A sink request whose group belongs to another connector, or has live members, is refused at
// validate_config with 409 naming the owner (or the members), before anything is wiped, dry
// run or not: consumer.override.group.id naming a stopped connector's group must not take its
// offsets.
func TestSinkGroupOwnedOrLive(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	cl.createTopic("orders", 2)

	sink := func(name, group, extra string) string {
		override := ""
		if group != "" {
			override = `,"consumer.override.group.id":"` + group + `"`
		}
		return `{"name":"` + name + `","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders"` + override + `}` + extra + `,
		  "initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":1}}]}`
	}
	// orders-sink exists, stopped, with its group's offsets committed.
	res := cl.waitResult(cl.publish(`{"name":"orders-sink","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders"},"initial_state":"STOPPED",
	  "initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":40}},{"partition":{"kafka_topic":"orders","kafka_partition":1},"offset":{"kafka_offset":41}}]}`,
		events.RequestOptions{}), resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	owned := map[string]int64{"orders/0": 40, "orders/1": 41}
	require.Equal(t, owned, cl.groupOffsets("connect-orders-sink"))

	// A running sink task elsewhere: a live member of connect-live.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: "orders", GroupID: "connect-live", MaxWait: 100 * time.Millisecond})
	t.Cleanup(func() { _ = r.Close() })
	fetchCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _, _ = r.FetchMessage(fetchCtx) }()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dg, err := cl.kc.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{"connect-live"}})
		return err == nil && len(dg.Groups) == 1 && len(dg.Groups[0].Members) == 1
	}, 20*time.Second, 100*time.Millisecond)
	commitBefore := cl.groupOffsets("connect-live")

	tests := []struct {
		name, body string
		dryRun     bool
		want       []string
	}{
		{name: "another connector's group", body: sink("other", "connect-orders-sink", ""), want: []string{"connect-orders-sink", "orders-sink"}},
		{name: "another connector's group, dry run", body: sink("other-dry", "connect-orders-sink", ""), dryRun: true, want: []string{"connect-orders-sink", "orders-sink"}},
		{name: "a group with a live member", body: sink("live", "", ""), want: []string{"connect-live", "1 live member", "Stable"}},
		{name: "a group with a live member, dry run", body: sink("other-live", "connect-live", ""), dryRun: true, want: []string{"connect-live", "1 live member"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cl.waitResult(cl.publish(tt.body, events.RequestOptions{DryRun: tt.dryRun}), resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
			require.Equal(t, "validate_config", res.Data.FailedStep)
			require.Equal(t, 409, res.Data.ErrorCode, res.Data.Message)
			for _, w := range tt.want {
				require.Contains(t, res.Data.Message, w)
			}
			require.Equal(t, owned, cl.groupOffsets("connect-orders-sink"), "the owner's offsets are untouched")
			require.Equal(t, commitBefore, cl.groupOffsets("connect-live"))
		})
	}
	// A sink of its own group, and a new name's default group, still go through.
	res = cl.waitResult(cl.publish(sink("fresh-sink", "connect-fresh-sink", ""), events.RequestOptions{}), resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
}
