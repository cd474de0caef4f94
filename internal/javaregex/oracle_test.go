package javaregex

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracleCase is a row of testdata/java-oracle.json, which a real JVM wrote (make
// regex-goldens): Java's answer for the pattern, compiled by java.util.regex.Pattern and
// matched whole against each name.
type oracleCase struct {
	Pattern     string   `json:"pattern"`
	Names       []string `json:"names"`
	Unsupported string   `json:"unsupported"`
	Java        struct {
		Matches []bool  `json:"matches"`
		Error   *string `json:"error"`
	} `json:"java"`
}

// TestJavaOracle: every pattern Java refuses is refused (and one called invalid is one Java
// refuses); every pattern Java accepts is evaluated with Java's answer for every name, or
// refused as unsupported only where the table lists the refusal and why.
func TestJavaOracle(t *testing.T) {
	b, err := os.ReadFile("testdata/java-oracle.json")
	require.NoError(t, err)
	var table struct {
		Cases []oracleCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &table))
	require.NotEmpty(t, table.Cases)
	for _, c := range table.Cases {
		t.Run(c.Pattern, func(t *testing.T) {
			re, err := Compile(c.Pattern)
			var e *Error
			switch {
			case c.Java.Error != nil:
				require.Error(t, err, "Java refuses it: %s", *c.Java.Error)
				require.ErrorAs(t, err, &e)
				return
			case err != nil:
				require.ErrorAs(t, err, &e)
				require.True(t, e.Unsupported, "Java accepts it: %v", err)
				require.NotEmpty(t, c.Unsupported, "refused, and the table does not list it: %v", err)
				require.Contains(t, e.Msg, c.Unsupported)
				return
			}
			require.Empty(t, c.Unsupported, "evaluated, but the table lists it as refused")
			require.Len(t, c.Java.Matches, len(c.Names))
			for i, name := range c.Names {
				got, err := re.Matches(name)
				require.NoError(t, err)
				require.Equal(t, c.Java.Matches[i], got, "matches(%q)", name)
			}
		})
	}
}

// Invalid patterns are told apart from unsupported ones: a caller says "Java refuses it too".
func TestErrorKinds(t *testing.T) {
	_, err := Compile("a{")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.Unsupported)
	require.EqualError(t, err, `not a valid Java regex: Illegal repetition, at character 1 of /a{/`)

	_, err = Compile(`x\bx`)
	require.ErrorAs(t, err, &e)
	require.True(t, e.Unsupported)
	require.Equal(t, 1, e.Offset)
}

// A pattern that backtracks without end gets no answer, never a false one.
func TestUndecidable(t *testing.T) {
	re, err := Compile(`(?=(a+)+b).*`)
	require.NoError(t, err)
	_, err = re.Matches("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!")
	require.True(t, errors.Is(err, ErrUndecidable), "%v", err)
	_, err = re.Matches("a\xff")
	require.True(t, errors.Is(err, ErrUndecidable), "%v", err)
}
