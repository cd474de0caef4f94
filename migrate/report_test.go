package migrate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteTableShowsHazardWarnings(t *testing.T) {
	e := &Entry{Name: "inventory", TargetName: "inventory", Outcome: OutcomePlanned, connector: &Connector{}}
	e.hazard(Hazard{Check: HazardFamilyState, Key: "topic.heartbeat.prefix", Message: "the heartbeat topic is not on B", Fix: "create it"})
	skipped := &Entry{Name: "orders", TargetName: "orders", connector: &Connector{}}
	skipped.hazard(Hazard{Check: HazardPlugin, Message: "B lacks the plugin", Refuse: true})
	skipped.skip(skipped.connector.Problem)
	var fleet []*Entry
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"} {
		f := &Entry{Name: name, TargetName: name, Outcome: OutcomePlanned, connector: &Connector{}}
		f.hazard(Hazard{Check: HazardPlugin, Message: "not checked", Fix: "give --to-connect-url"})
		fleet = append(fleet, f)
	}
	var b strings.Builder
	require.NoError(t, (&Report{Connectors: append([]*Entry{e, skipped}, fleet...)}).WriteTable(&b))
	out := b.String()
	require.Contains(t, out, "warning: inventory: family_state: topic.heartbeat.prefix: the heartbeat topic is not on B; create it")
	require.Contains(t, out, "warning: c1, c2, c3, c4, c5 and 2 more: plugin: not checked; give --to-connect-url\n")
	require.Equal(t, 1, strings.Count(out, "not checked"), "one line for the same warning of many connectors:\n%s", out)
	require.Equal(t, 1, strings.Count(out, "B lacks the plugin"), "a refusal is the entry's message, not also a warning:\n%s", out)
}
