package source

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The sinks read at once (a wave's stop barriers) describe their topics in one Metadata
// request, not one each: while a request is in flight, the checks that come join the next,
// which describes all their topics. Here the first request is held at the broker until 15
// more sinks' checks wait: 2 requests for the 16, where each sink's check made its own
// (16), and each check gets its own topics' partitions.
func TestSinkChecksDescribeTheirTopicsTogether(t *testing.T) {
	const sinks, topics = 16, 4
	fake, brokers, cl, ctx := connectCluster(t)
	for i := range topics {
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl, fmt.Sprintf("in-%d", i), 1+i, nil))
	}
	for i := range sinks {
		require.NoError(t, kafkaio.CommitGroupOffsets(ctx, cl, fmt.Sprintf("connect-sink-%02d", i),
			[]kafkaio.GroupOffset{{Topic: fmt.Sprintf("in-%d", i%topics), Partition: 0, Offset: 1}}))
	}
	r := readConnectTopics(ctx, t, brokers)

	var mu sync.Mutex
	requests := 0
	held, release := make(chan struct{}), make(chan struct{})
	fake.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		named := false
		for _, tp := range kreq.(*kmsg.MetadataRequest).Topics {
			named = named || (tp.Topic != nil && len(*tp.Topic) > 3 && (*tp.Topic)[:3] == "in-")
		}
		if !named {
			return nil, nil, false
		}
		mu.Lock()
		requests++
		first := requests == 1
		mu.Unlock()
		if first {
			close(held)
			fake.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	type got struct {
		topic string
		err   error
	}
	out := make(chan got, sinks)
	check := func(i int) {
		topic := fmt.Sprintf("in-%d", i%topics)
		unreadable, _, err := r.checkTopics(ctx, fmt.Sprintf("connect-sink-%02d", i), []string{topic}, nil, nil)
		if err == nil && len(unreadable) > 0 {
			err = unreadable[0]
		}
		out <- got{topic, err}
	}
	go check(0)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the first check's Metadata request did not come")
	}
	for i := 1; i < sinks; i++ {
		go check(i)
	}
	for range 3000 { // 30 s
		if r.topics.waiting() == sinks-1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, sinks-1, r.topics.waiting(), "checks waiting for the next request")
	close(release)
	for range sinks {
		g := <-out
		require.NoError(t, g.err, g.topic)
	}
	mu.Lock()
	require.Equal(t, 2, requests, "Metadata requests for %d sinks' checks: the held one, and one for the %d that came meanwhile", sinks, sinks-1)
	mu.Unlock()

	// Each call gets its own topics, from a joint request.
	var wg sync.WaitGroup
	for i := range topics {
		wg.Go(func() {
			topic := fmt.Sprintf("in-%d", i)
			parts, failed, err := r.topics.describe(ctx, []string{topic, "absent"})
			require.NoError(t, err)
			require.Len(t, parts, 1, topic)
			require.Len(t, parts[topic], 1+i, topic)
			require.Contains(t, failed, "absent")
			require.Len(t, failed, 1)
		})
	}
	wg.Wait()
}
