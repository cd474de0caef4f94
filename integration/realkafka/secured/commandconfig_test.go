package secured_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// TestSecuredAgentFromCommandConfig: the agent configured as docs/operations.md shows for a
// SASL_SSL SCRAM cluster, with its brokers' security settings only in a Kafka client
// properties file (OFFSETAGENT_COMMAND_CONFIG) and no OFFSETAGENT_SASL_*/TLS_* variable,
// starts and serves a request.
func TestSecuredAgentFromCommandConfig(t *testing.T) {
	requirePeers(t)
	c := peers.a
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	user := unique("agent-file")
	_, err := c.addUser(ctx, user)
	require.NoError(t, err)
	names := newAgentNames("agent-file")
	c.createAgentTopics(t, names)
	c.grantAll(t, "User:"+user, agentACLs(agentScope{names: names, connect: c.connect, sinkTopic: "unused"}))

	props := writeFile(t, unique("agent")+".properties", "security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		fmt.Sprintf("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=%q password=%q;\n", user, c.users[user])+
		"ssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+c.ca.File+"\n")
	env := c.agentEnv(names, user)
	for k := range env {
		if strings.HasPrefix(k, "OFFSETAGENT_SASL_") || strings.HasPrefix(k, "OFFSETAGENT_TLS_") {
			delete(env, k)
		}
	}
	env["OFFSETAGENT_COMMAND_CONFIG"] = props
	a := startAgentProc(t, unique("agent-file"), env)
	a.waitReady(t)

	name := unique("seed-file")
	file := writeFile(t, name+".txt", lines("before", 0, 5))
	res := c.publish(t, names, sourceRequest(name, file, 60))
	require.Equal(t, events.TypeCreateSucceeded, res.Type, "failed at %s: %s", res.Data.FailedStep, res.Data.Message)
	waitState(t, c.worker, name, "RUNNING")
	require.Equal(t, fmt.Sprintf(`[{"offset":{"position":60},"partition":{"filename":%q}}]`, file), offsetsOf(t, c.worker, name))
	restOK(t, c.worker, http.MethodDelete, "/connectors/"+name, nil)
}
