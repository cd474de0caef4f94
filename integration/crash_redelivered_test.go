package integration

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// The agent is stopped at every point of a request (crashPoints), and the request is
// redelivered to an agent that turns it away before its first stage: its source is no longer
// allowed (403), its record no longer decodes (OFFSETAGENT_MAX_REQUEST_BYTES lowered: 400),
// its deadline passed while no agent ran (408), or the agent lacks a Read permission it
// depends on (403: the brokers refuse its probe of the offsets topic). Whatever the refusal, the interrupted
// attempt is rolled back first: the connector ends as it was before the request (no connector
// record, the target state it found, its previous offsets), no intent or claim is left, and
// the failed result says what the rollback undid ("nothing was written" only where the
// attempt wrote nothing). A request stopped after its result went out (after:publish) is not
// redone: it succeeded, and its connector stays.
func TestCrashThenRefusedRedelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	faultAgentBinary(t) // built once, before the parallel subtests
	c := crashCluster(t)
	start := time.Now()
	t.Cleanup(func() { t.Logf("all points: %s", time.Since(start).Round(time.Second)) })
	// Each request has topics and a group of its own, so that no other request's stop
	// interrupts its refusal. Six at a time: a run waits for the late request's deadline, and
	// the six keep two cores mostly busy otherwise (alone: 26.3 s of wall time, 35.0
	// CPU-seconds).
	sem := make(chan struct{}, 6)
	for i, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			for _, refusal := range []string{"source", "undecodable", "late", "read"} {
				t.Run(refusal, func(t *testing.T) {
					t.Parallel()
					sem <- struct{}{}
					defer func() { <-sem }()
					suffix := fmt.Sprintf("-%s-r%d", refusal, i)
					// Only "late" starts over, on new topics, with a deadline further out: its
					// first agent found the deadline passed (reading the request, or at its
					// first write) before reaching the point.
					for window := lateWindow; !crashRedelivered(t, c, point, refusal, suffix, window); window *= 2 {
						require.Less(t, window, 4*lateWindow, "the agent never took the request up before its deadline")
						t.Logf("the agent found the deadline (%s after the publication) passed before %s: again with %s", window, point, 2*window)
					}
				})
			}
		})
	}
}

// wroteBefore are the crash points at which the interrupted attempt has written to Connect's
// topics (a source connector with initial offsets over two previous ones).
var wroteBefore = []string{
	"mid:wipe_offsets", "after:wipe_offsets",
	"before:write_offsets", "mid:write_offsets", "after:write_offsets",
	"before:write_config", "mid:write_config", "after:write_config",
	"before:publish",
}

// lateWindow is how far past its publication the deadline of the "late" refusal's request
// lies: the first agent must read the request before it, the second starts after it.
const lateWindow = 3 * time.Second

// crashRedelivered stops a request for a new source connector with initial offsets at point,
// then runs an agent that refuses its redelivery: refusal is "source" (its source is no longer
// allowed), "undecodable" (the record exceeds a lowered OFFSETAGENT_MAX_REQUEST_BYTES), "late"
// (its deadline, window after its publication, passed meanwhile) or "read" (the agent may not
// Read the offsets topic, as its permission probe finds: denyReadProbe). It returns false,
// having checked nothing, when the first agent of "late" found the deadline passed before it
// reached point (a loaded host: it read the request late, or took long to its first write,
// the deadline's last look) and answered it 408: the case's premise did not hold.
func crashRedelivered(t *testing.T, c *cluster, point, refusal, suffix string, window time.Duration) bool {
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	cc := crashCase{name: "src" + suffix, offsets: true}
	seedCrashCase(t, cl, cfg, cc)
	before := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	var runs []*agentProcess
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range runs {
				t.Logf("agent run %d:\n%s", i, p.out)
			}
		}
	})

	body, opts, env, code := cc.body(), events.RequestOptions{}, "", 0
	switch refusal {
	case "source":
		opts.Source, env, code = "/crash-test/revoked", "OFFSETAGENT_ALLOWED_SOURCES=/integration-test", 403
	case "undecodable":
		// Padded past 1024 bytes: it decodes at first and no longer once the limit is lowered.
		body = strings.Replace(body, `"topic":"t"`, `"topic":"t","x.padding":"`+strings.Repeat("x", 1200)+`"`, 1)
		env, code = "OFFSETAGENT_MAX_REQUEST_BYTES=1024", 400
	case "late":
		code = 408
	case "read":
		// A round every 200 ms: the agent joins its group once a round found the refusal.
		env, code = "OFFSETAGENT_PERMISSION_CHECK_INTERVAL=200ms", 403
	}
	p := startOnceProcess(t, cfg, point+"@"+cc.name, "")
	runs = append(runs, p)
	results := 1
	if refusal == "late" {
		// The deadline leaves the running agent the time to take the request up and reach the
		// point, and passes before the next agent starts: a dry run for another connector
		// tells when the agent takes requests.
		results++
		cl.waitResult(cl.publish(crashCase{name: "warm" + suffix}.body(), events.RequestOptions{DryRun: true}), 60*time.Second)
		opts.Deadline = time.Now().Add(window)
	}
	id := cl.publish(body, opts)
	if refusal == "late" && !stoppedBeforeLate(t, cl, p, id) {
		return false
	}
	require.Equal(t, 137, p.wait(t, 90*time.Second), "the request should have stopped at %s; output:\n%s", point, p.out)
	dropKilled(t, cfg)
	time.Sleep(time.Until(opts.Deadline))

	if refusal == "read" {
		denyReadProbe(t, c.requireFake(t), cfg)
	}
	q := startOnceProcess(t, cfg, "", "", env)
	runs = append(runs, q)
	r := cl.waitResult(id, 60*time.Second)
	waitNoIntents(t, cl, cfg)
	require.NoError(t, q.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, q.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", q.out)

	require.Len(t, cl.allResults(), results, "one result per request")
	require.Empty(t, cl.live(cfg.IntentTopic), "no intent or claim left behind")
	after := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	if point == "after:publish" {
		// The result went out before the stop: the request succeeded and is not redone.
		require.Equal(t, events.TypeCreateSucceeded, r.Type, r.Data.Message)
		require.Contains(t, after.Config, "connector-"+cc.name)
		require.Equal(t, map[string]string{
			fmt.Sprintf(`[%q,{"filename":"f"}]`, cc.name): `{"position":100}`,
			fmt.Sprintf(`[%q,{"filename":"g"}]`, cc.name): `{"position":101}`,
		}, values(after.Offsets))
		return true
	}
	require.Equal(t, events.TypeCreateFailed, r.Type, r.Data.Message)
	require.Equal(t, code, r.Data.ErrorCode, r.Data.Message)
	if refusal == "read" {
		require.Contains(t, r.Data.Message, "lacks a permission it depends on")
		require.Contains(t, r.Data.Message, cfg.OffsetsTopic)
	}
	require.Equal(t, before, after, "the interrupted attempt is rolled back before the refusal")
	require.NotNil(t, r.Data.Cleanup)
	if slices.Contains(wroteBefore, point) {
		require.Contains(t, r.Data.Message, "rolled back")
		require.NotContains(t, r.Data.Message, "nothing was written")
		require.NotEqual(t, events.NothingUndone, r.Data.Cleanup.Summary)
		return true
	}
	require.Equal(t, events.NothingUndone, r.Data.Cleanup.Summary, r.Data.Message)
	if refusal == "late" {
		require.Contains(t, r.Data.Message, "nothing was written")
	}
	return true
}

// stoppedBeforeLate waits (up to 90 s) for agent p to stop at its fault point while it carries
// out request id; it returns false, p killed, when p answered the request 408 first (its
// deadline passed before the point). A result of another kind does not count: at
// after:publish p stops once its result is out.
func stoppedBeforeLate(t *testing.T, cl *client, p *agentProcess, id string) bool {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited():
			return true
		case <-time.After(100 * time.Millisecond):
		}
		for _, r := range cl.allResults() {
			if r.Data.RequestID == id && r.Data.ErrorCode == 408 {
				_ = p.cmd.Process.Kill()
				<-p.exited()
				return false
			}
		}
	}
	return true // p.wait reports it
}

// denyReadProbe makes the brokers refuse the Read permission probe (kafkaio.ProbeRead: a fetch
// of partition -1) of cfg's offsets topic, as they would for a principal without the ACL, while
// the agent's reads of the topic itself still work (its rollback reads the topic). The agent's
// group join is answered COORDINATOR_LOAD_IN_PROGRESS until two probes were refused: a round
// of the permission check (every 200 ms with the env of "read") found the refusal before the
// agent takes a request.
func denyReadProbe(t *testing.T, fake *kfake.Cluster, cfg agent.Config) {
	t.Helper()
	probes := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: cfg.OffsetsTopic, Err: kerr.TopicAuthorizationFailed, Count: -1,
		When: func(r kmsg.Request) bool {
			for _, rt := range r.(*kmsg.FetchRequest).Topics {
				for _, p := range rt.Partitions {
					if p.Partition < 0 {
						return true
					}
				}
			}
			return false
		}})
	t.Cleanup(probes.Remove)
	fake.ControlKey(int16(kmsg.JoinGroup), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.JoinGroupRequest)
		if req.Group != cfg.GroupID {
			return nil, nil, false
		}
		if probes.Hits() >= 2 {
			fake.DropControl()
			return nil, nil, false
		}
		fake.KeepControl()
		res := req.ResponseKind().(*kmsg.JoinGroupResponse)
		res.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return res, nil, true
	})
}
