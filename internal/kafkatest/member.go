package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member is one member of a group joined by JoinGroup, as a group protocol's client joins it:
// its JoinGroup metadata for protocol, and the assignment its SyncGroup gives it.
type Member struct {
	ProtocolType, Protocol string
	Metadata, Assignment   []byte
	// SessionTimeout is the member's session (default one minute: the member stays while
	// the test runs, with no heartbeat).
	SessionTimeout time.Duration
}

// Joined is a member JoinGroup made: Leave ends its membership.
type Joined struct {
	cl       *kgo.Client
	group    string
	MemberID string
}

// JoinGroup makes m the only member, and so the leader, of group: JoinGroup (again with the
// member id the coordinator asks for), then SyncGroup with m.Assignment as its own, so that the
// group is Stable and DescribeGroups shows m's metadata and assignment. The client is closed
// with t, leaving the member in the group until its session expires, as a killed process does.
func JoinGroup(t testing.TB, brokers []string, group string, m Member) *Joined {
	t.Helper()
	if m.SessionTimeout <= 0 {
		m.SessionTimeout = time.Minute
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, m.ProtocolType
	join.SessionTimeoutMillis = int32(m.SessionTimeout.Milliseconds())
	join.RebalanceTimeoutMillis = 10_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = m.Protocol, m.Metadata
	join.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	var jr *kmsg.JoinGroupResponse
	for range 2 { // the first join may be asked to come again with its member id
		jr, err = join.RequestWith(ctx, cl)
		require.NoError(t, err)
		if jr.ErrorCode != kerr.MemberIDRequired.Code {
			break
		}
		join.MemberID = jr.MemberID
	}
	require.Zero(t, jr.ErrorCode, "JoinGroup %s: %v", group, kerr.ErrorForCode(jr.ErrorCode))
	require.Equal(t, jr.MemberID, jr.LeaderID, "the only member leads")
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = &m.ProtocolType, &m.Protocol
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = jr.MemberID, m.Assignment
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{a}
	sr, err := sync.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, sr.ErrorCode, "SyncGroup %s: %v", group, kerr.ErrorForCode(sr.ErrorCode))
	return &Joined{cl: cl, group: group, MemberID: jr.MemberID}
}

// Leave ends the membership (LeaveGroup), as a worker that shuts down cleanly does.
func (j *Joined) Leave(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = j.group
	req.MemberID = j.MemberID
	mem := kmsg.NewLeaveGroupRequestMember()
	mem.MemberID = j.MemberID
	req.Members = []kmsg.LeaveGroupRequestMember{mem}
	res, err := req.RequestWith(ctx, j.cl)
	require.NoError(t, err)
	require.Zero(t, res.ErrorCode, "LeaveGroup %s: %v", j.group, kerr.ErrorForCode(res.ErrorCode))
}

// RemoveMembers removes every member of group (DescribeGroups, then one LeaveGroup naming
// them), as the coordinator removes a member whose session expired: kfake takes a member's
// leave and its session's expiry down the same path (the member removed, the group
// rebalanced). For a test that knows the members' processes are dead: the next member then
// joins at once instead of waiting out their session timeout. A member gone meanwhile
// (UNKNOWN_MEMBER_ID), or a group without any (GROUP_ID_NOT_FOUND), is no error.
func RemoveMembers(t testing.TB, brokers []string, group string) {
	t.Helper()
	cl, ctx, done := requestClient(t, brokers)
	defer done()
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups = []string{group}
	dr, err := desc.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, dr.Groups, 1)
	if code := dr.Groups[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		require.Zero(t, code, "DescribeGroups %s: %v", group, kerr.ErrorForCode(code))
	}
	if len(dr.Groups[0].Members) == 0 {
		return
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	for _, m := range dr.Groups[0].Members {
		mem := kmsg.NewLeaveGroupRequestMember()
		mem.MemberID = m.MemberID
		req.Members = append(req.Members, mem)
	}
	res, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, res.ErrorCode, "LeaveGroup %s: %v", group, kerr.ErrorForCode(res.ErrorCode))
	for _, m := range res.Members {
		if m.ErrorCode != kerr.UnknownMemberID.Code {
			require.Zero(t, m.ErrorCode, "LeaveGroup %s member %s: %v", group, m.MemberID, kerr.ErrorForCode(m.ErrorCode))
		}
	}
}
