package secured_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSecuredAgentFromCommandConfig: the agent configured as docs/operations.md shows for a
// SASL_SSL SCRAM cluster, with its brokers' security settings only in a Kafka client
// properties file (OFFSETAGENT_COMMAND_CONFIG) and no OFFSETAGENT_SASL_*/TLS_* variable,
// starts and serves a request.
func TestSecuredAgentFromCommandConfig(t *testing.T) {
	env.RequirePeers(t)
	c := peers.a
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	user, names := c.newAgentUser(ctx, t, "agent-file")
	c.grantAll(t, "User:"+user, agentACLs(agentScope{names: names, connect: c.connect, sinkTopic: "unused"}))

	props := env.WriteFile(t, env.Unique("agent")+".properties", "security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		fmt.Sprintf("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=%q password=%q;\n", user, c.users[user])+
		"ssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+c.ca.File+"\n")
	vars := c.agentEnv(names, user)
	for k := range vars {
		if strings.HasPrefix(k, "OFFSETAGENT_SASL_") || strings.HasPrefix(k, "OFFSETAGENT_TLS_") {
			delete(vars, k)
		}
	}
	vars["OFFSETAGENT_COMMAND_CONFIG"] = props
	a := startAgentProc(t, env.Unique("agent-file"), vars)
	waitReady(t, a)
	c.requireSeedExample(t, names, "seed-file")
}
