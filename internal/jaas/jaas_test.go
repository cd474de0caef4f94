package jaas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What Kafka accepts is proven against its own reading by the golden tables of this package's
// users (events' secrets-oracle.json, internal/clientconfig's props-oracle.json). Here: a
// refusal says where and what was wanted, in characters, and never a part of the text.
func TestRefusalsSayWhereNotWhat(t *testing.T) {
	const plain = "org.apache.kafka.common.security.plain.PlainLoginModule"
	tests := []struct {
		name, in string
		want     Want
		char     int // 0: the end
		option   string
		unclosed int
	}{
		{name: "empty", in: " // only a comment", want: WantModule},
		{name: "a number for the login module", in: "12s3cr3t required;", want: WantModule, char: 1},
		{name: "no flag", in: plain, want: WantFlag},
		{name: "a wrong flag", in: plain + " s3cr3t;", want: WantFlag, char: 57},
		{name: "no semicolon", in: plain + ` required password="s3cr3t"`, want: WantSemicolon},
		{name: "a quoted value its line ends", in: plain + " required password=\"s3cr3t\nx=y", want: WantSemicolon, unclosed: 75},
		{name: "a value with a blank not quoted", in: plain + " required password=s3 cr3t;", want: WantEquals, char: 82, option: "cr3t"},
		{name: "a number as a value", in: plain + " required password=123s3cr3t;", want: WantValue, char: 75, option: "password"},
		{name: "a character as a value, after a word beyond Latin-1", in: "用户 required password=;", want: WantValue, char: 22, option: "password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			var je *Error
			require.ErrorAs(t, err, &je)
			require.Equal(t, tt.want, je.Want)
			require.Equal(t, tt.char, je.Char)
			require.Equal(t, tt.char == 0, je.End)
			require.Equal(t, tt.option, je.Option.Name)
			if tt.unclosed > 0 {
				require.Equal(t, tt.unclosed, je.Unclosed+1, "the opening quote, from 1")
			} else {
				require.Equal(t, -1, je.Unclosed)
			}
			require.NotContains(t, err.Error(), "s3")
			require.NotContains(t, err.Error(), "cr3t")
		})
	}
}

// Every character from U+00A0 up is a word character, as in StreamTokenizer, whose table
// stops at U+00FF and which takes every character above it for a letter.
func TestWordsBeyondLatin1(t *testing.T) {
	cfg, err := Parse("m required u=用户 p=p\u0101ss\u2603😀w\u00f6rd-1.5 q=\u0080;")
	var je *Error
	require.ErrorAs(t, err, &je, "U+0080 is no word character: no value")
	require.Equal(t, WantValue, je.Want)
	require.Equal(t, "q", je.Option.Name)

	cfg, err = Parse("m required u=用户 p=p\u0101ss\u2603😀w\u00f6rd-1.5;")
	require.NoError(t, err)
	require.Equal(t, []Option{
		{Name: "u", NameAt: 11, Value: "用户", Start: 13, End: 19},
		{Name: "p", NameAt: 20, Value: "p\u0101ss\u2603😀w\u00f6rd-1.5", Start: 22, End: 43},
	}, cfg.Entries[0].Options)
}
