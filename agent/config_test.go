package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// OFFSETAGENT_ALLOWED_GROUPS: each regexp matches a whole group id; empty means connect-.*; an
// invalid regexp is a configuration error naming the variable.
func TestGroupsPattern(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		match   []string
		refuse  []string
	}{
		{name: "default", match: []string{"connect-a", "connect-"}, refuse: []string{"billing", "xconnect-a"}},
		{name: "blank entries are the default", allowed: []string{" ", ""}, match: []string{"connect-a"}, refuse: []string{"billing"}},
		{name: "several, whole id", allowed: []string{"team-a-.*", " connect-.* "}, match: []string{"team-a-x", "connect-b"}, refuse: []string{"xteam-a-x", "team-b"}},
		{name: "alternation stays inside its pattern", allowed: []string{"a|b"}, match: []string{"a", "b"}, refuse: []string{"ab", "connect-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{AllowedGroups: tt.allowed}
			re, err := c.GroupsPattern()
			require.NoError(t, err)
			for _, g := range tt.match {
				require.True(t, re.MatchString(g), g)
			}
			for _, g := range tt.refuse {
				require.False(t, re.MatchString(g), g)
			}
		})
	}
	c := &Config{AllowedGroups: []string{"connect-.*", "team-("}}
	_, err := c.GroupsPattern()
	require.ErrorContains(t, err, "OFFSETAGENT_ALLOWED_GROUPS")
}
