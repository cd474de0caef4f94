package secured_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// migrateACLs are the ACLs docs/migration.md lists for the principal running migrate, on A and
// on B ("Secured clusters": Describe implied by Read, Write and Delete), written here once:
// TestSecuredMigrate grants exactly these for its names, and TestMigrateACLsAreTheDocumented
// checks them, for the doc's names, against the doc's kafka-acls.sh lines. The state topic's
// Create is left out: the test creates the topic, as the doc allows.
func migrateACLs(a tier.Connect, sinkTopicsA []string, b tier.Connect, bAgent agentNames, stateTopic string) (onA, onB []acl) {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	onA = []acl{
		{topic, a.Config, lit, kmsg.ACLOperationRead},
		{topic, a.Offsets, lit, kmsg.ACLOperationRead},
		{group, "connect-", pre, kmsg.ACLOperationDescribe},
	}
	for _, s := range sinkTopicsA {
		onA = append(onA, acl{topic, s, lit, kmsg.ACLOperationDescribe})
	}
	onB = []acl{
		{topic, b.Config, lit, kmsg.ACLOperationDescribe},
		{topic, b.Offsets, lit, kmsg.ACLOperationDescribe},
		{topic, bAgent.requests, lit, kmsg.ACLOperationWrite},
		{topic, bAgent.results, lit, kmsg.ACLOperationRead},
		{group, bAgent.group, lit, kmsg.ACLOperationDescribe}, // the agent check
		{topic, stateTopic, lit, kmsg.ACLOperationRead}, {topic, stateTopic, lit, kmsg.ACLOperationWrite},
	}
	return onA, onB
}

// TestMigrateACLsAreTheDocumented parses the kafka-acls.sh lines of docs/migration.md's
// "Secured clusters" and requires migrateACLs, for the doc's names, to be exactly them (less
// the state topic's Create).
func TestMigrateACLsAreTheDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/migration.md")
	require.NoError(t, err)
	text := string(doc)
	i := strings.Index(text, "## Secured clusters")
	require.GreaterOrEqual(t, i, 0)
	text = text[i:]
	got := map[string]bool{}
	side := ""
	var cmd string
	for _, line := range strings.Split(text, "\n") {
		switch strings.TrimSpace(line) {
		case "# A":
			side = "A"
			continue
		case "# B":
			side = "B"
			continue
		}
		if side == "" {
			continue
		}
		if strings.HasPrefix(line, "```") {
			break
		}
		cmd += " " + strings.SplitN(line, "#", 2)[0]
		if strings.HasSuffix(strings.TrimSpace(line), "\\") {
			cmd = strings.TrimSuffix(strings.TrimSpace(cmd), "\\")
			continue
		}
		f := strings.Fields(cmd)
		cmd = ""
		var opsOf, topics, groups []string
		pattern := "LITERAL"
		for j := 0; j+1 < len(f); j++ {
			switch f[j] {
			case "--operation":
				opsOf = append(opsOf, f[j+1])
			case "--topic":
				topics = append(topics, f[j+1])
			case "--group":
				groups = append(groups, f[j+1])
			case "--resource-pattern-type":
				pattern = strings.ToUpper(f[j+1])
			}
		}
		for _, op := range opsOf {
			if op == "Create" {
				continue
			}
			for _, tp := range topics {
				got[side+" "+op+" TOPIC "+tp+" "+pattern] = true
			}
			for _, g := range groups {
				got[side+" "+op+" GROUP "+g+" "+pattern] = true
			}
		}
	}
	defaults := tier.Connect{Config: "connect-configs", Offsets: "connect-offsets"}
	onA, onB := migrateACLs(defaults, []string{"orders"}, defaults,
		agentNames{requests: "connect-offset-requests", results: "connect-offset-results", group: "offsetagent"}, "offsetagent-migration-states")
	want := map[string]bool{}
	for side, acls := range map[string][]acl{"A": onA, "B": onB} {
		for _, a := range acls {
			want[side+" "+opWord(a.Op)+" "+a.Resource.String()+" "+a.Name+" "+a.Pattern.String()] = true
		}
	}
	require.Equal(t, want, got, "docs/migration.md's kafka-acls.sh lines and migrateACLs differ")
}

// TestSecuredMigrate moves a FileStream source and a FileStream sink from A to B with
// `migrate --stop-source`, each cluster with its own credentials and CA, given in Kafka client
// properties files (--from-command-config, --to-command-config) and Connect REST properties
// files (--from-connect-config, --to-connect-config), with exactly the documented ACLs. Then a
// sink whose topic on A the principal may not describe is refused (exit 1), naming the
// permission, and nothing is created on B.
func TestSecuredMigrate(t *testing.T) {
	env.RequirePeers(t)
	A, B := peers.a, peers.b
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// B's agent, with the documented ACLs.
	agentUser := env.Unique("agent-b")
	_, err := B.addUser(ctx, agentUser)
	require.NoError(t, err)
	bNames := newAgentNames("agent-b")
	B.createAgentTopics(t, bNames)
	src, sink, refused := env.Unique("mig-src"), env.Unique("mig-sink"), env.Unique("mig-refused")
	sinkTopic, refusedTopic := sink+"-in", refused+"-in"
	for _, c := range []*cluster{A, B} {
		for _, tp := range []string{sinkTopic, refusedTopic} {
			require.NoError(t, c.createTopic(ctx, tp, 1, nil))
			// B's copy holds the same records at the same offsets (--sink-offsets copy).
			c.produce(t, tp, 30)
		}
	}
	B.grantAll(t, "User:"+agentUser, agentACLs(agentScope{names: bNames, connect: B.connect, sinkTopic: sinkTopic}))
	agentB := startAgentProc(t, "agent-b", B.agentEnv(bNames, agentUser))
	waitReady(t, agentB)

	// migrate's principals, one per cluster, and their files.
	stateTopic := env.Unique("states")
	require.NoError(t, B.createTopic(ctx, stateTopic, 1, map[string]string{"cleanup.policy": "compact"}))
	userA, userB := env.Unique("migrate-a"), env.Unique("migrate-b")
	passA, err := A.addUser(ctx, userA)
	require.NoError(t, err)
	passB, err := B.addUser(ctx, userB)
	require.NoError(t, err)
	onA, onB := migrateACLs(A.connect, []string{sinkTopic}, B.connect, bNames, stateTopic)
	A.grantAll(t, "User:"+userA, onA)
	B.grantAll(t, "User:"+userB, onB)
	fromCfg, err := A.writeProps(userA+".properties", A.clientProps(userA, passA))
	require.NoError(t, err)
	toCfg, err := B.writeProps(userB+".properties", B.clientProps(userB, passB))
	require.NoError(t, err)
	fromConnect, err := A.writeProps("connect-"+userA+".properties", A.connectProps())
	require.NoError(t, err)
	toConnect, err := B.writeProps("connect-"+userB+".properties", B.connectProps())
	require.NoError(t, err)

	// On A: a source that has produced its file and a sink that has consumed its topic.
	content, _ := tier.Lines("a", 0, 20)
	file := env.WriteFile(t, src+".txt", content)
	sinkOut := env.WriteFile(t, sink+".out", "")
	tier.RestOK(t, A.worker, http.MethodPost, "/connectors", map[string]any{"name": src, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": src + "-out", "tasks.max": "1"}})
	tier.RestOK(t, A.worker, http.MethodPost, "/connectors", map[string]any{"name": sink, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": sinkOut, "topics": sinkTopic, "tasks.max": "1"}})
	tier.WaitState(t, A.worker, src, "RUNNING")
	tier.WaitState(t, A.worker, sink, "RUNNING")

	// migrate runs migrate from A to B and returns its output followed by its JSON report (the
	// summary table shortens long messages).
	migrate := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		report := filepath.Join(t.TempDir(), "report.json")
		full := append([]string{"migrate",
			"--from-brokers", A.broker.Addr, "--from-config-topic", A.connect.Config, "--from-offsets-topic", A.connect.Offsets,
			"--from-command-config", fromCfg, "--from-connect-url", A.worker.URL, "--from-connect-config", fromConnect,
			"--to-brokers", B.broker.Addr, "--to-command-config", toCfg, "--to-connect-url", B.worker.URL, "--to-connect-config", toConnect,
			"--request-topic", bNames.requests, "--result-topic", bNames.results, "--state-topic", stateTopic,
			"--timeout", "2m", "--no-verify", "--report", report}, args...)
		cmd := exec.CommandContext(ctx, env.AgentBin, full...)
		// B's Connect topics; no credentials in the environment: the files carry them.
		// B's agents' group: the agent check names it when the principal may not Describe it.
		cmd.Env = append(tier.CleanEnv(), "OFFSETAGENT_CONFIG_TOPIC="+B.connect.Config, "OFFSETAGENT_OFFSETS_TOPIC="+B.connect.Offsets,
			"OFFSETAGENT_GROUP_ID="+bNames.group)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if b, rerr := os.ReadFile(report); rerr == nil {
			out.WriteString("\nreport:\n")
			out.Write(b)
		}
		for _, secret := range []string{passA, passB, A.restPass, B.restPass} {
			require.NotContains(t, out.String(), secret, "a secret in migrate's output")
		}
		return out.String(), err
	}

	// Each documented ACL removed in turn, on A and on B, with the same connectors: migrate
	// --stop-source fails within seconds naming the principal, the operation and the
	// resource, A's connectors still run, and nothing is written on B (no connector, no
	// record in its Connect topics, the request topic or the state topic, no sink group
	// offsets). Then "stop source" shows the full set works.
	for _, side := range []struct {
		name      string
		c         *cluster
		principal string
		acls      []acl
	}{{"A", A, "User:" + userA, onA}, {"B", B, "User:" + userB, onB}} {
		for _, x := range side.acls {
			t.Run("without "+x.String()+" on "+side.name, func(t *testing.T) {
				require.NoError(t, side.c.revoke(ctx, side.principal, x))
				defer func() { require.NoError(t, side.c.grant(ctx, side.principal, x)) }()
				// A refused precheck: exit 2.
				resource, include, code := x.Name, src+"|"+sink, 2
				switch {
				case side.name == "A" && x.Resource == kmsg.ACLResourceTypeGroup:
					resource, include, code = "connect-"+sink, sink, 1
				case side.name == "A" && x.Name == sinkTopic:
					// A sink's own permissions refuse that sink alone (skipped, exit 1);
					// the source would go on: it is left out here.
					include, code = sink, 1
				}
				before := B.endOffsets(t, B.connect.Config, B.connect.Offsets, bNames.requests, stateTopic)
				start := time.Now()
				out, err := migrate(t, "--include", include, "--stop-source")
				took := time.Since(start)
				t.Logf("migrate failed after %s:\n%s", took.Round(10*time.Millisecond), out)
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit, "migrate succeeded without %s on %s: the documented list is not minimal\n%s", x, side.name, out)
				require.Equal(t, code, exit.ExitCode(), out)
				require.Less(t, took, 30*time.Second, "not fast")
				require.Regexp(t, `principal `+regexp.QuoteMeta(side.principal)+` is not allowed to `+opWord(x.Op)+` (Topic|Group) \\?"`+
					regexp.QuoteMeta(resource)+`\\?"`, out, "the message must name the principal, the operation and the resource")
				for _, name := range []string{src, sink} {
					status, body := tier.Rest(t, A.worker, http.MethodGet, "/connectors/"+name+"/status", nil)
					require.Equal(t, http.StatusOK, status, body)
					var st struct {
						Connector struct{ State string } `json:"connector"`
					}
					require.NoError(t, json.Unmarshal([]byte(body), &st), body)
					require.Equal(t, "RUNNING", st.Connector.State, "A's connector %s must be untouched: %s", name, body)
					status, _ = tier.Rest(t, B.worker, http.MethodGet, "/connectors/"+name, nil)
					require.Equal(t, http.StatusNotFound, status, "nothing created on B")
				}
				require.Equal(t, before, B.endOffsets(t, B.connect.Config, B.connect.Offsets, bNames.requests, stateTopic), "nothing written on B")
				require.Empty(t, B.groupOffsets(t, "connect-"+sink, sinkTopic), "no sink group offsets on B")
			})
		}
	}

	t.Run("stop source", func(t *testing.T) {
		out, err := migrate(t, "--include", src+"|"+sink, "--stop-source")
		require.NoError(t, err, out)
		require.Regexp(t, src+`\s+`+src+`\s+source\s+1\s+succeeded`, out)
		require.Regexp(t, sink+`\s+`+sink+`\s+sink\s+1\s+succeeded`, out)
		tier.WaitState(t, A.worker, src, "STOPPED")
		tier.WaitState(t, A.worker, sink, "STOPPED")
		// B's connectors carry A's final offsets, as each worker's REST API shows them.
		require.Equal(t, tier.SortedOffsetsOf(t, A.worker, src), tier.SortedOffsetsOf(t, B.worker, src))
		require.Equal(t, tier.SortedOffsetsOf(t, A.worker, sink), tier.SortedOffsetsOf(t, B.worker, sink))
		require.Equal(t, fmt.Sprintf(`[{"offset":{"kafka_offset":30},"partition":{"kafka_partition":0,"kafka_topic":%q}}]`, sinkTopic), tier.SortedOffsetsOf(t, B.worker, sink))
		tier.WaitState(t, B.worker, src, "RUNNING")
		tier.WaitState(t, B.worker, sink, "RUNNING")
	})

	t.Run("sink topic not describable on A", func(t *testing.T) {
		tier.RestOK(t, A.worker, http.MethodPost, "/connectors", map[string]any{"name": refused, "config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": env.WriteFile(t, refused+".out", ""),
			"topics": refusedTopic, "tasks.max": "1"}})
		tier.WaitState(t, A.worker, refused, "RUNNING")
		// The sink's task has committed: its group holds offsets migrate must not take for none.
		require.Eventually(t, func() bool { return A.groupOffsets(t, "connect-"+refused, refusedTopic)[0] == 30 },
			90*time.Second, 250*time.Millisecond, "A's sink commits its offsets")
		out, err := migrate(t, "--include", refused)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, out)
		require.Equal(t, 1, exit.ExitCode(), out)
		require.Regexp(t, `principal User:`+regexp.QuoteMeta(userA)+` is not allowed to Describe Topic \\?"`+regexp.QuoteMeta(refusedTopic)+`\\?"`, out)
		status, _ := tier.Rest(t, B.worker, http.MethodGet, "/connectors/"+refused, nil)
		require.Equal(t, http.StatusNotFound, status, "nothing created on B")
		tier.WaitState(t, A.worker, refused, "RUNNING")
	})
}

// connectProps are the Connect REST client properties for the cluster's worker: basic auth
// and the CA, in the Schema Registry client's keys.
func (c *cluster) connectProps() map[string]string {
	return map[string]string{
		"basic.auth.credentials.source": "USER_INFO",
		"basic.auth.user.info":          c.restUser + ":" + c.restPass,
		"ssl.truststore.type":           "PEM",
		"ssl.truststore.location":       c.ca.File,
	}
}
