package integration

import (
	"strings"
	"testing"

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
