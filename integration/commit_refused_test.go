package integration

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// A sink's offset commit that the coordinator refuses for every partition with an error
// that says nothing was committed (a missing ACL on the group or on the topic) left nothing
// of the request in the group: the cleanup has nothing to undo, so it does not delete the
// group (here refused too, as it would be for the same missing ACL), and it is complete,
// not counted in offsetagent_cleanups_incomplete_total.
func TestRefusedSinkCommitNothingLeft(t *testing.T) {
	cases := []struct {
		name string
		err  *kerr.Error
	}{
		{name: "group authorization failed", err: kerr.GroupAuthorizationFailed},
		{name: "topic authorization failed", err: kerr.TopicAuthorizationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.start(t, "before:write_offsets", func(agent.Config) []kfake.Fault {
				return []kfake.Fault{
					commitFault(faultSinkGroup, tc.err, -1),
					{Keys: []kmsg.Key{kmsg.DeleteGroups}, Group: faultSinkGroup, Err: kerr.GroupAuthorizationFailed, Count: -1},
				}
			})
			r.cl.createTopic("orders", 3)
			id := r.cl.publish(faultSinkBody, events.RequestOptions{})
			res := r.cl.waitResult(id, resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
			require.Equal(t, "write_offsets", res.Data.FailedStep, res.Data.Message)
			require.Equal(t, 403, res.Data.ErrorCode, res.Data.Message)
			require.Positive(t, r.hits())
			cu := res.Data.Cleanup
			require.NotNil(t, cu)
			require.Equal(t, events.NothingUndone, cu.Summary, "left: %s; error: %s", cu.Left, cu.Error)
			require.Zero(t, cu.OffsetsRemoved)
			require.Empty(t, r.cl.groupOffsets(faultSinkGroup))
			require.Empty(t, r.cl.live(r.cfg.ConfigTopic))
			r.agent.waitMetric(t, 1, "offsetagent_requests_total", "result", "failed")
			require.Zero(t, r.agent.sumCounter(t, "offsetagent_cleanups_incomplete_total"))
		})
	}
}
