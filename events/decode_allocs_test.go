package events

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/race"
)

// A one-offset request, the kind a fleet sends thousands of, decodes in a bounded number of
// allocations: its binary-mode headers are read without sdk-go's binding (binaryAttributes),
// which copies them and builds an event, its extensions in a map copied on every read.
func TestDecodeRequestAllocations(t *testing.T) {
	body := []byte(`{"name":"c1","config":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","tasks.max":"1"},` +
		`"initial_offsets":[{"partition":{"cluster":"src","topic":"t","partition":0},"offset":{"offset":1000}}]}`)
	msg, err := RequestMessage("requests", body, RequestOptions{ID: "r1", Source: "/test", Key: "c1", DryRun: true,
		Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), GiveUp: time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC)})
	require.NoError(t, err)
	req, err := DecodeRequestDeferred(&msg, 1<<20)
	require.NoError(t, err)
	require.True(t, req.DryRun)
	require.False(t, req.Deadline.IsZero())
	require.False(t, req.GiveUp.IsZero())
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop what it is given: the counts would include its misses")
	}
	allocs := alloctest.Least(50, func() {
		if _, err := DecodeRequestDeferred(&msg, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 18.0, "19 when the dryrun header's text was boxed, 54 when sdk-go's binding read the headers (binaryAttributes), 58 when each extension read copied them")
}
