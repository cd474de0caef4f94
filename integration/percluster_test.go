package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// Passwords of the test's principals: none may appear in any output, report or command line.
const (
	migratorAPassword = "a-Migr4tor-pw"
	migratorBPassword = "b-Migr4tor-pw"
	restPassword      = "rest-Migr4tor-pw"
)

// allow is a literal (or prefixed) ALLOW ACL for kfake.User.
func allow(res kmsg.ACLResourceType, name string, prefixed bool, op kmsg.ACLOperation) kfake.ACL {
	pattern := kmsg.ACLResourcePatternTypeLiteral
	if prefixed {
		pattern = kmsg.ACLResourcePatternTypePrefixed
	}
	return kfake.ACL{Resource: res, Name: name, Pattern: pattern, Operation: op, Allow: true}
}

// hideUndescribableTopics makes kfake answer an OffsetFetch for every partition of a group as
// Kafka does (KafkaApis.handleOffsetFetchRequest): the topics the principal may not Describe
// are left out of the answer, silently. kfake checks only the group's ACL there. The control
// turns such a fetch into one for the partitions of visible, which the test's only
// non-superuser reader may Describe; a fetch by name is answered by kfake as it is.
func hideUndescribableTopics(fake *kfake.Cluster, visible map[string]int32) {
	fake.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		if r.Version < 2 || r.Version > 7 || r.Topics != nil {
			return nil, nil, false
		}
		r.Topics = []kmsg.OffsetFetchRequestTopic{}
		for t, n := range visible {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = t
			for p := range n {
				rt.Partitions = append(rt.Partitions, p)
			}
			r.Topics = append(r.Topics, rt)
		}
		return nil, nil, false
	})
}

// TestMigrateEachClusterItsOwnCredentials proves on kfake that migrate reaches each cluster with
// its own security settings and needs only the ACLs the docs list: A speaks SCRAM-SHA-512 over TLS
// behind its own CA, B SASL/PLAIN over TLS behind another; `offsetagent migrate` gets each
// cluster's settings from its own properties file (--from-command-config, --to-command-config), as
// a principal that has exactly the ACLs docs/migration.md lists. A sink whose topic that principal
// may not Describe is refused by name (Kafka would leave its offsets out of the group's answer: B's
// sink would replay its topic); a topics.regex sink read without A's REST API is refused too; the
// rest migrate. No password reaches the output, the report or the command line.
func TestMigrateEachClusterItsOwnCredentials(t *testing.T) {
	pkiA, pkiB := newTestPKI(t), newTestPKI(t)
	n := topicSeq.Add(1)
	orders, hidden := fmt.Sprintf("orders-%d", n), fmt.Sprintf("hidden-%d", n)
	// Names fixed before the clusters start: the ACLs are seeded with them.
	cfgA := testConfig(&cluster{})
	cfgB := testConfig(&cluster{})
	cfgA.RequestTopicPartitions, cfgB.RequestTopicPartitions = 1, 1

	// Exactly the ACLs docs/migration.md lists for A and for B (without --stop-source).
	aclsA := []kfake.ACL{
		allow(kmsg.ACLResourceTypeTopic, cfgA.ConfigTopic, false, kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, cfgA.OffsetsTopic, false, kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "connect-", true, kmsg.ACLOperationDescribe),
		allow(kmsg.ACLResourceTypeTopic, orders, false, kmsg.ACLOperationDescribe),
	}
	aclsB := []kfake.ACL{
		allow(kmsg.ACLResourceTypeTopic, cfgB.ConfigTopic, false, kmsg.ACLOperationDescribe),
		allow(kmsg.ACLResourceTypeTopic, cfgB.OffsetsTopic, false, kmsg.ACLOperationDescribe),
		allow(kmsg.ACLResourceTypeTopic, cfgB.RequestTopic, false, kmsg.ACLOperationWrite),
		allow(kmsg.ACLResourceTypeTopic, cfgB.ResultTopic, false, kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, cfgB.GroupID, false, kmsg.ACLOperationDescribe), // the agent check
		allow(kmsg.ACLResourceTypeTopic, source.DefaultStateTopic, false, kmsg.ACLOperationRead),
	}
	a := startSecureCluster(t, kfake.TLS(pkiA.serverConfig(false)), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-512", "admin-a", "admin-a-pw"), kfake.User("SCRAM-SHA-512", "migrator-a", migratorAPassword, aclsA...))
	b := startSecureCluster(t, kfake.TLS(pkiB.serverConfig(false)), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "agent-b", "agent-b-pw"), kfake.User("PLAIN", "migrator-b", migratorBPassword, aclsB...))
	cfgA.Brokers, cfgB.Brokers = a.brokers, b.brokers
	cfgA.Security = clientconfig.Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "admin-a", SASLPassword: "admin-a-pw", TLSEnabled: true, TLSCAFile: pkiA.CAFile}
	cfgB.Security = clientconfig.Security{SASLMechanism: "PLAIN", SASLUsername: "agent-b", SASLPassword: "agent-b-pw", TLSEnabled: true, TLSCAFile: pkiB.CAFile}

	// A's connectors, created by an agent on A as its superuser.
	agentA := startAgent(t, cfgA, agent.Options{})
	admA := newSecureClient(t, cfgA)
	createTopic := func(cl *secureClient, topic string, parts int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: parts, ReplicationFactor: 1}}})
		require.NoError(t, err)
	}
	createTopic(admA, orders, 3)
	createTopic(admA, hidden, 1)
	sinkBody := func(name, subscribe, topic string, offs ...int) string {
		var es []string
		for p, o := range offs {
			es = append(es, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, topic, p, o))
		}
		return fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"out.txt",%s},"initial_offsets":[%s]}`, name, fileSink, subscribe, strings.Join(es, ","))
	}
	var ids []string
	for _, body := range []string{
		readFile(t, "testdata/file-src-1.json"),
		sinkBody("sink-ok", fmt.Sprintf(`"topics":%q`, orders), orders, 10, 20, 30),
		sinkBody("sink-hidden", fmt.Sprintf(`"topics":%q`, hidden), hidden, 5),
		sinkBody("sink-regex", `"topics.regex":"orders-.*"`, orders, 7, 8, 9),
	} {
		ids = append(ids, admA.publish(body, events.RequestOptions{}))
	}
	for _, id := range ids {
		r := admA.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)
	hideUndescribableTopics(a.fake, map[string]int32{orders: 3})

	startAgent(t, cfgB, agent.Options{})
	admB := newSecureClient(t, cfgB)
	createTopic(admB, orders, 3)

	dir := t.TempDir()
	caB, err := os.ReadFile(pkiB.CAFile)
	require.NoError(t, err)
	aProps := filepath.Join(dir, "a.properties")
	bProps := filepath.Join(dir, "b.properties")
	require.NoError(t, os.WriteFile(aProps, []byte(`# A: on-premises, SCRAM behind our own CA
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="migrator-a" \
    password="`+migratorAPassword+`";
ssl.truststore.type=PEM
ssl.truststore.location=`+pkiA.CAFile+`
client.id=migration
`), 0o600))
	// B's CA inline, one certificate line per continued line, as Kafka's docs write it.
	inline := strings.ReplaceAll(strings.TrimSpace(string(caB)), "\n", " \\\n  ")
	require.NoError(t, os.WriteFile(bProps, []byte(`security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username='migrator-b' password='`+migratorBPassword+`';
ssl.truststore.type=PEM
ssl.truststore.certificates=`+inline+`
`), 0o600))

	report := filepath.Join(dir, "report.json")
	env := []string{"PATH=" + os.Getenv("PATH"),
		"OFFSETAGENT_REQUEST_TOPIC=" + cfgB.RequestTopic, "OFFSETAGENT_RESULT_TOPIC=" + cfgB.ResultTopic,
		"OFFSETAGENT_CONFIG_TOPIC=" + cfgB.ConfigTopic, "OFFSETAGENT_OFFSETS_TOPIC=" + cfgB.OffsetsTopic}
	out, code := runCLI(t, env, "migrate",
		"--from-brokers", strings.Join(a.brokers, ","), "--from-config-topic", cfgA.ConfigTopic, "--from-offsets-topic", cfgA.OffsetsTopic,
		"--from-command-config", aProps,
		"--to-brokers", strings.Join(b.brokers, ","), "--to-command-config", bProps,
		"--timeout", "1m", "--report", report, "--no-verify")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "client.id: accepted, without effect")

	rep, err := os.ReadFile(report)
	require.NoError(t, err)
	var parsed struct {
		Connectors []struct {
			Name, Outcome, Message string
			Offsets                int
		} `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal(rep, &parsed))
	got := map[string]string{}
	for _, c := range parsed.Connectors {
		got[c.Name] = c.Outcome
		switch c.Name {
		case "sink-ok":
			require.Equal(t, 3, c.Offsets)
		case "sink-hidden":
			require.Contains(t, c.Message, `principal User:migrator-a is not allowed to Describe Topic "`+hidden+`" (TOPIC_AUTHORIZATION_FAILED)`)
			require.Contains(t, c.Message, "--allow-unreadable-offsets")
		case "sink-regex":
			require.Contains(t, c.Message, "topics.regex")
			require.Contains(t, c.Message, "User:migrator-a")
		}
	}
	require.Equal(t, map[string]string{"file-src-1": "succeeded", "sink-ok": "succeeded", "sink-hidden": "skipped", "sink-regex": "skipped"}, got, string(rep))

	// B holds sink-ok's offsets, committed by B's agent.
	fetchCtx, cancelFetch := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelFetch()
	gos, err := kafkaio.FetchGroupOffsets(fetchCtx, admB.kc, "connect-sink-ok")
	require.NoError(t, err)
	require.Len(t, gos, 3)

	// The user says to go on: export gives sink-hidden a body without its unreadable offsets.
	out, code = runCLI(t, env, "export", "--include", "sink-hidden",
		"--from-brokers", strings.Join(a.brokers, ","), "--from-config-topic", cfgA.ConfigTopic, "--from-offsets-topic", cfgA.OffsetsTopic,
		"--from-command-config", aProps, "--allow-unreadable-offsets")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"name":"sink-hidden"`)
	require.Contains(t, out, "sink offsets left out (--allow-unreadable-offsets)")

	// A topics.regex sink is compared with A's REST API (HTTPS with A's CA and basic auth, from
	// --from-connect-config): when A's worker reports offsets of a topic the principal may not
	// Describe, the sink is refused naming it; when it reports none beyond what was read, the
	// sink is exported with them.
	var workerSeesHidden atomic.Bool
	restA := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "migrator" || p != restPassword {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/":
			_, _ = w.Write([]byte(`{"version":"4.3.1","commit":"x","kafka_cluster_id":"a"}`))
		case "/connectors":
			_, _ = w.Write([]byte(`["file-src-1","sink-hidden","sink-ok","sink-regex"]`))
		case "/connectors/sink-regex/offsets":
			offs := []string{}
			for p, o := range []int{7, 8, 9} {
				offs = append(offs, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, orders, p, o))
			}
			if workerSeesHidden.Load() {
				offs = append(offs, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":1}}`, hidden))
			}
			_, _ = fmt.Fprintf(w, `{"offsets":[%s]}`, strings.Join(offs, ","))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"not found"}`))
		}
	}))
	restA.TLS = pkiA.serverConfig(false)
	restA.StartTLS()
	t.Cleanup(restA.Close)
	restProps := filepath.Join(dir, "a-rest.properties")
	require.NoError(t, os.WriteFile(restProps, []byte("basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=migrator:"+restPassword+
		"\nssl.truststore.type=PEM\nssl.truststore.location="+pkiA.CAFile+"\n"), 0o600))
	exportRegex := func() (string, int) {
		return runCLI(t, env, "export", "--include", "sink-regex",
			"--from-brokers", strings.Join(a.brokers, ","), "--from-config-topic", cfgA.ConfigTopic, "--from-offsets-topic", cfgA.OffsetsTopic,
			"--from-command-config", aProps, "--from-connect-url", restA.URL, "--from-connect-config", restProps)
	}
	regexOut, code := exportRegex()
	require.Equal(t, 0, code, regexOut)
	require.Contains(t, regexOut, `"name":"sink-regex"`)
	require.Contains(t, regexOut, `"kafka_offset":9`)
	workerSeesHidden.Store(true)
	hiddenOut, code := exportRegex()
	require.Equal(t, 1, code, hiddenOut)
	// (in the warning's quoted attribute)
	require.Contains(t, hiddenOut, `principal User:migrator-a is not allowed to Describe Topic \"`+hidden+`\" (TOPIC_AUTHORIZATION_FAILED)`)

	for _, text := range []string{out, string(rep), regexOut, hiddenOut} {
		require.NotContains(t, text, migratorAPassword)
		require.NotContains(t, text, migratorBPassword)
		require.NotContains(t, text, restPassword)
	}
}

// runCLI runs the offsetagent binary with args and env, bounded in time, and returns its
// stdout and stderr together and its exit code. While it runs, its command line
// (/proc/PID/cmdline) is checked for the test's passwords.
func runCLI(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	// The binary is built on the first call: that is not the command's time.
	bin := plainAgentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); err == nil {
		require.NotContains(t, string(cmdline), migratorAPassword)
		require.NotContains(t, string(cmdline), migratorBPassword)
		require.NotContains(t, string(cmdline), restPassword)
	}
	err := cmd.Wait()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		require.True(t, ok, "%v\n%s", err, buf.String())
		code = exit.ExitCode()
	}
	return buf.String(), code
}
