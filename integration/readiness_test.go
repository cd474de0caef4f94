package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// /readyz answers 503 while the agent cannot consume (every fetch and heartbeat refused for
// longer than the session timeout) and 200 again once it recovers; /healthz, the liveness
// probe, answers 200 throughout.
func TestReadyzFollowsBrokerFaults(t *testing.T) {
	c := crashCluster(t) // a short session timeout
	fake := c.requireFake(t)
	cfg := testConfig(c)
	cfg.SessionTimeout = 2 * time.Second
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 3)
	a := startAgent(t, cfg, agent.Options{})
	status := func(path string) int { code, _ := a.get(t, path); return code }
	require.Equal(t, 200, status("/readyz"))

	// Every fetch (each partition) and every heartbeat answered with an error.
	refuse := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch, kmsg.Heartbeat}, Err: kerr.UnknownServerError, Count: -1})
	require.Eventually(t, func() bool { return status("/readyz") == 503 }, 20*time.Second, 100*time.Millisecond, "readyz while nothing can be fetched")
	// The refusals also end the membership (the coordinator evicts a member whose heartbeats it
	// refuses), and which passes the session timeout first is a matter of timing: on a loaded
	// host the first 503 can be the membership alone, before a refused heartbeat or fetch was
	// seen. One is seen once the agent joins again (its probe heartbeats at once as a
	// generation starts), and from the session timeout on every 503 names it.
	var body string
	require.Eventually(t, func() bool {
		code, b := a.get(t, "/readyz")
		body = b
		return code == 503 && strings.Contains(b, "no successful")
	}, 20*time.Second, 100*time.Millisecond, "the 503 names the refused heartbeats or fetches")
	t.Log(body)
	require.Equal(t, 200, status("/healthz"))

	refuse.Remove()
	require.Eventually(t, func() bool { return status("/readyz") == 200 }, 30*time.Second, 100*time.Millisecond,
		"readyz once the broker answers again")
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(id, resultWait).Type, "consuming again")
}

// A lane stuck on one request for longer than OFFSETAGENT_STUCK_AFTER makes /readyz answer
// 503, naming the bound; once the request finishes it answers 200 again.
func TestReadyzStuckLane(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.StuckAfter = time.Second
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 3)
	opts, release := blockOnce("before:validate_config")
	a := startAgent(t, cfg, opts)
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Eventually(t, func() bool { code, _ := a.get(t, "/readyz"); return code == 503 }, 20*time.Second, 100*time.Millisecond)
	_, body := a.get(t, "/readyz")
	require.True(t, strings.Contains(body, "OFFSETAGENT_STUCK_AFTER"), body)
	release()
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(id, resultWait).Type)
	require.Eventually(t, func() bool { code, _ := a.get(t, "/readyz"); return code == 200 }, 10*time.Second, 100*time.Millisecond)
}
