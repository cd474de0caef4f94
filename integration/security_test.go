package integration

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// startSecureCluster starts kfake with extra options (SASL, TLS). Security tests always use
// the embedded broker: they configure its listeners.
func startSecureCluster(t *testing.T, opts ...kfake.Opt) *cluster {
	t.Helper()
	all := append([]kfake.Opt{kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }),
	}, opts...)
	c, err := kfake.NewCluster(all...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &cluster{brokers: c.ListenAddrs(), fake: c}
}

// secureClient is the test's own client for a cluster with SASL or TLS: the harness's client
// dials without credentials. It uses the agent's own connection settings.
type secureClient struct {
	t     *testing.T
	cfg   agent.Config
	conns *clientconfig.Connections
	kc    *kafka.Client
}

func newSecureClient(t *testing.T, cfg agent.Config) *secureClient {
	t.Helper()
	conns, err := clientconfig.NewConnections(cfg.Security)
	require.NoError(t, err)
	return &secureClient{t: t, cfg: cfg, conns: conns,
		kc: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: conns.Transport, Timeout: 10 * time.Second}}
}

func (c *secureClient) publish(body string, opts events.RequestOptions) string {
	c.t.Helper()
	if opts.ID == "" {
		opts.ID = uuid.NewString()
	}
	opts.Source = "/integration-test"
	msg, err := events.RequestMessage(c.cfg.RequestTopic, []byte(body), opts)
	require.NoError(c.t, err)
	w := &kafka.Writer{Addr: kafka.TCP(c.cfg.Brokers...), Topic: c.cfg.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: c.conns.Transport}
	defer w.Close()
	msg.Topic = ""
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(c.t, w.WriteMessages(ctx, msg))
	return opts.ID
}

// readAll returns every record of topic, in partition then offset order.
func (c *secureClient) readAll(topic string) []kafka.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := c.kc.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	require.NoError(c.t, err)
	require.Len(c.t, md.Topics, 1)
	var out []kafka.Message
	for _, p := range md.Topics[0].Partitions {
		lo, err := c.kc.ListOffsets(ctx, &kafka.ListOffsetsRequest{
			Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(p.ID)}}})
		require.NoError(c.t, err)
		end := lo.Topics[topic][0].LastOffset
		if end == 0 {
			continue
		}
		out = append(out, readRange(c.t, c.conns.Dialer, c.cfg.Brokers, topic, p.ID, kafka.FirstOffset, end)...)
	}
	return out
}

func (c *secureClient) waitResult(id string, timeout time.Duration) result {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, m := range c.readAll(c.cfg.ResultTopic) {
			typ, res, err := events.DecodeResult(&m)
			require.NoError(c.t, err)
			if res.RequestID == id {
				return result{Type: typ, Data: res, Msg: m}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no result for request %s within %s", id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireRefusesPlainClients checks that the broker really demands the security under test:
// a client without credentials or TLS gets no metadata.
func requireRefusesPlainClients(t *testing.T, brokers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kc := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	_, err := kc.Metadata(ctx, &kafka.MetadataRequest{})
	require.Error(t, err, "a client without SASL/TLS must be refused")
}

// The seed example succeeds over every SASL mechanism and over TLS, with and without a client
// certificate, with the agent configured only through agent.Config.Security.
func TestSecureBrokers(t *testing.T) {
	pki := newTestPKI(t)
	cases := []struct {
		name string
		opts []kfake.Opt
		sec  clientconfig.Security
	}{
		{"SASL PLAIN", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "agent", "plain-pw")},
			clientconfig.Security{SASLMechanism: "PLAIN", SASLUsername: "agent", SASLPassword: "plain-pw"}},
		{"SASL SCRAM-SHA-256", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "agent", "scram256-pw")},
			clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "agent", SASLPassword: "scram256-pw"}},
		{"SASL SCRAM-SHA-512", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "agent", "scram512-pw")},
			clientconfig.Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "agent", SASLPassword: "scram512-pw"}},
		{"TLS with CA file", []kfake.Opt{kfake.TLS(pki.serverConfig(false))},
			clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile}},
		{"TLS with client certificate", []kfake.Opt{kfake.TLS(pki.serverConfig(true))},
			clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
		{"SCRAM-SHA-512 over mutual TLS", []kfake.Opt{kfake.TLS(pki.serverConfig(true)), kfake.EnableSASL(),
			kfake.Superuser("SCRAM-SHA-512", "agent", "both-pw")},
			clientconfig.Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "agent", SASLPassword: "both-pw",
				TLSEnabled: true, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startSecureCluster(t, tc.opts...)
			requireRefusesPlainClients(t, c.brokers)
			cfg := testConfig(c)
			cfg.RequestTopicPartitions = 1
			cfg.Security = tc.sec
			startAgent(t, cfg, agent.Options{})
			cl := newSecureClient(t, cfg)

			id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
			res := cl.waitResult(id, resultWait)
			require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
			require.Equal(t, 1, *res.Data.OffsetsWritten)
			var keys []string
			for _, m := range cl.readAll(cfg.ConfigTopic) {
				keys = append(keys, string(m.Key))
			}
			require.Equal(t, []string{"target-state-file-src-1", "connector-file-src-1"}, keys)
		})
	}
}

// runUntilError runs an agent that is expected not to start and returns Run's error and how
// long it took. The harness's startAgent waits for Ready, which such an agent never is.
func runUntilError(t *testing.T, cfg agent.Config, bound time.Duration) (error, time.Duration) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := agent.New(cfg, agent.Options{Logger: testLogger(t), Listener: ln})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Run(ctx) }()
	select {
	case err := <-done:
		require.False(t, a.Ready())
		return err, time.Since(start)
	case <-time.After(bound):
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		t.Fatalf("agent.Run neither failed nor became ready within %s (ready=%v)", bound, a.Ready())
		return nil, 0
	}
}

// answerSASLFailureLikeKafka makes the broker answer a failed SASL authentication as Apache
// Kafka does, with a SaslAuthenticate response carrying SASL_AUTHENTICATION_FAILED and a
// message; kfake itself just closes the connection. The tests' credentials are wrong, so the
// final step is the one that fails: PLAIN's only message, SCRAM's client-final message (the
// client-first message, "n,,n=user,r=nonce", is left to kfake).
func answerSASLFailureLikeKafka(fake *kfake.Cluster) {
	fake.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.SASLAuthenticateRequest)
		if bytes.HasPrefix(req.SASLAuthBytes, []byte("n,")) {
			return nil, nil, false
		}
		fake.KeepControl()
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
}

// startupErrorCase is an agent configuration that must fail to start with a clear error.
type startupErrorCase struct {
	name string
	opts []kfake.Opt
	// kafkaLike answers failed SASL authentications as Apache Kafka does.
	kafkaLike bool
	sec       clientconfig.Security
	contains  []string // the error names one of these, case-insensitively
}

func runStartupErrorCases(t *testing.T, cases []startupErrorCase) {
	const bound = 30 * time.Second
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startSecureCluster(t, tc.opts...)
			if tc.kafkaLike {
				answerSASLFailureLikeKafka(c.fake)
			}
			cfg := testConfig(c)
			cfg.Security = tc.sec
			err, took := runUntilError(t, cfg, bound)
			require.Error(t, err)
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
			require.Less(t, took, bound)
			require.False(t, errors.Is(err, context.DeadlineExceeded), "a timeout is not a clear error: %v", err)
			msg := strings.ToLower(err.Error())
			found := false
			for _, s := range tc.contains {
				found = found || strings.Contains(msg, s)
			}
			require.True(t, found, "error %q names none of %v", err, tc.contains)
		})
	}
}

// Wrong credentials or an untrusted broker are a clear startup error within a bound, not a
// hang.
func TestSecureBrokerStartupErrors(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t) // a CA the broker's certificate is not signed by
	sasl := []string{"sasl", "authentic"}
	runStartupErrorCases(t, []startupErrorCase{
		{name: "SCRAM-SHA-256 wrong password", kafkaLike: true,
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "agent", SASLPassword: "wrong"}, contains: sasl},
		{name: "SCRAM-SHA-512 wrong password", kafkaLike: true,
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "agent", SASLPassword: "wrong"}, contains: sasl},
		{name: "PLAIN wrong password", kafkaLike: true,
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "PLAIN", SASLUsername: "agent", SASLPassword: "wrong"}, contains: sasl},
		{name: "untrusted broker certificate", opts: []kfake.Opt{kfake.TLS(pki.serverConfig(false))},
			sec: clientconfig.Security{TLSEnabled: true, TLSCAFile: other.CAFile}, contains: []string{"certificate", "x509"}},
		{name: "client certificate missing", opts: []kfake.Opt{kfake.TLS(pki.serverConfig(true))},
			sec: clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile}, contains: []string{"certificate", "tls"}},
	})
}

// A broker that closes the connection on a failed SASL authentication (kfake here; also
// SaslHandshake v0 brokers and some proxies) makes agent.Run fail fast with an error that names
// SASL, the mechanism and the user ("authenticate to brokers with SASL %s as %q (wrong
// credentials?)"), not only the "unexpected EOF" of the first broker call.
func TestStartupErrorOnDroppedSASLConnectionNamesSASL(t *testing.T) {
	sasl := []string{"sasl", "authentic", "credential"}
	runStartupErrorCases(t, []startupErrorCase{
		{name: "SCRAM-SHA-256 wrong password",
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "agent", SASLPassword: "wrong"}, contains: sasl},
		{name: "unknown user",
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "nobody", SASLPassword: "right"}, contains: sasl},
		{name: "PLAIN wrong password",
			opts: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "agent", "right")},
			sec:  clientconfig.Security{SASLMechanism: "PLAIN", SASLUsername: "agent", SASLPassword: "wrong"}, contains: sasl},
	})
}
