package jsonvalue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanMembers(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		keys  []string
		kinds string
		ok    bool
	}{
		{name: "empty", in: ` { } `, ok: true},
		{name: "scalars and nesting", in: `{"a":1,"b":"x\"}","c":{"d":[1,{"e":"]"}]},"f":null,"g":true}`, keys: []string{"a", "b", "c", "f", "g"}, kinds: `1"{nt`, ok: true},
		{name: "escaped key", in: `{"\u0061":1}`, keys: []string{"a"}, kinds: "1", ok: true},
		{name: "broken grammar inside a value", in: `{"a":{"x" "y",,},"b":2}`, keys: []string{"a", "b"}, kinds: "{2", ok: true},
		{name: "not an object", in: `[1]`},
		{name: "unbalanced", in: `{"a":{}}}`},
		{name: "unterminated string", in: `{"a":"x}`},
		{name: "missing colon", in: `{"a" 1}`},
		{name: "missing value", in: `{"a":}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, ok := ScanMembers([]byte(tt.in))
			require.Equal(t, tt.ok, ok)
			var keys []string
			kinds := ""
			for _, m := range ms {
				keys = append(keys, m.Key)
				kinds += string(m.Kind)
			}
			require.Equal(t, tt.keys, keys)
			require.Equal(t, tt.kinds, kinds)
		})
	}
}
