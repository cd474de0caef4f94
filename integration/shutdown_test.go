package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// blocker is a fault hook that holds the first request reaching point until released.
type blocker struct {
	point   string
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newBlocker(t *testing.T, point string) *blocker {
	b := &blocker{point: point, entered: make(chan struct{}), release: make(chan struct{})}
	b.armed.Store(true)
	// Never leave a lane blocked behind a failed test: the agent's Run waits for its lanes.
	t.Cleanup(b.unblock)
	return b
}

func (b *blocker) hook(point, _ string) {
	if point == b.point && b.armed.CompareAndSwap(true, false) {
		close(b.entered)
		<-b.release
	}
}

func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("no request reached %s within 30s", b.point)
	}
}

func (b *blocker) unblock() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

// waitRun waits for the agent's Run to return, at most timeout, and returns its error and
// how long it took. The runningAgent's later stop sees it as stopped.
func (r *runningAgent) waitRun(t *testing.T, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-r.done:
		close(r.done)
		return time.Since(start), err
	case <-time.After(timeout):
		t.Fatalf("agent Run did not return within %s", timeout)
		return 0, nil
	}
}

// shutdownConfig is one request partition and a short session, so that the next agent joins
// quickly after the last one left.
func shutdownConfig(c *cluster, shutdown time.Duration) agent.Config {
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.SessionTimeout = 2 * time.Second
	cfg.ShutdownTimeout = shutdown
	return cfg
}

// requireCreatedFileSrc1 checks Connect's topics hold exactly what testdata/file-src-1.json asked for.
func requireCreatedFileSrc1(t *testing.T, cl *client, cfg agent.Config) {
	t.Helper()
	require.Equal(t, map[string]liveRecord{`["file-src-1",{"filename":"test.txt"}]`: {Partition: 2, Value: `{"position":30}`}}, cl.live(cfg.OffsetsTopic))
	live := cl.live(cfg.ConfigTopic)
	require.Contains(t, live, "connector-file-src-1")
	require.Contains(t, live, "target-state-file-src-1")
	require.Empty(t, cl.live(cfg.IntentTopic), "no intent left behind")
}

// Graceful shutdown (SIGTERM cancels Run's context) while a request is between its last two
// stages: the request finishes, its result is published and its offset committed, Run returns
// within ShutdownTimeout, and the next agent does not run it again.
func TestGracefulShutdownFinishesInFlightRequest(t *testing.T) {
	gracefulShutdownWhileHeldAt(t, "before:write_config")
}

// The same with the request held before its first stage, which still has to read the views:
// they must outlive the drain (before 956595a they stopped with Run's context and such a
// request failed with "log is not running", a spurious failure that was committed).
func TestGracefulShutdownFinishesRequestNotYetValidated(t *testing.T) {
	gracefulShutdownWhileHeldAt(t, "before:validate_config")
}

func gracefulShutdownWhileHeldAt(t *testing.T, point string) {
	t.Helper()
	c := crashCluster(t)
	cfg := shutdownConfig(c, 5*time.Second)
	cl := newFreshClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	hold := newBlocker(t, point)
	a := startAgent(t, cfg, agent.Options{Fault: hold.hook})
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	hold.waitEntered(t)

	a.cancel() // what SIGTERM does
	time.Sleep(300 * time.Millisecond)
	hold.unblock()
	took, err := a.waitRun(t, 2*cfg.ShutdownTimeout)
	require.NoError(t, err)
	require.Less(t, took, cfg.ShutdownTimeout, "Run returns within the shutdown timeout")

	rs := cl.allResults()
	require.Len(t, rs, 1, "the in-flight request's result is out")
	require.Equal(t, id, rs[0].Data.RequestID)
	require.Equal(t, events.TypeCreateSucceeded, rs[0].Type, rs[0].Data.Message)
	require.Equal(t, int64(1), cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"], "committed past the request")
	requireCreatedFileSrc1(t, cl, cfg)

	// A restarted agent starts after the request: it sees only the next one.
	b := startAgent(t, cfg, agent.Options{})
	next := cl.publish(strings.ReplaceAll(readFile(t, "testdata/file-src-1.json"), "file-src-1", "file-src-2"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(next, resultWait).Type)
	require.Len(t, cl.allResults(), 2)
	b.waitMetric(t, 1.0, "offsetagent_requests_total", "result", "succeeded")
	require.Equal(t, 0.0, b.metric(t, "offsetagent_requests_total", "result", "duplicate"), "the first request was not even fetched again")
}

// A request still running when the shutdown timeout ends is not committed and has no result;
// the next agent rolls back what it wrote and runs it, so it ends with exactly one result.
func TestShutdownTimeoutLeavesRequestToNextAgent(t *testing.T) {
	c := crashCluster(t)
	cfg := shutdownConfig(c, 2*time.Second)
	cl := newFreshClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	hold := newBlocker(t, "before:write_config")
	a := startAgent(t, cfg, agent.Options{Fault: hold.hook})
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	hold.waitEntered(t)
	require.Equal(t, 1.0, a.metric(t, "offsetagent_ready"))
	time.Sleep(200 * time.Millisecond)
	require.Greater(t, a.metric(t, "offsetagent_oldest_request_age_seconds"), 0.1, "the held request shows as the oldest")

	a.cancel()
	require.Eventually(t, func() bool { return a.metric(t, "offsetagent_ready") == 0 }, 5*time.Second, 10*time.Millisecond,
		"not ready from the start of shutdown")
	time.Sleep(cfg.ShutdownTimeout + 500*time.Millisecond)
	// The final commit has been decided by now: it must not pass the running request.
	require.Zero(t, cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"], "the unfinished request is not committed")
	// The hook ignores contexts (a stage honouring its context would have returned at the
	// timeout); once released, the request meets its cancelled context.
	hold.unblock()
	_, err := a.waitRun(t, 20*time.Second)
	require.NoError(t, err)
	require.Empty(t, cl.allResults(), "a request cut off by the shutdown timeout publishes no result")
	require.Equal(t, 1.0, a.metric(t, "offsetagent_results_unpublished_total"))
	require.Zero(t, a.metric(t, "offsetagent_oldest_request_age_seconds"), "nothing runs any more")
	require.Zero(t, cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"])

	b := startAgent(t, cfg, agent.Options{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	b.waitMetric(t, 1.0, "offsetagent_requests_total", "result", "succeeded")
	require.Zero(t, b.metric(t, "offsetagent_results_unpublished_total"))
	b.waitMetric(t, 1.0, "offsetagent_dedupe_entries") // the answered request is remembered
	require.Equal(t, float64(32<<20), b.metric(t, "offsetagent_max_inflight_bytes"), "the default bound")
	b.stop(t)
	require.Len(t, cl.allResults(), 1, "exactly one result")
	require.Equal(t, int64(1), cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"])
	requireCreatedFileSrc1(t, cl, cfg)
}

// newFreshClient is newClient. It once gave the client a transport of its own, when newClient
// used kafka-go's shared one (metadata cached for 6 s: a topic the agent created after the
// test's first call read as unknown, see TestReadAllSeesNewTopics), with a 100 ms metadata TTL.
// newClient's transport is its own now, and kafka-go also makes the TTL the timeout of each
// metadata refresh: 100 ms was too short on a loaded host.
func newFreshClient(t *testing.T, cfg agent.Config) *client {
	t.Helper()
	return newClient(t, cfg)
}

// The test client's readAll sees a topic created after the client's last metadata refresh:
// kafka.DefaultTransport serves Metadata from a cache refreshed every 6 s, in which a new topic
// (e.g. the result topic the agent creates) has no partitions. readAll asks again while the
// answer carries a topic error, and the client's transport refreshes every second, so checks
// such as require.Empty on the results cannot pass vacuously.
func TestReadAllSeesNewTopics(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1) // the client's transport caches metadata now

	// Someone else (the agent, in real tests) creates a topic and writes to it.
	other := newFreshClient(t, cfg)
	other.createTopic(cfg.ResultTopic, 1)
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.ResultTopic, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: other.kc.Transport}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Value: []byte("x")}))

	require.Len(t, cl.readAll(cfg.ResultTopic), 1, "the record is in the topic")
}

// During the drain (SIGTERM while a request runs) the HTTP server stays up: /readyz answers
// 503 from the start of the shutdown and /metrics keeps being served until the drain ends, so
// that a scrape sees the requests still in flight and what the shutdown cuts off.
func TestHTTPServesUntilTheDrainEnds(t *testing.T) {
	c := crashCluster(t)
	cfg := shutdownConfig(c, 3*time.Second)
	cl := newFreshClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	hold := newBlocker(t, "before:write_config")
	defer hold.unblock() // before the agent's stop, which waits for the lane, on a failure
	a := startAgent(t, cfg, agent.Options{Fault: hold.hook})
	cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	hold.waitEntered(t)

	a.cancel() // what SIGTERM does
	require.Eventually(t, func() bool { return !a.Ready() }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // well into the drain, which lasts until the request ends
	status, body := a.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Contains(t, body, "shutting down")
	status, body = a.get(t, "/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "offsetagent_requests_in_flight 1")
	status, _ = a.get(t, "/healthz")
	require.Equal(t, http.StatusOK, status)

	hold.unblock()
	_, err := a.waitRun(t, 20*time.Second)
	require.NoError(t, err)
	_, err = http.Get(a.url + "/metrics")
	require.Error(t, err, "the server stops once the drain has ended")
}
