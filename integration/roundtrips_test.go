package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// requestCounter counts the requests a kfake broker answers, by API and the topic or group
// they name.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (rc *requestCounter) add(key string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counts[key]++
}

func (rc *requestCounter) get(key string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.counts[key]
}

// countRequests counts every OffsetCommit (by group), every long poll (a Fetch that may wait,
// by topic) and every permission probe of Write (a Produce naming partition -1, by request)
// the broker answers.
func countRequests(c *cluster, t *testing.T) *requestCounter {
	fake := c.requireFake(t)
	rc := &requestCounter{counts: map[string]int{}}
	fake.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		switch r := req.(type) {
		case *kmsg.OffsetCommitRequest:
			rc.add("OffsetCommit " + r.Group)
		case *kmsg.FetchRequest:
			if r.MaxWaitMillis > 0 {
				for _, t := range r.Topics {
					rc.add("long poll " + t.Topic)
				}
			} else {
				names := make([]string, len(r.Topics))
				for i, t := range r.Topics {
					names[i] = t.Topic
				}
				slices.Sort(names)
				rc.add("no-wait Fetch " + strings.Join(names, "+"))
			}
		case *kmsg.ProduceRequest:
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					if p.Partition == -1 {
						rc.add("probe Produce")
						return nil, nil, false
					}
				}
			}
		}
		return nil, nil, false // counted only: the broker answers
	})
	return rc
}

// One request at a time: one request for the agent's Write probes each (the config topic and
// the offsets topic, one Produce request naming both); one for the barriers of both topics
// (a Fetch that does not wait, naming both); commits of the request topic shared by
// the requests that finish close together, not one commit round trip per request (the last
// request is still committed); and the agent's own writes to the config, offsets and intent
// topics do not wake the long polls of its views of them, which then send the next one.
func TestRoundTripsPerRequest(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	// The permission loop probes Write too, every PermissionCheckInterval: on a loaded machine
	// the 40 requests outlast the 15 s default, and its probes would be counted as theirs.
	cfg.PermissionCheckInterval = time.Hour
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	rc := countRequests(c, t)
	const n = 40
	began := time.Now()
	for i := range n {
		id := cl.publish(fmt.Sprintf(`{"name":"rt-%d","config":{"connector.class":"MirrorSourceConnector","source.cluster.alias":"A","target.cluster.alias":"B","topics":"orders"},
		  "initial_offsets":[{"partition":{"cluster":"A","topic":"orders","partition":0},"offset":{"offset":%d}}]}`, i, 10+i), events.RequestOptions{})
		res := cl.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	}
	require.Equal(t, n, rc.get("probe Produce"), "Write probe requests for %d requests", n)
	// validate_config's barriers: the config topic's end offsets and the offsets topic's, read
	// in one Fetch per request (two before).
	both := []string{cfg.ConfigTopic, cfg.OffsetsTopic}
	slices.Sort(both)
	require.Equal(t, n, rc.get("no-wait Fetch "+strings.Join(both, "+")), "barrier Fetch requests naming both topics for %d requests", n)
	require.Zero(t, rc.get("no-wait Fetch "+cfg.ConfigTopic)+rc.get("no-wait Fetch "+cfg.OffsetsTopic),
		"barrier Fetch requests naming one of the two topics for %d requests", n)
	require.Eventually(t, func() bool {
		return cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"] == n
	}, resultWait, 20*time.Millisecond, "the last request is committed")
	took := time.Since(began)
	commits := rc.get("OffsetCommit " + cfg.GroupID)
	// A commit per request before; now one per commitInterval (the agent's, 250 ms) at most,
	// and the one that commits the last request. A request took ~100 ms here with the race
	// detector on a busy machine, but 345 ms on a loaded one: the bound is the time the
	// requests took, and when they were quick, fewer commits than requests.
	const commitInterval = 250 * time.Millisecond
	require.LessOrEqual(t, commits, int(took/commitInterval)+2, "commits of the request topic for %d requests one at a time in %v", n, took)
	if took < n*commitInterval/2 {
		require.Less(t, commits, 3*n/4, "commits of the request topic for %d requests one at a time in %v", n, took)
	}
	for _, topic := range []string{cfg.ConfigTopic, cfg.OffsetsTopic, cfg.IntentTopic} {
		// One per request or more before; now one per logFetchMaxWait at most.
		require.Less(t, rc.get("long poll "+topic), n/2, "long polls of %s for %d requests one at a time", topic, n)
	}
}
