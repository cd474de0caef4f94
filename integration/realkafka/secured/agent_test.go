package secured_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestSecuredAgent runs the agent on cluster A with exactly the ACLs docs/operations.md lists:
// the seed example and a sink are created end to end (judged through the worker's HTTPS REST
// API); then each ACL is removed in turn and the request or the agent fails fast, with a
// message naming the principal, the operation and the resource, having written nothing.
func TestSecuredAgent(t *testing.T) {
	env.RequirePeers(t)
	c := peers.a
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	user, names := c.newAgentUser(ctx, t, "agent")
	principal := "User:" + user
	sinkTopic := env.Unique("sink-in")
	require.NoError(t, c.createTopic(ctx, sinkTopic, 1, nil))
	c.produce(t, sinkTopic, 10)
	scope := agentScope{names: names, connect: c.connect, sinkTopic: sinkTopic}
	c.grantAll(t, principal, agentACLs(scope))

	a := startAgentProc(t, "agent", c.agentEnv(names, user))
	waitReady(t, a)

	t.Run("seed example", func(t *testing.T) { c.requireSeedExample(t, names, "seed") })
	t.Run("sink", func(t *testing.T) {
		name := env.Unique("sink")
		out := env.WriteFile(t, name+".out", "")
		res := c.publish(t, names, sinkRequest(name, sinkTopic, out, 6))
		require.Equal(t, events.TypeCreateSucceeded, res.Type, "failed at %s: %s", res.Data.FailedStep, res.Data.Message)
		tier.WaitState(t, c.worker, name, "RUNNING")
		require.Equal(t, fmt.Sprintf(`[{"offset":{"kafka_offset":6},"partition":{"kafka_partition":0,"kafka_topic":%q}}]`, sinkTopic), tier.SortedOffsetsOf(t, c.worker, name))
		var got string
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(out)
			got = string(b)
			return strings.Count(got, "\n") >= 4
		}, 60*time.Second, 250*time.Millisecond, "sink output %q", got)
		require.Equal(t, "m-06\nm-07\nm-08\nm-09\n", got)
		tier.RestOK(t, c.worker, http.MethodDelete, "/connectors/"+name, nil)
	})

	a.Stop()

	// Each ACL removed in turn, before a fresh agent starts: either the agent is not ready and
	// says which permission it lacks (a topic or group it depends on), and is ready once it is
	// granted again, or it becomes ready and a request that needs the permission fails, naming
	// it, having written nothing.
	for _, r := range agentACLRows {
		for _, op := range r.ops {
			x := acl{r.resource, r.resourceName(scope), r.pattern, op}
			t.Run("without "+x.String(), func(t *testing.T) {
				require.NoError(t, c.revoke(ctx, principal, x))
				defer func() { require.NoError(t, c.grant(ctx, principal, x)) }()
				name := env.Unique("refused")
				group := "connect-" + name
				resource := x.Name
				switch r.key {
				case keySinkGroups:
					resource = group
				case keySinkTopics:
					resource = sinkTopic
				}
				want := permissionPattern(principal, op, resource)
				vars := c.agentEnv(names, user)
				vars["OFFSETAGENT_PERMISSION_CHECK_INTERVAL"] = "1s"
				b := startAgentProc(t, env.Unique("agent-without"), vars)
				deadline := time.Now().Add(30 * time.Second)
				for {
					status, body := b.Readyz()
					if status == http.StatusOK {
						require.True(t, requestLevel(r.key), "/readyz 200 without %s, which the agent depends on: %s\n%s", x, body, b.LogText())
						break
					}
					if want.MatchString(body) || want.MatchString(b.LogText()) {
						t.Logf("not ready (/readyz %d %s), as it should; log:\n%s", status, body, b.LogText())
						// The agent can still write results: a request meanwhile fails, its
						// result naming the permission and the failing step, with nothing
						// written. Without a Write, the agent consumes requests while not
						// ready and the request's own write is refused; without a Read of a
						// view it loads at start, it does not consume requests until it has
						// the view: the request is refused by a running agent that loses the
						// Read (below, once it is ready again).
						if resultsWritable(r.key, op) && op != kmsg.ACLOperationRead {
							c.requireRequestRefused(t, names, name, principal, op, resource)
						}
						// Granted again, the agent becomes ready without a restart; one that was
						// still starting may instead end, with an error naming the permission.
						require.NoError(t, c.grant(ctx, principal, x))
						ready := time.Now().Add(20 * time.Second)
						for {
							if status, _ := b.Readyz(); status == http.StatusOK {
								break
							}
							select {
							case <-b.Done():
								require.Error(t, b.ExitErr(), "the agent ended with exit code 0 without %s", x)
								require.Regexp(t, want, b.LogText(), "the agent ended without naming %s", x)
								b = nil
							case <-time.After(100 * time.Millisecond):
							}
							if b == nil {
								break
							}
							require.True(t, time.Now().Before(ready), "not ready within 20 s of the grant; log:\n%s", b.LogText())
						}
						if !resultsWritable(r.key, op) || op != kmsg.ACLOperationRead {
							return
						}
						if b == nil {
							b = startAgentProc(t, env.Unique("agent-regranted"), vars)
							waitReady(t, b)
						}
						require.NoError(t, c.revoke(ctx, principal, x))
						for notReady := time.Now().Add(20 * time.Second); ; {
							if _, body := b.Readyz(); want.MatchString(body) {
								break
							}
							require.True(t, time.Now().Before(notReady), "/readyz does not name %s within 20 s of its revocation; log:\n%s", x, b.LogText())
							time.Sleep(100 * time.Millisecond)
						}
						c.requireRequestRefused(t, names, env.Unique("refused"), principal, op, resource)
						return
					}
					require.True(t, time.Now().Before(deadline), "no message naming %s within 30 s; /readyz %d %s; log:\n%s", want, status, body, b.LogText())
					time.Sleep(200 * time.Millisecond)
				}
				before := c.endOffsets(t, c.connect.Config, c.connect.Offsets)
				var res tier.Result
				if r.key == keySinkGroups || r.key == keySinkTopics {
					c.commitGroup(t, group, sinkTopic, 3)
					res = c.publish(t, names, sinkRequest(name, sinkTopic, env.WriteFile(t, name+".out", ""), 6))
					require.Equal(t, map[int32]int64{0: 3}, c.groupOffsets(t, group, sinkTopic), "the sink group's offsets must be as they were")
				} else {
					res = c.publish(t, names, sourceRequest(name, env.WriteFile(t, name+".txt", ""), 0))
				}
				require.Equal(t, events.TypeCreateFailed, res.Type, "the request succeeded without %s: the documented list is not minimal", x)
				requireNamesPermission(t, res.Data.Message, principal, op, resource)
				status, _ := tier.Rest(t, c.worker, http.MethodGet, "/connectors/"+name, nil)
				require.Equal(t, http.StatusNotFound, status, "the connector must not exist")
				require.Equal(t, before, c.endOffsets(t, c.connect.Config, c.connect.Offsets), "nothing written to Connect's topics")
			})
		}
	}
}

// newAgentUser adds a SCRAM user for an agent and creates the agent's topics, both named after
// prefix: it returns the user's name and the agent's names.
func (c *cluster) newAgentUser(ctx context.Context, t *testing.T, prefix string) (string, agentNames) {
	t.Helper()
	user := env.Unique(prefix)
	_, err := c.addUser(ctx, user)
	require.NoError(t, err)
	names := newAgentNames(prefix)
	c.createAgentTopics(t, names)
	return user, names
}

// requireSeedExample publishes the seed example (a FileStream source born RUNNING at position
// 60, named after prefix) to the agent of names, requires it created, RUNNING on c's worker at
// that position, and deletes it.
func (c *cluster) requireSeedExample(t *testing.T, names agentNames, prefix string) {
	t.Helper()
	name := env.Unique(prefix)
	content, _ := tier.Lines("before", 0, 5)
	file := env.WriteFile(t, name+".txt", content)
	res := c.publish(t, names, sourceRequest(name, file, 60))
	require.Equal(t, events.TypeCreateSucceeded, res.Type, "failed at %s: %s", res.Data.FailedStep, res.Data.Message)
	tier.WaitState(t, c.worker, name, "RUNNING")
	require.Equal(t, fmt.Sprintf(`[{"offset":{"position":60},"partition":{"filename":%q}}]`, file), tier.SortedOffsetsOf(t, c.worker, name))
	tier.RestOK(t, c.worker, http.MethodDelete, "/connectors/"+name, nil)
}

// requireRequestRefused publishes a source request named name and requires its failed
// result to name the permission and the failing step, with nothing written.
func (c *cluster) requireRequestRefused(t *testing.T, names agentNames, name, principal string, op kmsg.ACLOperation, resource string) {
	t.Helper()
	before := c.endOffsets(t, c.connect.Config, c.connect.Offsets)
	res := c.publish(t, names, sourceRequest(name, env.WriteFile(t, name+".txt", ""), 0))
	t.Logf("result: %s at %q: %s", res.Type, res.Data.FailedStep, res.Data.Message)
	require.Equal(t, events.TypeCreateFailed, res.Type, "a request succeeded without %s %s", opWord(op), resource)
	require.NotEmpty(t, res.Data.FailedStep, "the failed result names the failing step")
	requireNamesPermission(t, res.Data.Message, principal, op, resource)
	status, _ := tier.Rest(t, c.worker, http.MethodGet, "/connectors/"+name, nil)
	require.Equal(t, http.StatusNotFound, status, "the connector must not exist")
	require.Equal(t, before, c.endOffsets(t, c.connect.Config, c.connect.Offsets), "nothing written to Connect's topics")
}

// resultsWritable: the agent can still consume requests and write results without op on the
// row's resource (all but Read on the request topic or the group, and Write on the result
// topic).
func resultsWritable(key string, op kmsg.ACLOperation) bool {
	switch {
	case key == "OFFSETAGENT_REQUEST_TOPIC", key == "OFFSETAGENT_GROUP_ID":
		return false
	case key == "OFFSETAGENT_RESULT_TOPIC" && op == kmsg.ACLOperationWrite:
		return false
	}
	return true
}

// requestLevel: rows whose resources a request uses (Connect's topics, sink groups and topics),
// not the agent's own.
func requestLevel(key string) bool {
	switch key {
	case "OFFSETAGENT_CONFIG_TOPIC", "OFFSETAGENT_OFFSETS_TOPIC", keySinkGroups, keySinkTopics:
		return true
	}
	return false
}

// opWord is the operation as kafka-acls.sh and the agent's messages spell it.
func opWord(op kmsg.ACLOperation) string {
	return map[kmsg.ACLOperation]string{kmsg.ACLOperationRead: "Read", kmsg.ACLOperationWrite: "Write",
		kmsg.ACLOperationDescribe: "Describe", kmsg.ACLOperationDescribeConfigs: "DescribeConfigs",
		kmsg.ACLOperationDelete: "Delete", kmsg.ACLOperationCreate: "Create"}[op]
}

// permissionPattern matches the one shape of a refused permission's message.
func permissionPattern(principal string, op kmsg.ACLOperation, resource string) *regexp.Regexp {
	return regexp.MustCompile(`principal ` + regexp.QuoteMeta(principal) + ` is not allowed to ` + opWord(op) +
		` (Topic|Group) "` + regexp.QuoteMeta(resource) + `"`)
}

func requireNamesPermission(t *testing.T, msg, principal string, op kmsg.ACLOperation, resource string) {
	t.Helper()
	require.Regexp(t, permissionPattern(principal, op, resource), msg, "the message must name the principal, the operation and the resource")
}

// sourceRequest is the seed example's shape: a FileStream source born RUNNING at position.
func sourceRequest(name, file string, position int) map[string]any {
	return map[string]any{"name": name,
		"config": map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"file": file, "topic": name + "-out", "tasks.max": "1"},
		"initial_state":   "RUNNING",
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"filename": file}, "offset": map[string]any{"position": position}}}}
}

// sinkRequest is a FileStream sink of topic's partition 0 born at offset.
func sinkRequest(name, topic, out string, offset int) map[string]any {
	return map[string]any{"name": name,
		"config": map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"topics": topic, "file": out, "tasks.max": "1"},
		"initial_offsets": []any{map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0},
			"offset": map[string]any{"kafka_offset": offset}}}}
}

// produce writes n JSON strings "m-00".. to topic as the admin.
func (c *cluster) produce(t *testing.T, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `"m-%02d"`, i)})
	}
	require.NoError(t, c.admin.ProduceSync(ctx, recs...).FirstErr())
}

// endOffsets returns the end offset of every partition of topics, as the admin sees them.
func (c *cluster) endOffsets(t *testing.T, topics ...string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		tn := tp
		mt.Topic = &tn
		md.Topics = append(md.Topics, mt)
	}
	mresp, err := md.RequestWith(ctx, c.admin)
	require.NoError(t, err)
	req := kmsg.NewPtrListOffsetsRequest()
	for _, mt := range mresp.Topics {
		require.NoError(t, kerrOf(mt.ErrorCode, nil))
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = *mt.Topic
		for _, p := range mt.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = p.Partition, -1
			lt.Partitions = append(lt.Partitions, lp)
		}
		req.Topics = append(req.Topics, lt)
	}
	resp, err := req.RequestWith(ctx, c.admin)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.NoError(t, kerrOf(p.ErrorCode, nil))
			out[fmt.Sprintf("%s[%d]", rt.Topic, p.Partition)] = p.Offset
		}
	}
	return out
}

// commitGroup commits offset for topic's partition 0 in group, as the admin.
func (c *cluster) commitGroup(t *testing.T, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, p)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.admin)
	require.NoError(t, err)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.NoError(t, kerrOf(p.ErrorCode, nil))
		}
	}
}

// groupOffsets returns group's committed offsets of topic, as the admin sees them.
func (c *cluster) groupOffsets(t *testing.T, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.admin)
	require.NoError(t, err)
	require.NoError(t, kerrOf(resp.ErrorCode, nil))
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.NoError(t, kerrOf(p.ErrorCode, nil))
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}
