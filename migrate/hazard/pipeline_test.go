package hazard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/mm2"
)

// sinkReads judges a topics.regex as Java does, and says when it cannot.
func TestSinkReadsJavaRegex(t *testing.T) {
	policy := mm2.Policy{SourceAlias: "A"}
	var w written
	w.add("orders", "its config's topic")
	w.add("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-", "its config's topic")
	w.add("shop.*", "its config's topic.prefix")
	tests := []struct {
		name, regex string
		want        []string
		undecided   string
	}{
		{name: "lookahead, Java's", regex: `(?!payments).*`, want: []string{"orders", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-", "shop.*"}},
		// Every name of the prefix may match a regex without a literal prefix.
		{name: "class intersection, Java's", regex: `[a-z&&[^x]]+`, want: []string{"orders", "shop.*"}},
		{name: "literal prefix", regex: `shop\.inventory\..*`, want: []string{"shop.*"}},
		{name: "no match", regex: `payments`},
		{name: "trimmed as Connect trims", regex: " orders\t", want: []string{"orders"}},
		{name: "not evaluated", regex: `\borders`, undecided: `its topics.regex is not evaluated as Java would: the word boundaries`},
		{name: "refused by Java", regex: `orders(`, undecided: `its topics.regex is not a valid Java regex: Unclosed group`},
		{name: "no answer in time", regex: `(?=(a+)+b).*`, want: []string{"shop.*"},
			undecided: `its topics.regex "(?=(a+)+b).*" gave no answer for "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fleet.Connector{Name: "sink", Config: events.Config{{Key: "topics.regex", Value: tt.regex}}}
			got, undecided := sinkReads(c, w, policy)
			require.Equal(t, tt.want, got)
			if tt.undecided == "" {
				require.Empty(t, undecided)
			} else {
				require.Contains(t, undecided, tt.undecided)
			}
			got, undecided = sinkReads(c, w, mm2.Policy{Kind: mm2.PolicyIdentity})
			require.Empty(t, got, "the identity policy renames nothing")
			require.Empty(t, undecided)
		})
	}
}
