package agent

import (
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
)

// OFFSETAGENT_ALLOWED_GROUPS: each regexp matches a whole group id; empty means connect-.*; an
// invalid regexp is a configuration error naming the variable.
func TestGroupsPattern(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		match   []string
		refuse  []string
	}{
		{name: "default", match: []string{"connect-a", "connect-"}, refuse: []string{"billing", "xconnect-a"}},
		{name: "blank entries are the default", allowed: []string{" ", ""}, match: []string{"connect-a"}, refuse: []string{"billing"}},
		{name: "several, whole id", allowed: []string{"team-a-.*", " connect-.* "}, match: []string{"team-a-x", "connect-b"}, refuse: []string{"xteam-a-x", "team-b"}},
		{name: "alternation stays inside its pattern", allowed: []string{"a|b"}, match: []string{"a", "b"}, refuse: []string{"ab", "connect-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{AllowedGroups: tt.allowed}
			re, err := c.GroupsPattern()
			require.NoError(t, err)
			for _, g := range tt.match {
				require.True(t, re.MatchString(g), g)
			}
			for _, g := range tt.refuse {
				require.False(t, re.MatchString(g), g)
			}
		})
	}
	c := &Config{AllowedGroups: []string{"connect-.*", "team-("}}
	_, err := c.GroupsPattern()
	require.ErrorContains(t, err, "OFFSETAGENT_ALLOWED_GROUPS")
}

// OFFSETAGENT_REQUEST_COMPRESSION: empty is the default codec, each of Kafka's codecs by name,
// anything else a configuration error naming the variable.
func TestRequestCompression(t *testing.T) {
	valid := Config{Brokers: []string{"b:9092"}, RequestTopic: "r", ResultTopic: "s", GroupID: "g", ConfigTopic: "c",
		OffsetsTopic: "o", IntentTopic: "i", Concurrency: 1, MaxRequestBytes: 1 << 20, RequestTopicPartitions: 1}
	require.NoError(t, valid.Validate())
	tests := []struct {
		name  string
		value events.Compression
		codec kafka.Compression
		err   string
	}{
		{name: "empty is the default", value: "", codec: kafka.Snappy},
		{name: "none", value: "none", codec: 0},
		{name: "gzip", value: "gzip", codec: kafka.Gzip},
		{name: "snappy", value: "snappy", codec: kafka.Snappy},
		{name: "lz4", value: "lz4", codec: kafka.Lz4},
		{name: "zstd", value: "zstd", codec: kafka.Zstd},
		{name: "unknown", value: "brotli", err: `OFFSETAGENT_REQUEST_COMPRESSION: compression "brotli": must be none, gzip, snappy, lz4 or zstd`},
		{name: "case matters", value: "Snappy", err: "OFFSETAGENT_REQUEST_COMPRESSION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			c.RequestCompression = tt.value
			err := c.Validate()
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			codec, err := c.RequestCompression.Codec()
			require.NoError(t, err)
			require.Equal(t, tt.codec, codec)
		})
	}
}

// OFFSETAGENT_CONNECTORS_MANAGED_BY: empty or strimzi; anything else names the variable.
func TestConnectorsManagedBy(t *testing.T) {
	valid := Config{Brokers: []string{"b:9092"}, RequestTopic: "r", ResultTopic: "s", GroupID: "g", ConfigTopic: "c",
		OffsetsTopic: "o", IntentTopic: "i", Concurrency: 1, MaxRequestBytes: 1 << 20, RequestTopicPartitions: 1}
	for _, tt := range []struct {
		value handlers.Manager
		err   string
	}{{value: ""}, {value: handlers.ManagerStrimzi}, {value: "argocd", err: `OFFSETAGENT_CONNECTORS_MANAGED_BY: connectors managed by "argocd": expected "strimzi" or nothing`}} {
		t.Run(string(tt.value), func(t *testing.T) {
			c := valid
			c.ConnectorsManagedBy = tt.value
			if tt.err != "" {
				require.ErrorContains(t, c.Validate(), tt.err)
				return
			}
			require.NoError(t, c.Validate())
		})
	}
}
