package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunningOldest(t *testing.T) {
	r := newRunning()
	require.Zero(t, r.oldest(), "nothing runs")
	first, second := &item{}, &item{}
	r.begin(first)
	time.Sleep(200 * time.Millisecond)
	r.begin(second)
	withFirst := r.oldest()
	require.GreaterOrEqual(t, withFirst, 200*time.Millisecond, "the first one is the oldest")
	r.end(first)
	require.Less(t, r.oldest(), withFirst, "the second one started 200 ms later")
	r.end(second)
	require.Zero(t, r.oldest())
}
