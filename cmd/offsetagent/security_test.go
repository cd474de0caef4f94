package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// The per-cluster settings are refused at start with one clear line naming the flag or
// variable and the key, never a secret; a Connect URL with a password works but warns.
func TestSecuritySettingsErrors(t *testing.T) {
	const secret = "cli-S3cret"
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	jks := write("jks.properties", "security.protocol=SSL\nssl.truststore.location=/t.jks\nssl.truststore.password="+secret+"\n")
	badJAAS := write("jaas.properties", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\""+secret+"\"\n")
	restBad := write("rest.properties", "basic.auth.user.info="+secret+"\n")
	rest := write("rest-ok.properties", "basic.auth.user.info=admin:"+secret+"\n")
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		stderr string
	}{
		{name: "JKS truststore for A", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--from-command-config", jks},
			stderr: "--from-command-config: client properties " + jks + ": ssl.truststore.type: not set"},
		{name: "bad JAAS for B", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-command-config", badJAAS},
			stderr: "--to-command-config: client properties " + badJAAS + ": sasl.jaas.config: entry not terminated by a semicolon"},
		{name: "missing file", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--from-command-config", filepath.Join(dir, "none")},
			stderr: "--from-command-config: read client properties"},
		{name: "REST file for A", args: []string{"export", "--from-connect-url", "https://127.0.0.1:1", "--from-connect-config", restBad},
			stderr: "--from-connect-config: connect REST properties " + restBad + ": basic.auth.user.info: want user:password"},
		{name: "REST credentials twice", env: map[string]string{"OFFSETAGENT_FROM_CONNECT_USER_INFO": "a:" + secret},
			args:   []string{"export", "--from-connect-url", "http://127.0.0.1:1", "--from-connect-config", rest},
			stderr: "OFFSETAGENT_FROM_CONNECT_USER_INFO: set, and the Connect REST properties file has basic.auth.user.info too"},
		{name: "REST file without URL", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--from-connect-config", rest},
			stderr: "--from-connect-config: given without --from-connect-url"},
		{name: "B's REST file without URL", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--to-connect-config", rest},
			stderr: "--to-connect-config: given without --to-connect-url"},
		{name: "agent file and variables", env: map[string]string{"OFFSETAGENT_COMMAND_CONFIG": jks, "OFFSETAGENT_SASL_MECHANISM": "PLAIN", "OFFSETAGENT_SASL_USERNAME": "u"},
			args: []string{"run"}, stderr: "OFFSETAGENT_COMMAND_CONFIG: set together with OFFSETAGENT_SASL_*/OFFSETAGENT_TLS_* variables"},
		{name: "agent file refused", env: map[string]string{"OFFSETAGENT_COMMAND_CONFIG": badJAAS},
			args: []string{"run"}, stderr: "OFFSETAGENT_COMMAND_CONFIG: client properties " + badJAAS + ": sasl.jaas.config"},
		{name: "agent REST file without URL", env: map[string]string{"OFFSETAGENT_CONNECT_CONFIG": rest},
			args: []string{"run"}, stderr: "OFFSETAGENT_CONNECT_CONFIG and OFFSETAGENT_CONNECT_USER_INFO: set without OFFSETAGENT_CONNECT_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run(tc.args, strings.NewReader(""), &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), tc.stderr)
			require.NotContains(t, errOut.String()+out.String(), secret)
		})
	}
}

func TestConnectURLWithPasswordWarns(t *testing.T) {
	var errOut bytes.Buffer
	hc, err := connectClient("http://admin:pw-in-url@127.0.0.1:1", "--from-connect-url", "", "--from-connect-config", "OFFSETAGENT_FROM_CONNECT_USER_INFO", &errOut)
	require.NoError(t, err)
	require.NotNil(t, hc)
	require.Equal(t, "offsetagent: warning: --from-connect-url carries a password, visible to every user in ps and /proc/PID/cmdline and kept in shell history: "+
		"put it in --from-connect-config (basic.auth.user.info) or OFFSETAGENT_FROM_CONNECT_USER_INFO instead\n", errOut.String())

	errOut.Reset()
	_, err = connectClient("http://admin@127.0.0.1:1", "--from-connect-url", "", "--from-connect-config", "OFFSETAGENT_FROM_CONNECT_USER_INFO", &errOut)
	require.NoError(t, err)
	require.Empty(t, errOut.String(), "a user without a password is no secret")
}

// OFFSETAGENT_COMMAND_CONFIG gives the agent its brokers' security settings, with notes for
// the tuning keys it accepts.
func TestAgentCommandConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.properties")
	require.NoError(t, os.WriteFile(path, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"agent\" password=\"pw\";\nrequest.timeout.ms=30000\n"), 0o600))
	t.Setenv("OFFSETAGENT_COMMAND_CONFIG", path)
	cfg, notes, err := loadConfigNotes(t.Context())
	require.NoError(t, err)
	require.Equal(t, clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "agent", SASLPassword: "pw", TLSEnabled: true}, cfg.Security)
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], "request.timeout.ms: accepted, without effect")
}

// An agent configured only by its client properties file (OFFSETAGENT_COMMAND_CONFIG, as
// docs/operations.md shows for a SASL cluster), with no OFFSETAGENT_SASL_*/TLS_* variable,
// starts and serves a request on brokers that demand SCRAM.
func TestRunWithOnlyCommandConfig(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "agent", "agent-pw"),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	path := filepath.Join(t.TempDir(), "agent.properties")
	require.NoError(t, os.WriteFile(path, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"agent\" password=\"agent-pw\";\n"), 0o600))
	t.Setenv("OFFSETAGENT_COMMAND_CONFIG", path)
	t.Setenv("OFFSETAGENT_BROKERS", fake.ListenAddrs()[0])
	t.Setenv("OFFSETAGENT_CREATE_CONNECT_TOPICS", "true")
	t.Setenv("OFFSETAGENT_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("OFFSETAGENT_LOG_LEVEL", "error")

	// What `offsetagent run` does before it dials: read the environment and the file, build
	// the agent.
	cfg, err := loadConfig(t.Context())
	require.NoError(t, err)
	_, err = agent.New(cfg, agent.Options{})
	require.NoError(t, err, "the file's settings are the agent's, not variables set together with it")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runAgentForTest(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var out, errOut bytes.Buffer
	for attempt := 0; ; attempt++ { // the agent creates the request topic as it starts
		out.Reset()
		errOut.Reset()
		code := run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(demoRequest), &out, &errOut)
		if code == 0 || out.Len() > 0 || attempt >= 50 {
			require.Equal(t, 0, code, errOut.String())
			break
		}
		select {
		case code := <-done:
			t.Fatalf("the agent exited with %d", code)
		case <-time.After(200 * time.Millisecond):
		}
	}
	require.Contains(t, out.String(), `"type": "offsetagent.connector.create.succeeded"`)
}
