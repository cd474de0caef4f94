package connectors

import (
	"testing"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
	"github.com/stretchr/testify/require"
)

func TestJavaDouble(t *testing.T) {
	// Expected texts printed by Double.toString on OpenJDK 17.
	tests := []struct {
		in   string
		want string
	}{
		{"1.5", "1.5"}, {"3.0", "3.0"}, {"1e2", "100.0"}, {"1e7", "1.0E7"}, {"9999999.0", "9999999.0"},
		{"1e-3", "0.001"}, {"0.00099", "9.9E-4"}, {"1.0E-5", "1.0E-5"}, {"123456789.125", "1.23456789125E8"},
		{"-0.0", "-0.0"}, {"0", "0.0"}, {"1e400", "Infinity"}, {"-1e400", "-Infinity"}, {"0.1", "0.1"},
		{"100.25", "100.25"}, {"1e21", "1.0E21"}, {"-2.5", "-2.5"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, string(offsetstore.AppendJavaDouble(nil, offsetstore.Float64Of(jsonvalue.Number(tc.in)))))
		})
	}
}

func TestJavaString(t *testing.T) {
	m := jsonvalue.Map{
		{Key: "topic", Value: "orders"}, {Key: "partition", Value: jsonvalue.Number("-0")},
		{Key: "cluster", Value: nil}, {Key: "x", Value: jsonvalue.Number("2.50")},
	}
	require.Equal(t, "{topic=orders, partition=0, cluster=null, x=2.5}", offsetstore.JavaString(m, false))
	require.Equal(t, "{cluster=null, partition=0, x=2.5, topic=orders}", offsetstore.JavaString(m, true))
	require.Equal(t, "[1, true, {}]", offsetstore.JavaString([]any{jsonvalue.Number("1"), true, jsonvalue.Map{}}, false))
}

func TestParseJavaInteger(t *testing.T) {
	// Integer.parseInt results on OpenJDK 17.
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"+3", 3, true}, {"-1", -1, true}, {"03", 3, true}, {"\u0663", 3, true}, {"2147483648", 0, false},
		{"-2147483648", -2147483648, true}, {" 3", 0, false}, {"", 0, false}, {"+", 0, false},
		{"1\U0001D7D8", 0, false}, {"1.0", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseJavaInteger(tc.in, 32)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
	got, ok := parseJavaInteger("-9223372036854775808", 64)
	require.True(t, ok)
	require.Equal(t, int64(-9223372036854775808), got)
}

func TestJSONText(t *testing.T) {
	m := jsonvalue.Map{{Key: "a<b", Value: "x&y"}, {Key: "n", Value: jsonvalue.Number("1.0")}, {Key: "l", Value: []any{nil, false}}}
	require.Equal(t, `{"a<b":"x&y","n":1.0,"l":[null,false]}`, jsonvalue.String(m))
	require.Equal(t, "null", jsonvalue.String(jsonvalue.Map(nil)))
}
