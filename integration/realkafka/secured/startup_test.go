package secured_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSecuredAgentRefusedAtStart: a wrong password, a CA that did not sign the broker's
// certificate, a host name the certificate does not name, TLS off and an expired client
// certificate each end the agent at start-up with a clear line and a non-zero exit; /readyz
// is never 200 meanwhile.
func TestSecuredAgentRefusedAtStart(t *testing.T) {
	env.RequirePeers(t)
	c := peers.a
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	user := env.Unique("agent-start")
	_, err := c.addUser(ctx, user)
	require.NoError(t, err)
	names := newAgentNames("agent-start")
	c.createAgentTopics(t, names)
	c.grantAll(t, "User:"+user, agentACLs(agentScope{names: names, connect: c.connect, sinkTopic: "unused"}))
	port := c.broker.Addr[strings.LastIndex(c.broker.Addr, ":")+1:]
	// A client certificate of the cluster's CA that expired yesterday, for the broker's
	// INTERNAL listener (SSL, ssl.client.auth=required), whose principal User:CN=... has the
	// agent's ACLs: its expiry is the only thing wrong.
	expiredCN := env.Unique("expired-client")
	expired, err := c.ca.issueValid(expiredCN, 10, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	c.grantAll(t, "User:CN="+expiredCN, agentACLs(agentScope{names: names, connect: c.connect, sinkTopic: "unused"}))
	for _, tc := range []struct {
		name string
		env  map[string]string
		// want is a word the clear line must hold.
		want string
	}{
		{"wrong password", map[string]string{"OFFSETAGENT_SASL_PASSWORD": "not-" + c.users[user]}, "authentication"},
		{"untrusted CA", map[string]string{"OFFSETAGENT_TLS_CA_FILE": peers.b.ca.File}, "certificate"},
		{"wrong host name", map[string]string{"OFFSETAGENT_BROKERS": "localhost:" + port}, "certificate"},
		{"TLS off", map[string]string{"OFFSETAGENT_TLS_ENABLED": "false"}, ""},
		// "" unsets a variable.
		{"expired client certificate", map[string]string{"OFFSETAGENT_BROKERS": c.broker.InternalAddr,
			"OFFSETAGENT_SASL_MECHANISM": "", "OFFSETAGENT_SASL_USERNAME": "", "OFFSETAGENT_SASL_PASSWORD": "",
			"OFFSETAGENT_TLS_CERT_FILE": expired.CertFile, "OFFSETAGENT_TLS_KEY_FILE": expired.KeyFile}, "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := c.agentEnv(names, user)
			for k, v := range tc.env {
				vars[k] = v
				if v == "" {
					delete(vars, k)
				}
			}
			start := time.Now()
			a := startAgentProc(t, env.Unique("agent-start"), vars)
			for exited := false; !exited; {
				status, body := a.Readyz()
				require.NotEqual(t, http.StatusOK, status, "/readyz 200: %s", body)
				select {
				case <-a.Done():
					exited = true
				case <-time.After(100 * time.Millisecond):
				}
				require.Less(t, time.Since(start), 30*time.Second, "still running after 30 s:\n%s", a.LogText())
			}
			require.Error(t, a.ExitErr(), "the agent must exit non-zero:\n%s", a.LogText())
			log := a.LogText()
			t.Logf("exit after %s: %v; log:\n%s", time.Since(start).Round(10*time.Millisecond), a.ExitErr(), log)
			require.NotContains(t, log, c.users[user], "the password must not be logged")
			var errLines []string
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "level=ERROR") {
					errLines = append(errLines, l)
				}
			}
			require.Len(t, errLines, 1, "one clear line:\n%s", log)
			require.Contains(t, strings.ToLower(errLines[0]), tc.want)
		})
	}
}
