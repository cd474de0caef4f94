package secured_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// aclRow is one row of the agent's ACL table in docs/operations.md ("Kafka ACLs"): key names
// the row (the variable of its resource, or what the Name column says), and the resource's name
// for a run comes from key.
type aclRow struct {
	key      string
	resource kmsg.ACLResourceType
	pattern  kmsg.ACLResourcePatternType
	ops      []kmsg.ACLOperation
}

// Row keys that are not variables.
const (
	keySinkGroups = "sink groups"
	keySinkTopics = "sink topics"
)

// agentACLRows are the ACLs docs/operations.md lists for the agent, written here once: the
// tests grant exactly these (for this run's names) and remove each in turn;
// TestAgentACLsAreTheDocumented checks them against the doc's table. The row of
// connector-specific offsets topics, which no connector of the tests has, is left out, and so
// is the doc's table of optional ACLs.
var agentACLRows = []aclRow{
	{"OFFSETAGENT_REQUEST_TOPIC", kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead)},
	{"OFFSETAGENT_GROUP_ID", kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead)},
	{"OFFSETAGENT_RESULT_TOPIC", kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead, kmsg.ACLOperationWrite)},
	{"OFFSETAGENT_INTENT_TOPIC", kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead, kmsg.ACLOperationWrite)},
	{"OFFSETAGENT_CONFIG_TOPIC", kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead, kmsg.ACLOperationWrite)},
	{"OFFSETAGENT_OFFSETS_TOPIC", kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead, kmsg.ACLOperationWrite)},
	{keySinkGroups, kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypePrefixed, ops(kmsg.ACLOperationRead, kmsg.ACLOperationDelete)},
	{keySinkTopics, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, ops(kmsg.ACLOperationRead)},
}

func ops(o ...kmsg.ACLOperation) []kmsg.ACLOperation { return o }

// agentScope names the resources of one agent's rows.
type agentScope struct {
	names     agentNames
	connect   tier.Connect
	sinkTopic string
}

// resourceName is the row's resource for scope.
func (r aclRow) resourceName(s agentScope) string {
	switch r.key {
	case "OFFSETAGENT_REQUEST_TOPIC":
		return s.names.requests
	case "OFFSETAGENT_GROUP_ID":
		return s.names.group
	case "OFFSETAGENT_RESULT_TOPIC":
		return s.names.results
	case "OFFSETAGENT_INTENT_TOPIC":
		return s.names.intents
	case "OFFSETAGENT_CONFIG_TOPIC":
		return s.connect.Config
	case "OFFSETAGENT_OFFSETS_TOPIC":
		return s.connect.Offsets
	case keySinkGroups:
		return "connect-"
	case keySinkTopics:
		return s.sinkTopic
	}
	panic("unknown ACL row " + r.key)
}

// agentACLs are every ACL of agentACLRows for scope.
func agentACLs(s agentScope) []acl {
	var out []acl
	for _, r := range agentACLRows {
		for _, op := range r.ops {
			out = append(out, acl{r.resource, r.resourceName(s), r.pattern, op})
		}
	}
	return out
}

// grantAll grants acls to principal within a minute.
func (c *cluster) grantAll(t *testing.T, principal string, acls []acl) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.grant(ctx, principal, acls...))
}

// TestAgentACLsAreTheDocumented reads the table of docs/operations.md's "Kafka ACLs" and
// requires agentACLRows to be exactly its unconditional rows: the tests prove the doc's list,
// not a list of their own.
func TestAgentACLsAreTheDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/operations.md")
	require.NoError(t, err)
	got := documentedRows(t, string(doc), "## Kafka ACLs")
	want := map[string][]string{}
	for _, r := range agentACLRows {
		want[r.key+" "+r.resource.String()+" "+r.pattern.String()] = opNames(r.ops)
	}
	require.Equal(t, want, got, "docs/operations.md's ACL table and agentACLRows differ")
}

var (
	docVar  = regexp.MustCompile("`(OFFSETAGENT_[A-Z_]+)`")
	opWords = map[string]kmsg.ACLOperation{"read": kmsg.ACLOperationRead, "write": kmsg.ACLOperationWrite,
		"describe": kmsg.ACLOperationDescribe, "describeconfigs": kmsg.ACLOperationDescribeConfigs,
		"delete": kmsg.ACLOperationDelete, "create": kmsg.ACLOperationCreate, "alter": kmsg.ACLOperationAlter,
		"alterconfigs": kmsg.ACLOperationAlterConfigs, "all": kmsg.ACLOperationAll}
)

// documentedRows parses the markdown table after heading: "key RESOURCE PATTERN" -> sorted
// operation names; the row's key is the variable it names (or the sink groups and topics).
// Connector-specific offsets topics are skipped, as in agentACLRows; the table ends at the
// first line that is not a row.
func documentedRows(t *testing.T, doc, heading string) map[string][]string {
	t.Helper()
	i := strings.Index(doc, heading)
	require.GreaterOrEqual(t, i, 0, "heading %q", heading)
	out := map[string][]string{}
	inTable := false
	for _, line := range strings.Split(doc[i:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 4 || strings.Contains(cells[0], "---") || strings.TrimSpace(cells[0]) == "Resource" {
			continue
		}
		name, pattern, opsCell := cells[1], strings.ToUpper(strings.TrimSpace(cells[2])), cells[3]
		var key string
		switch {
		case strings.Contains(name, "connector offsets topics"), strings.Contains(name, "connector-specific"):
			continue
		case strings.TrimSpace(name) == "`connect-`":
			key = keySinkGroups
		case strings.Contains(name, "sink topics"), strings.Contains(name, "sink connectors consume"):
			key = keySinkTopics
		case docVar.MatchString(line):
			key = docVar.FindStringSubmatch(line)[1]
		default:
			t.Fatalf("an ACL row the test does not know: %s", line)
		}
		// "LITERAL or PREFIXED": the tests use the first.
		pattern = strings.Fields(pattern)[0]
		var names []string
		for _, w := range strings.Split(opsCell, ",") {
			op, ok := opWords[strings.ToLower(strings.Trim(strings.TrimSpace(w), "`"))]
			require.True(t, ok, "operation %q in %s", w, line)
			names = append(names, op.String())
		}
		slices.Sort(names)
		res := strings.ToUpper(strings.TrimSpace(cells[0]))
		out[key+" "+res+" "+pattern] = names
	}
	require.NotEmpty(t, out, "no ACL table after %q", heading)
	return out
}

func opNames(o []kmsg.ACLOperation) []string {
	var out []string
	for _, op := range o {
		out = append(out, op.String())
	}
	slices.Sort(out)
	return out
}
