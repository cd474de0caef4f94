package javaregex

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefixCase is a row of testdata/prefix-oracle.json, which a real JVM wrote (make
// goldens): the regex AfterPrefix made of the pattern (refused: the plain
// Quote(prefix)+"(?:pattern)" it would otherwise have made), and Java's answers for the
// pattern against each name (A) and for that regex against prefix+name (B).
type prefixCase struct {
	Prefix      string   `json:"prefix"`
	Pattern     string   `json:"pattern"`
	Names       []string `json:"names"`
	Unsupported string   `json:"unsupported"`
	Rewritten   string   `json:"rewritten"`
	Refused     bool     `json:"refused"`
	Java        struct {
		OnA javaAnswer `json:"on_a"`
		OnB javaAnswer `json:"on_b"`
	} `json:"java"`
}

// javaAnswer is Java's answer for one pattern: matches() per name, or Pattern.compile's error.
type javaAnswer struct {
	Matches []bool  `json:"matches"`
	Error   *string `json:"error"`
}

// TestAfterPrefixOracle: Java decides. For every pattern AfterPrefix moves behind the prefix,
// its regex is the one Java was given and matches prefix+name exactly where Java's pattern
// matches the name. Every pattern it refuses would have been moved wrong (Java answers
// otherwise for some name, or refuses one of the two), or the table lists the refusal and why
// (a construct the reading refuses although Java may agree), so that no pattern is refused
// unnoticed.
func TestAfterPrefixOracle(t *testing.T) {
	b, err := os.ReadFile("testdata/prefix-oracle.json")
	require.NoError(t, err)
	var table struct {
		Cases []prefixCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &table))
	require.NotEmpty(t, table.Cases)
	for _, c := range table.Cases {
		t.Run(c.Prefix+" "+c.Pattern, func(t *testing.T) {
			got, err := AfterPrefix(c.Prefix, c.Pattern)
			a, onB := c.Java.OnA, c.Java.OnB
			if err != nil {
				require.True(t, c.Refused, "refused now, moved when the table was made: %v", err)
				var e *Error
				require.ErrorAs(t, err, &e)
				if c.Unsupported != "" {
					require.Contains(t, e.Msg, c.Unsupported)
					return
				}
				differs := a.Error != nil || onB.Error != nil
				for i := range c.Names {
					differs = differs || a.Matches[i] != onB.Matches[i]
				}
				require.True(t, differs, "refused, but Java reads the plain %q as the pattern behind the prefix for every name, and the table does not list the refusal: %v", c.Rewritten, err)
				require.Equal(t, a.Error == nil, e.Prefix != "", "a pattern Java refuses is called invalid, and only such a one: %v", err)
				return
			}
			require.False(t, c.Refused, "moved now, refused when the table was made")
			require.Empty(t, c.Unsupported, "moved, but the table lists it as refused")
			require.Equal(t, c.Rewritten, got)
			require.Nil(t, a.Error, "Java accepts the pattern")
			require.Nil(t, onB.Error, "Java accepts the regex made of it")
			require.Len(t, a.Matches, len(c.Names))
			require.Equal(t, a.Matches, onB.Matches, "Java: the pattern against %q, the regex %q against them behind %q", c.Names, got, c.Prefix)
		})
	}
}

// Quote's regex matches exactly its string, as Java reads it.
func TestQuote(t *testing.T) {
	for _, s := range []string{"A.", "east--", "a\\b", `^$.|?*+()[]{}`, "é-x_1", "tab\there", ""} {
		re, err := Compile(Quote(s))
		require.NoError(t, err, s)
		for _, name := range []string{s, s + "x", "x" + s, "A"} {
			ok, err := re.Matches(name)
			require.NoError(t, err)
			require.Equal(t, name == s, ok, "Quote(%q) against %q", s, name)
		}
	}
	require.Equal(t, `A\.`, Quote("A."), "punctuation that is no metacharacter stays as it is")
	require.Equal(t, `east--orders_1`, Quote("east--orders_1"))
}

// Reading for structure reads every pattern Java accepts that Compile evaluates, and never
// calls invalid a pattern Java accepts.
func TestReadingFollowsTheOracle(t *testing.T) {
	b, err := os.ReadFile("testdata/java-oracle.json")
	require.NoError(t, err)
	var table struct {
		Cases []oracleCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &table))
	for _, c := range table.Cases {
		_, _, readErr := parseFor(c.Pattern, true)
		_, compileErr := Compile(c.Pattern)
		if compileErr == nil {
			require.NoError(t, readErr, "%q: evaluated, so read", c.Pattern)
		}
		var e *Error
		if c.Java.Error == nil && readErr != nil {
			require.ErrorAs(t, readErr, &e)
			require.True(t, e.Unsupported, "%q: Java accepts it: %v", c.Pattern, readErr)
		}
	}
}

func TestLiteralPrefix(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"orders-.*", "orders-"},
		{"orders", "orders"},
		{`^(?:dbserver1\.inventory)\..*`, "dbserver1.inventory."},
		{"(orders|ordinal)s", "ord"},
		{"(?i)orders", ""},
		{"a?b", ""},
		{"a+b", "a"},
		{"(ab){2}c", "ab"},
		{"(?=x)xy.*", "xy"},
		{`\Qa.b\E.*`, "a.b"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			require.Equal(t, tt.want, MustCompile(tt.pattern).LiteralPrefix())
		})
	}
}

// AfterPrefix never panics, and a regex it makes is read by the parser as the prefix then the
// pattern (its own check), and compiles where the pattern does.
func FuzzAfterPrefix(f *testing.F) {
	b, err := os.ReadFile("testdata/prefix-oracle-cases.json")
	require.NoError(f, err)
	var cases []struct{ Prefix, Pattern string }
	require.NoError(f, json.Unmarshal(b, &cases))
	for _, c := range cases {
		f.Add(c.Prefix, c.Pattern)
	}
	f.Fuzz(func(t *testing.T, prefix, pattern string) {
		out, err := AfterPrefix(prefix, pattern)
		if err != nil || prefix == "" {
			return
		}
		_, _, readErr := parseFor(out, true)
		require.NoError(t, readErr, "%q behind %q: %q", pattern, prefix, out)
		if _, err := Compile(pattern); err == nil {
			_, err := Compile(out)
			require.NoError(t, err, "%q behind %q: %q", pattern, prefix, out)
		}
	})
}
