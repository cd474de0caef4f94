package kafkaio

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// leaderCacheTTL is how long partition leaders are reused. kafka-go's Transport answers
// metadata from its own cache, but copying the whole cluster's metadata for every write and
// barrier costs about a tenth of the agent's CPU under load. A leader that moved meanwhile answers
// "not leader", the caller retries, and the failed topic is looked up afresh.
const leaderCacheTTL = 500 * time.Millisecond

// leaderCache remembers the partition leaders of topics for leaderCacheTTL.
type leaderCache struct {
	client *kafka.Client

	mu sync.Mutex
	m  map[string]cachedLeaders
}

type cachedLeaders struct {
	leaders []int
	at      time.Time
}

func newLeaderCache(cl *kafka.Client) *leaderCache {
	return &leaderCache{client: cl, m: map[string]cachedLeaders{}}
}

// get returns the leader of every partition of topic (see partitionLeaders). The slice is
// shared: callers must not change it.
func (c *leaderCache) get(ctx context.Context, topic string) ([]int, error) {
	c.mu.Lock()
	e, ok := c.m[topic]
	c.mu.Unlock()
	if ok && time.Since(e.at) < leaderCacheTTL {
		return e.leaders, nil
	}
	leaders, err := PartitionLeaders(ctx, c.client, topic)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[topic] = cachedLeaders{leaders: leaders, at: time.Now()}
	c.mu.Unlock()
	return leaders, nil
}

// forget drops topic's leaders after a failed request, so the next one looks them up.
func (c *leaderCache) forget(topic string) {
	c.mu.Lock()
	delete(c.m, topic)
	c.mu.Unlock()
}
