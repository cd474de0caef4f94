package secured_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// agentNames are one agent's topics and group.
type agentNames struct{ requests, results, intents, group string }

func newAgentNames(prefix string) agentNames {
	p := env.Unique(prefix)
	return agentNames{requests: p + "-requests", results: p + "-results", intents: p + "-intents", group: p}
}

// createAgentTopics creates the agent's three topics as docs/operations.md's "Topics the agent
// owns" says, so that the agent needs no Create ACL.
func (c *cluster) createAgentTopics(t *testing.T, n agentNames) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.createTopic(ctx, n.requests, 3, map[string]string{"max.message.bytes": "17825792"}))
	require.NoError(t, c.createTopic(ctx, n.results, 3, nil))
	require.NoError(t, c.createTopic(ctx, n.intents, 3, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "67108864"}))
}

// agentEnv is the agent's environment for user on cluster c with names n, writing to c's
// Connect cluster.
func (c *cluster) agentEnv(n agentNames, user string) map[string]string {
	return map[string]string{
		"OFFSETAGENT_BROKERS":                  c.broker.Addr,
		"OFFSETAGENT_REQUEST_TOPIC":            n.requests,
		"OFFSETAGENT_RESULT_TOPIC":             n.results,
		"OFFSETAGENT_INTENT_TOPIC":             n.intents,
		"OFFSETAGENT_GROUP_ID":                 n.group,
		"OFFSETAGENT_CONFIG_TOPIC":             c.connect.Config,
		"OFFSETAGENT_OFFSETS_TOPIC":            c.connect.Offsets,
		"OFFSETAGENT_REQUEST_TOPIC_PARTITIONS": "3",
		"OFFSETAGENT_SASL_MECHANISM":           "SCRAM-SHA-512",
		"OFFSETAGENT_SASL_USERNAME":            user,
		"OFFSETAGENT_SASL_PASSWORD":            c.users[user],
		"OFFSETAGENT_TLS_ENABLED":              "true",
		"OFFSETAGENT_TLS_CA_FILE":              c.ca.File,
	}
}

// startAgentProc runs the agent binary with vars alone (none of the test's own OFFSETAGENT_
// variables) at log level info, without waiting for it (waitReady); it is stopped at the end of
// the test.
func startAgentProc(t *testing.T, name string, vars map[string]string) *tier.Agent {
	t.Helper()
	all := map[string]string{"OFFSETAGENT_LOG_LEVEL": "info"}
	for k, v := range vars {
		all[k] = v
	}
	a, err := env.LaunchAgent(name, all, true)
	require.NoError(t, err)
	t.Cleanup(a.Stop)
	return a
}

// waitReady waits up to 90 s for the agent's /readyz 200.
func waitReady(t *testing.T, a *tier.Agent) {
	t.Helper()
	require.NoError(t, a.WaitReady(context.Background(), 90*time.Second))
}

// publish sends a request for the agent names n through `offsetagent publish --wait` as the
// fixture's admin (the agent's own principal may be missing an ACL), and returns its result.
func (c *cluster) publish(t *testing.T, n agentNames, body any) tier.Result {
	t.Helper()
	admin := append(tier.CleanEnv(),
		"OFFSETAGENT_BROKERS="+c.broker.InternalAddr,
		"OFFSETAGENT_REQUEST_TOPIC="+n.requests,
		"OFFSETAGENT_RESULT_TOPIC="+n.results,
		"OFFSETAGENT_TLS_ENABLED=true",
		"OFFSETAGENT_TLS_CA_FILE="+c.ca.File,
		"OFFSETAGENT_TLS_CERT_FILE="+c.adminCert.CertFile,
		"OFFSETAGENT_TLS_KEY_FILE="+c.adminCert.KeyFile,
	)
	return env.PublishAs(t, admin, 60*time.Second, body)
}
