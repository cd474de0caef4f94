package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The body of a 503 names every reason that holds: a broker that refuses heartbeats and
// fetches also ends the membership, and whichever passes the session timeout first must not
// hide the others.
func TestHealthCheckNamesEveryReason(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name string
		h    *health
		want []string // the reasons, in this order; none: ready
	}{
		{name: "never joined", h: &health{}, want: []string{"not a member of the consumer group yet"}},
		{name: "a member, nothing failing", h: &health{joined: true, member: true}},
		{name: "failures within the grace", h: &health{joined: true, notMemberSince: ago(time.Second), heartbeatFailing: ago(time.Second),
			fetchFailing: map[int]time.Time{0: ago(time.Second)}}},
		{name: "a broker refusing heartbeats and fetches", h: &health{joined: true, notMemberSince: ago(3 * time.Second),
			heartbeatFailing: ago(4 * time.Second), fetchFailing: map[int]time.Time{2: ago(5 * time.Second), 0: ago(3 * time.Second), 1: ago(time.Second)}},
			want: []string{"not a member of the consumer group for 3s", "no successful heartbeat for 4s",
				"no successful fetch of request partition 0 for 3s", "no successful fetch of request partition 2 for 5s"}},
		{name: "heartbeats failing while still a member", h: &health{joined: true, member: true, heartbeatFailing: ago(3 * time.Second)},
			want: []string{"no successful heartbeat for 3s"}},
		{name: "a stuck lane beside a failing fetch", h: &health{joined: true, member: true, stuckAfter: time.Minute,
			oldest: func() time.Duration { return 2 * time.Minute }, fetchFailing: map[int]time.Time{1: ago(3 * time.Second)}},
			want: []string{"no successful fetch of request partition 1 for 3s", "a lane has been working on one request for 2m0s (OFFSETAGENT_STUCK_AFTER 1m0s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			h.grace = 2 * time.Second
			if h.oldest == nil {
				h.oldest = func() time.Duration { return 0 }
			}
			err := h.check(now)
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, strings.Join(tt.want, "; "))
		})
	}
}
