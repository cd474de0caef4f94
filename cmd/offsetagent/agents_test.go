package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startTestAgent runs an agent in this process on the embedded broker at brokers (the
// environment set with t.Setenv, as `offsetagent run` reads it), and returns what stops it.
func startTestAgent(t *testing.T, brokers string) func() {
	t.Setenv("OFFSETAGENT_BROKERS", brokers)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runAgentForTest(ctx) }()
	return func() { cancel(); <-done }
}

// publishUntilAccepted publishes request body with `offsetagent publish --wait` until its
// result says it succeeded: the agent creates its topics as it starts, so the first tries may
// find none (50 tries, 200 ms apart).
func publishUntilAccepted(t *testing.T, body string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		var errOut bytes.Buffer
		code := run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(body), &bytes.Buffer{}, &errOut)
		if code == 0 || attempt >= 50 {
			require.Equal(t, 0, code, errOut.String())
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// twoClusters starts clusters A and B on embedded brokers for the migrate command tests, with
// the agent's environment they share (Connect topics created, HTTP on a free port, quiet logs),
// and returns their addresses.
func twoClusters(t *testing.T) (a, b string) {
	t.Helper()
	var addrs [2]string
	for i := range addrs {
		e, err := startEmbedded("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(e.Close)
		addrs[i] = e.Addr()
	}
	t.Setenv("OFFSETAGENT_CREATE_CONNECT_TOPICS", "true")
	t.Setenv("OFFSETAGENT_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("OFFSETAGENT_LOG_LEVEL", "error")
	return addrs[0], addrs[1]
}
