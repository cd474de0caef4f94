package integration

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// Where kfake's ACL checks differ from Apache Kafka's (StandardAuthorizer), which the real
// tier (realkafka/secured) covers:
//   - an OffsetFetch of every topic of a group returns the topics the principal may not
//     Describe (Kafka leaves them out), so a group's entries on such topics are seen here;
//   - an OffsetDelete of an unknown group answers GROUP_ID_NOT_FOUND before the Delete ACL
//     check, and it checks no topic ACL (Kafka checks Delete on the group, then Read on each
//     topic);
//   - an admin OffsetCommit to a group with members answers UNKNOWN_MEMBER_ID before the topic
//     ACLs (Kafka's API layer checks topics and partitions first), and one whose partitions
//     all do not exist creates an unknown group empty (Kafka never reaches the coordinator).
//
// The permission probes are built not to depend on those (see internal/kafkaio/probe.go).

// aclRow is one operation of a row of the ACL table of docs/operations.md.
type aclRow struct {
	resource kmsg.ACLResourceType
	name     string // as the table writes it: a default name or a <placeholder>
	pattern  kmsg.ACLResourcePatternType
	op       kmsg.ACLOperation
	opName   string // as the table and kafka-acls.sh spell it: Read, Write, Delete
}

func (r aclRow) String() string {
	return fmt.Sprintf("%s %s %s", r.opName, r.resource, r.name)
}

// docsACLs reads the first table of the "Kafka ACLs" section of docs/operations.md: the
// ACLs the agent needs. The test grants exactly these, so the docs cannot drift from what
// is proven.
func docsACLs(t *testing.T) []aclRow {
	t.Helper()
	b, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## Kafka ACLs\n")
	require.GreaterOrEqual(t, i, 0, "docs/operations.md has no Kafka ACLs section")
	var rows []aclRow
	inTable := false
	for _, line := range strings.Split(doc[i:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the first table only: the next ones are optional ACLs
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		if !inTable { // header
			require.Equal(t, []string{"Resource", "Name", "Pattern", "Operations", "Why"}, cells)
			inTable = true
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		var rt kmsg.ACLResourceType
		switch cells[0] {
		case "Topic":
			rt = kmsg.ACLResourceTypeTopic
		case "Group":
			rt = kmsg.ACLResourceTypeGroup
		default:
			t.Fatalf("ACL table: unknown resource type %q", cells[0])
		}
		name := strings.Trim(cells[1], "`")
		pattern := kmsg.ACLResourcePatternTypeLiteral
		if strings.HasPrefix(cells[2], "PREFIXED") {
			pattern = kmsg.ACLResourcePatternTypePrefixed
		}
		for _, op := range strings.Split(cells[3], ",") {
			op = strings.TrimSpace(op)
			o, err := kmsg.ParseACLOperation(strings.ToLower(op))
			require.NoError(t, err, "ACL table operation %q", op)
			rows = append(rows, aclRow{resource: rt, name: name, pattern: pattern, op: o, opName: op})
		}
	}
	require.NotEmpty(t, rows)
	return rows
}

// aclFixture is a kfake cluster with ACLs enforced, an admin superuser and the agent's user
// offsetagent, whose ACLs the test grants and revokes.
type aclFixture struct {
	t       *testing.T
	c       *cluster
	admin   *kgo.Client
	cfg     agent.Config // the agent's, with the table's default names
	adminCl *secureClient
}

const aclSinkTopic = "orders"

func newACLFixture(t *testing.T) *aclFixture {
	t.Helper()
	c := startSecureCluster(t, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-pw"), kfake.User("SCRAM-SHA-256", "offsetagent", "agent-pw"))
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha256Mechanism()),
		kgo.MaxVersions(kversion.V3_9_0())) // topics by name in commits and fetches
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	cfg := testConfig(c)
	cfg.RequestTopic, cfg.ResultTopic, cfg.IntentTopic = "connect-offset-requests", "connect-offset-results", "connect-offset-intents"
	cfg.GroupID, cfg.ConfigTopic, cfg.OffsetsTopic = "offsetagent", "connect-configs", "connect-offsets"
	cfg.CreateConnectTopics = false // Create is an optional ACL: the topics exist
	cfg.RequestTopicPartitions = 1
	cfg.PermissionCheckInterval = 100 * time.Millisecond
	cfg.Security = clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "offsetagent", SASLPassword: "agent-pw"}
	adminCfg := cfg
	adminCfg.Security = clientconfig.Security{SASLMechanism: "SCRAM-SHA-256", SASLUsername: "admin", SASLPassword: "admin-pw"}
	f := &aclFixture{t: t, c: c, admin: admin, cfg: cfg, adminCl: newSecureClient(t, adminCfg)}
	compact := map[string]string{"cleanup.policy": "compact"}
	f.createTopic(cfg.RequestTopic, 1, nil)
	f.createTopic(cfg.ResultTopic, 1, nil)
	f.createTopic(cfg.IntentTopic, 1, compact)
	f.createTopic(cfg.ConfigTopic, 1, compact)
	f.createTopic(cfg.OffsetsTopic, 25, compact)
	f.createTopic(aclSinkTopic, 2, nil)
	return f
}

func (f *aclFixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	f.t.Cleanup(cancel)
	return ctx
}

func (f *aclFixture) createTopic(topic string, partitions int32, configs map[string]string) {
	f.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(f.ctx(), f.admin)
	require.NoError(f.t, err)
	require.Zero(f.t, res.Topics[0].ErrorCode, "create topic %s", topic)
}

// resolve is the concrete name of a row: placeholders become the test's resources.
func (f *aclFixture) resolve(r aclRow) (string, bool) {
	switch r.name {
	case "<sink topics>":
		return aclSinkTopic, true
	case "<connector offsets topics>":
		return "", false // no connector of the test has its own offsets topic
	}
	require.False(f.t, strings.HasPrefix(r.name, "<"), "ACL table: unknown placeholder %s", r.name)
	return r.name, true
}

func (f *aclFixture) aclCreation(r aclRow) kmsg.CreateACLsRequestCreation {
	name, _ := f.resolve(r)
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = r.resource, name, r.pattern
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:offsetagent", "*", r.op, kmsg.ACLPermissionTypeAllow
	return c
}

func (f *aclFixture) grant(rows ...aclRow) {
	f.t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, r := range rows {
		if _, ok := f.resolve(r); ok {
			req.Creations = append(req.Creations, f.aclCreation(r))
		}
	}
	res, err := req.RequestWith(f.ctx(), f.admin)
	require.NoError(f.t, err)
	for _, r := range res.Results {
		require.Zero(f.t, r.ErrorCode)
	}
}

func (f *aclFixture) revoke(r aclRow) {
	f.t.Helper()
	c := f.aclCreation(r)
	req := kmsg.NewPtrDeleteACLsRequest()
	flt := kmsg.NewDeleteACLsRequestFilter()
	flt.ResourceType, flt.ResourceName, flt.ResourcePatternType = c.ResourceType, &c.ResourceName, c.ResourcePatternType
	flt.Principal, flt.Host, flt.Operation, flt.PermissionType = &c.Principal, &c.Host, c.Operation, c.PermissionType
	req.Filters = append(req.Filters, flt)
	res, err := req.RequestWith(f.ctx(), f.admin)
	require.NoError(f.t, err)
	require.Len(f.t, res.Results, 1)
	require.Zero(f.t, res.Results[0].ErrorCode)
	require.Len(f.t, res.Results[0].MatchingACLs, 1, "revoke %s", r)
}

// groupEntries reads a group's committed entries as the admin sees them: offset, committed
// leader epoch and metadata per partition.
func (f *aclFixture) groupEntries(group string) map[string]string {
	f.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	res, err := req.RequestWith(f.ctx(), f.admin)
	require.NoError(f.t, err)
	out := map[string]string{}
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			md := "<null>"
			if p.Metadata != nil {
				md = *p.Metadata
			}
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = fmt.Sprintf("offset=%d epoch=%d metadata=%s", p.Offset, p.LeaderEpoch, md)
		}
	}
	return out
}

// commitEntries commits entries for group as a consumer that stopped would have left them.
func (f *aclFixture) commitEntries(group string, offsets ...int64) {
	f.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = aclSinkTopic
	for p, o := range offsets {
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch, pp.Metadata = int32(p), o, 3, kmsg.StringPtr("by-task-0")
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	res, err := req.RequestWith(f.ctx(), f.admin)
	require.NoError(f.t, err)
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			require.Zero(f.t, p.ErrorCode)
		}
	}
}

// topicRecords counts the records of a topic (what a refused request must not add to).
func (f *aclFixture) topicRecords(topic string) int { return len(f.adminCl.readAll(topic)) }

func readyz(t *testing.T, r *runningAgent) (int, string) {
	t.Helper()
	res, err := http.Get(r.url + "/readyz")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// waitReadyz waits until /readyz answers code with a body that contains want.
func waitReadyz(t *testing.T, r *runningAgent, code int, want string) {
	t.Helper()
	var got int
	var body string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if got, body = readyz(t, r); got == code && strings.Contains(body, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("/readyz: want %d with %q, last %d %q", code, want, got, body)
}

func sinkBody(name string, offsets ...int64) string {
	var entries []string
	for p, o := range offsets {
		entries = append(entries, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, aclSinkTopic, p, o))
	}
	return fmt.Sprintf(`{"name":%q,"config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":%q,"tasks.max":"1"},"initial_offsets":[%s]}`,
		name, aclSinkTopic, strings.Join(entries, ","))
}

func sourceBody(name string) string {
	return fmt.Sprintf(`{"name":%q,"config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"%s.txt","topic":"t","tasks.max":"1"},"initial_offsets":[{"partition":{"filename":"%s.txt"},"offset":{"position":30}}]}`,
		name, name, name)
}

// The ACL table of docs/operations.md, proven on kfake with ACLs enforced: granted exactly
// the table's ACLs, the agent becomes ready and runs the seed example and a sink; then each
// row's operation is revoked in turn (and granted again):
//   - an operation on the agent's own topics and group makes /readyz 503 with a body naming
//     the principal, the operation and the resource, and 200 again once it is granted back;
//     a request meanwhile fails with a message that says the same, nothing written;
//   - an operation a request needs on a connector's resources (its group, its topics, the
//     offsets and config topics) fails a request at validate_offsets with 403 and the same
//     words, before anything is wiped: the sink group's entries are byte-identical after,
//     Connect's topics have no new record.
func TestACLTableMinimalAndSufficient(t *testing.T) {
	f := newACLFixture(t)
	rows := docsACLs(t)
	f.grant(rows...)
	r := startAgent(t, f.cfg, agent.Options{})
	waitReadyz(t, r, http.StatusOK, "")

	// Sufficient: the seed example and a sink over a group that has entries.
	id := f.adminCl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	res := f.adminCl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	f.commitEntries("connect-sink-ok", 5, 6)
	id = f.adminCl.publish(sinkBody("sink-ok", 10, 20), events.RequestOptions{})
	res = f.adminCl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, map[string]string{
		aclSinkTopic + "/0": "offset=10 epoch=-1 metadata=", aclSinkTopic + "/1": "offset=20 epoch=-1 metadata=",
	}, f.groupEntries("connect-sink-ok"))

	// Minimal: each operation is needed.
	agentWide := map[string]bool{f.cfg.RequestTopic: true, f.cfg.GroupID: true, f.cfg.ResultTopic: true,
		f.cfg.IntentTopic: true, f.cfg.ConfigTopic: true, f.cfg.OffsetsTopic: true}
	for i, row := range rows {
		name, ok := f.resolve(row)
		if !ok {
			continue
		}
		t.Run(row.String(), func(t *testing.T) {
			f.t = t
			typ := map[kmsg.ACLResourceType]string{kmsg.ACLResourceTypeTopic: "Topic", kmsg.ACLResourceTypeGroup: "Group"}[row.resource]
			start := time.Now()
			f.revoke(row)
			if agentWide[name] {
				want := fmt.Sprintf(`principal User:offsetagent is not allowed to %s %s %q`, row.opName, typ, name)
				waitReadyz(t, r, http.StatusServiceUnavailable, want)
				t.Logf("503 after %s", time.Since(start).Round(time.Millisecond))
			}
			// A request that needs the operation fails before it writes, naming it. With
			// the result topic's Write gone no result can be written; with the request
			// topic's or the group's Read gone no request is read: nothing to check there
			// but /readyz.
			if row.op == kmsg.ACLOperationWrite && (name == f.cfg.ConfigTopic || name == f.cfg.OffsetsTopic) ||
				!agentWide[name] {
				f.requireRefused(row, typ, name, i)
			}
			if row.op == kmsg.ACLOperationRead && agentWide[name] && name != f.cfg.RequestTopic && name != f.cfg.GroupID {
				// A view the agent depends on cannot be read (the result, intent or a
				// Connect topic): a request is refused before any step, naming the Read,
				// instead of waiting for a read that never comes.
				configsBefore, offsetsBefore := f.topicRecords(f.cfg.ConfigTopic), f.topicRecords(f.cfg.OffsetsTopic)
				id := f.adminCl.publish(sourceBody(fmt.Sprintf("no-read-%d", i)), events.RequestOptions{})
				res := f.adminCl.waitResult(id, resultWait)
				require.Equal(t, events.TypeCreateFailed, res.Type)
				require.Equal(t, 403, res.Data.ErrorCode, res.Data.Message)
				require.Equal(t, "decode_request", res.Data.FailedStep, res.Data.Message)
				require.Contains(t, res.Data.Message, fmt.Sprintf(`principal User:offsetagent is not allowed to Read Topic %q`, name))
				require.Equal(t, configsBefore, f.topicRecords(f.cfg.ConfigTopic))
				require.Equal(t, offsetsBefore, f.topicRecords(f.cfg.OffsetsTopic))
			}
			if row.op == kmsg.ACLOperationWrite && name == f.cfg.IntentTopic {
				// The intent goes first of all writes, and the result can be written.
				configsBefore, offsetsBefore := f.topicRecords(f.cfg.ConfigTopic), f.topicRecords(f.cfg.OffsetsTopic)
				id := f.adminCl.publish(sourceBody(fmt.Sprintf("no-intent-%d", i)), events.RequestOptions{})
				res := f.adminCl.waitResult(id, resultWait)
				require.Equal(t, events.TypeCreateFailed, res.Type)
				require.Equal(t, 403, res.Data.ErrorCode, res.Data.Message)
				require.Contains(t, res.Data.Message, `principal User:offsetagent is not allowed to Write Topic "connect-offset-intents"`)
				require.Equal(t, configsBefore, f.topicRecords(f.cfg.ConfigTopic))
				require.Equal(t, offsetsBefore, f.topicRecords(f.cfg.OffsetsTopic))
			}
			f.grant(row)
			waitReadyz(t, r, http.StatusOK, "")
			t.Logf("revoked and granted again in %s", time.Since(start).Round(time.Millisecond))
		})
	}
	f.t = t
}

// requireRefused sends a request that needs row's operation and checks that it fails at
// validate_offsets with 403 naming the principal, the operation and the resource, with
// nothing written.
func (f *aclFixture) requireRefused(row aclRow, typ, name string, n int) {
	t := f.t
	t.Helper()
	connector := fmt.Sprintf("refused-%d", n)
	var body string
	group := "connect-" + connector
	if row.resource == kmsg.ACLResourceTypeGroup || name == aclSinkTopic || name == f.cfg.ConfigTopic && row.op == kmsg.ACLOperationWrite {
		f.commitEntries(group, 5, 6)
		body = sinkBody(connector, 10, 20)
	} else {
		body = sourceBody(connector)
	}
	groupBefore := f.groupEntries(group)
	configsBefore, offsetsBefore := f.topicRecords(f.cfg.ConfigTopic), f.topicRecords(f.cfg.OffsetsTopic)
	id := f.adminCl.publish(body, events.RequestOptions{})
	res := f.adminCl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "validate_offsets", res.Data.FailedStep, res.Data.Message)
	require.Equal(t, 403, res.Data.ErrorCode, res.Data.Message)
	op := row.opName
	if row.resource == kmsg.ACLResourceTypeGroup {
		name = group // the table's prefix names the connector's group
	}
	require.Regexp(t, regexp.MustCompile(`^principal User:offsetagent is not allowed to `+op+` `+typ+` "`+regexp.QuoteMeta(name)+`" \(\w+_AUTHORIZATION_FAILED\): grant it`),
		res.Data.Message)
	require.Equal(t, groupBefore, f.groupEntries(group), "the group's entries are untouched")
	require.Equal(t, configsBefore, f.topicRecords(f.cfg.ConfigTopic), "nothing written to the config topic")
	require.Equal(t, offsetsBefore, f.topicRecords(f.cfg.OffsetsTopic), "nothing written to the offsets topic")
}

// A broker certificate that expired, one for another host name and an expired client
// certificate each end the agent's start-up within the bound with one error that says so,
// and /readyz is never 200 (runUntilError).
func TestStartupCertificateErrors(t *testing.T) {
	pki := newTestPKI(t)
	expired := time.Now().Add(-time.Hour)
	dir := t.TempDir()
	clientCert, clientKey := dir+"/client.pem", dir+"/client-key.pem"
	pki.leaf(11, "offsetagent", x509.ExtKeyUsageClientAuth, expired, []string{"127.0.0.1"}, clientCert, clientKey)
	runStartupErrorCases(t, []startupErrorCase{
		{name: "expired broker certificate", opts: []kfake.Opt{kfake.TLS(pki.brokerConfig(t, expired, "127.0.0.1"))},
			sec: clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile}, contains: []string{"expired"}},
		{name: "broker certificate for another host", opts: []kfake.Opt{kfake.TLS(pki.brokerConfig(t, time.Now().Add(time.Hour), "broker.example", "10.9.9.9"))},
			sec: clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile}, contains: []string{"valid for 10.9.9.9, not 127.0.0.1"}},
		{name: "expired client certificate", opts: []kfake.Opt{kfake.TLS(pki.serverConfig(true))},
			sec:      clientconfig.Security{TLSEnabled: true, TLSCAFile: pki.CAFile, TLSCertFile: clientCert, TLSKeyFile: clientKey},
			contains: []string{"expired", "certificate"}},
	})
}

// At start-up, a topic the agent cannot see or create ends the start with the permission
// named: no Create for a missing agent topic, nothing at all on Connect's config topic.
func TestStartupRefusedACLsNamePermission(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(f *aclFixture, rows []aclRow) []aclRow
		want string
	}{
		{"result topic missing, no Create", func(f *aclFixture, rows []aclRow) []aclRow {
			f.cfg.ResultTopic = "connect-offset-results-new"
			return rows
		}, `principal User:offsetagent is not allowed to Create Topic "connect-offset-results-new" (TOPIC_AUTHORIZATION_FAILED)`},
		{"no ACL on the config topic", func(f *aclFixture, rows []aclRow) []aclRow {
			var kept []aclRow
			for _, r := range rows {
				if r.name != f.cfg.ConfigTopic {
					kept = append(kept, r)
				}
			}
			return kept
		}, `principal User:offsetagent is not allowed to Read Topic "connect-configs" (TOPIC_AUTHORIZATION_FAILED)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newACLFixture(t)
			f.grant(tc.drop(f, docsACLs(t))...)
			err, took := runUntilError(t, f.cfg, 20*time.Second)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
		})
	}
}
