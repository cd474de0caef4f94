package integration

import (
	"fmt"
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

// countRequests counts every OffsetCommit (by group) and every permission probe of Write (a
// Produce naming partition -1, by request) the broker answers.
func countRequests(c *cluster, t *testing.T) *requestCounter {
	fake := c.requireFake(t)
	rc := &requestCounter{counts: map[string]int{}}
	fake.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		switch r := req.(type) {
		case *kmsg.OffsetCommitRequest:
			rc.add("OffsetCommit " + r.Group)
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
// the offsets topic, one Produce request naming both), and commits of the request topic
// shared by the requests that finish close together, not one commit round trip per request.
// The last request is still committed.
func TestRoundTripsPerRequest(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	rc := countRequests(c, t)
	const n = 20
	for i := range n {
		id := cl.publish(fmt.Sprintf(`{"name":"rt-%d","config":{"connector.class":"MirrorSourceConnector","source.cluster.alias":"A","target.cluster.alias":"B","topics":"orders"},
		  "initial_offsets":[{"partition":{"cluster":"A","topic":"orders","partition":0},"offset":{"offset":%d}}]}`, i, 10+i), events.RequestOptions{})
		res := cl.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	}
	require.Equal(t, n, rc.get("probe Produce"), "Write probe requests for %d requests", n)
	require.Eventually(t, func() bool {
		return cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"] == n
	}, resultWait, 20*time.Millisecond, "the last request is committed")
	commits := rc.get("OffsetCommit " + cfg.GroupID)
	require.Less(t, commits, n/2, "commits of the request topic for %d requests one at a time", n)
}
