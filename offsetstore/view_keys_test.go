package offsetstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// keyConnectorSeeds are keys whose special bytes fall on both sides of the 8-byte words the
// fast path reads, and in the last bytes of the key, which it reads as one shifted word.
var keyConnectorSeeds = []string{
	`["file-src-1",{"filename":"test.txt"}]`,
	`["other-0043",{"cluster":"src","partition":7,"topic":"t-12345"}]`,
	`["a",{"k":"}]\"{"}]`, `["a",null]`, `["a\"b\u00e9",{}]`, `["é",{}]`, ` [ "a" , { } ] `,
	`["a",{},1]`, `["a","b"]`, `[1,{}]`, `["a"]`, `{"a":1}`, `["a",{"x":1]`, ``,
	`["abcdefg\\",{}]`, `["abcdefgh\"",{}]`, `["abcdefghijklmno\\\\\"xyz",{"p":[{"q":"]]]]]]]]"}]}]`,
	`["conn",{"a":"\\\\\\\\\\\\\\\\\\\\"}]`, `["conn",{"a":[[[[[[[[[[]]]]]]]]]]}]`, `["conn",{"a":"x"}}]`,
	`["conn",{"a":"x"} ]`, `["conn",{"a":"x"}]  `, `["conn",{"a":"x"}] x`, `["conn" ,{"a":"x"}]`,
	`["conn", {"a":"x"}]`, `["conn",nul]`, `["conn",null ]`, `["c\u0000",{}]`, `["\x",{}]`,
	`["conn",{"abcdefgh":"ijklmnop","q":{"r":["s","t",{"u":"v\"w"}]}}]`,
	"[\"conn\",{\"a\":\"\xff\xfe\"}]", `["",{a}]`, `["",{ab}]`, `["a",{b}]`, `["",{"a"}]`, `["",{}]`, `["",null]`, "[\"\x7b\x5b\x7d\x5d\",{\"\x5b\":\"\x7d\"}]",
}

// FuzzKeyConnector checks that keyConnector, whose fast path reads 8 bytes at a time, gives
// the same answer as the byte-at-a-time scan alone, on any bytes.
func FuzzKeyConnector(f *testing.F) {
	for _, seed := range keyConnectorSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		name, ok := keyConnector(key)
		wantName, wantOK := scanKeyConnector(key)
		require.Equal(t, wantOK, ok, "key %q", key)
		require.Equal(t, wantName, name, "key %q", key)
	})
}

// Every seed, each of its prefixes and suffixes, and the seed with its first quotes escaped
// (the special bytes at every offset of the 8-byte words), gets the byte-at-a-time scan's
// answer.
func TestKeyConnectorMatchesBytewise(t *testing.T) {
	for _, seed := range keyConnectorSeeds {
		for _, pad := range []string{"", " ", "   ", "       "} {
			key := pad + seed
			for n := 0; n <= len(key); n++ {
				for _, k := range []string{key[:n], key[n:], strings.Replace(key, `"`, `\"`, n)} {
					name, ok := keyConnector([]byte(k))
					wantName, wantOK := scanKeyConnector([]byte(k))
					require.Equal(t, wantOK, ok, "key %q", k)
					require.Equal(t, wantName, name, "key %q", k)
				}
			}
		}
	}
}
