package mm2

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// regexWrapGoldens is testdata/regex-wrap-goldens.json, printed by java.util.regex
// (testdata/golden/RegexWrapVectors.java) for the cases of testdata/regex-wrap-cases.tsv.
type regexWrapGoldens struct {
	Cases []struct {
		Alias     string   `json:"alias"`
		Separator string   `json:"separator"`
		Pattern   string   `json:"pattern"`
		Rewritten string   `json:"rewritten"`
		Refused   bool     `json:"refused"`
		Topics    []string `json:"topics"`
		// OnA: Java's pattern matches each topic; OnB: Java's rewritten regex matches the
		// topic's name on B. nil where a regex does not compile.
		OnA []*bool `json:"on_a"`
		OnB []*bool `json:"on_b"`
	} `json:"cases"`
}

// Java decides: for every pattern mm2 rewrites, the rewritten regex matches a topic's name on
// B exactly when Java's pattern matches the topic on A, and its text is the one Java was given;
// every pattern mm2 refuses would have been rewritten wrong (a topic where the plain
// "<alias><sep>(?:pattern)" and the pattern disagree, or a regex that does not compile).
func TestWrapJavaRegexGoldens(t *testing.T) {
	b, err := os.ReadFile("testdata/regex-wrap-goldens.json")
	require.NoError(t, err)
	var g regexWrapGoldens
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Cases)
	for _, c := range g.Cases {
		t.Run(c.Separator+" "+c.Pattern, func(t *testing.T) {
			p := Policy{SourceAlias: c.Alias, Separator: c.Separator}
			got, _, err := p.RewriteTopicsRegex(c.Pattern)
			require.Len(t, c.OnA, len(c.Topics))
			require.Len(t, c.OnB, len(c.Topics))
			if c.Refused {
				require.Error(t, err, "Java shows the plain rewrite %q is wrong", c.Rewritten)
				differs := false
				for i := range c.Topics {
					differs = differs || c.OnB[i] == nil || c.OnA[i] == nil || *c.OnA[i] != *c.OnB[i]
				}
				require.True(t, differs, "a refused pattern's plain rewrite must be wrong for some topic in Java")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.Rewritten, got)
			for i, topic := range c.Topics {
				require.NotNil(t, c.OnA[i], "the pattern compiles in Java")
				require.NotNil(t, c.OnB[i], "the rewritten regex compiles in Java")
				require.Equal(t, *c.OnA[i], *c.OnB[i], "topic %q: the pattern on A and the rewritten regex on B disagree in Java", topic)
			}
		})
	}
}

func TestRewriteTopicsRegexRefusals(t *testing.T) {
	tests := []struct {
		name, sep, pattern string
		why                string
	}{
		{name: "anchor inside", pattern: "a|^orders", why: "^ anchors at the start of the input"},
		{name: "anchor with a quantifier", pattern: "^*orders", why: "^ anchors"},
		{name: "lookbehind", pattern: `(?<!\.)orders`, why: "a lookbehind would see the prefix"},
		{name: `\A`, pattern: `\Aorders`, why: `\A anchors`},
		{name: `\G`, pattern: `x|\Gorders`, why: `\G anchors`},
		{name: `\b after a word character`, sep: "_", pattern: `\borders`, why: "the prefix's last character, a word character"},
		{name: "comments flag", pattern: "(?ix)orders # c", why: "COMMENTS flag"},
		{name: "comments flag on a group", pattern: "(?x:orders)", why: "COMMENTS flag"},
		{name: "unterminated quote", pattern: `\Qorders`, why: `\Q quotes to the end`},
		{name: "trailing backslash", pattern: `orders\`, why: "ends with a backslash"},
		{name: "unclosed class", pattern: `[a-z`, why: "not closed"},
		{name: "unclosed property", pattern: `\p{Lower`, why: "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Policy{SourceAlias: "A", Separator: tt.sep}.RewriteTopicsRegex(tt.pattern)
			require.ErrorContains(t, err, tt.why)
			require.ErrorContains(t, err, "rewrite topics.regex for the default policy")
			_, _, err = Policy{Kind: PolicyIdentity, SourceAlias: "A"}.RewriteTopicsRegex(tt.pattern)
			require.NoError(t, err, "the identity policy keeps the pattern")
		})
	}
	// Inside a class, an escape or a quote, the same characters are safe.
	for _, pattern := range []string{`[^^]x`, `\^x`, `\Q^\E`, `[\Q^\E]`, `[]^]`, `\cAx`, `(?<name>x)\k<name>`} {
		_, _, err := Policy{SourceAlias: "A"}.RewriteTopicsRegex(pattern)
		require.NoError(t, err, pattern)
	}
}
