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
	var b strings.Builder
	require.NoError(t, (&Report{Connectors: []*Entry{e, skipped}}).WriteTable(&b))
	out := b.String()
	require.Contains(t, out, "warning: inventory: family_state: topic.heartbeat.prefix: the heartbeat topic is not on B; create it")
	require.Equal(t, 1, strings.Count(out, "B lacks the plugin"), "a refusal is the entry's message, not also a warning:\n%s", out)
}
