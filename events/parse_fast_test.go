package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fastCases are requests that exercise parseFast's agreement with parseTokens, valid or not.
var fastCases = []string{
	`{"name":"c"}`,
	` { "name" : "c" , "config" : { "a" : 1 , "b" : null , "a" : true } } `,
	`{"name":null,"config":null,"initial_state":null,"initial_offsets":null}`,
	`{"name":42,"config":{"tasks.max":4,"ratio":1.50,"exp":1e3,"on":true,"off":false,"nil":null}}`,
	`{"name":"c","initial_state":"PAUSED","initial_state":null}`,
	`{"name":"c","initial_state":5}`,
	`{"name":"c","initial_offsets":[]}`,
	`{"name":"c","initial_offsets":{}}`,
	`{"name":"c","initial_offsets":{"offsets":null}}`,
	`{"name":"c","initial_offsets":{"offsets":[{}],"offsets":[]}}`,
	`{"name":"c","initial_offsets":{"offset":[]}}`,
	`{"name":"c","initial_offsets":[{"partition":null,"offset":null}]}`,
	`{"name":"c","initial_offsets":[{"partition":{"a":1,"a":2},"offset":{"o":[1,{"x":"y"}]}}],"initial_offsets":null}`,
	`{"name":"c","initial_offsets":[{"partition":{"a":1},"partition":{"b":2}}]}`,
	`{"name":"c","initial_offsets":[{"partition":{"a":01}}]}`,
	`{"name":"c","initial_offsets":[{"partition":{"a":1},}]}`,
	`{"name":"c","initial_offsets":[{"partition":5}]}`,
	`{"name":"c","initial_offsets":[{"other":{}}]}`,
	`{"name":"c","initial_offsets":[null]}`,
	`{"name":"c","initial_offsets":5}`,
	`{"name":"\u0063\ud800"}`,
	`{"name":"c"} x`,
	`{"name":"c"}{}`,
	`{"config":{}}`,
	`{}`,
	`{"name":"c","tasks":[]}`,
	`{"name":"c","config":{"a":{}}}`,
	`{"name":"c","config":[]}`,
	`{"name":["c"]}`,
	"{\"name\":\"a\tb\"}",
	"\v{\"name\":\"c\"}",
	`null`,
	``,
}

func TestParseFastAgreesWithTokens(t *testing.T) {
	cases := append([]string{string(mm2Request(300))}, fastCases...)
	for _, data := range cases {
		name := data
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			requireSameParse(t, []byte(data))
		})
	}
}

// requireSameParse checks that parseFast accepts exactly what parseTokens accepts, with the
// same result (were it to reject more, ParseCreateRequest would still be right, only slower).
func requireSameParse(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := parseTokens(data)
	got, ok := parseFast(data)
	if wantErr != nil {
		require.False(t, ok, "parseFast accepted %q, which parseTokens rejects: %v", data, wantErr)
		return
	}
	require.True(t, ok, "parseFast rejected %q, which parseTokens accepts", data)
	require.Equal(t, want, got, "%q", data)
}

// FuzzParseCreateRequest holds parseFast to parseTokens: whatever the fast path accepts, the
// tokenizer accepts with the same result.
func FuzzParseCreateRequest(f *testing.F) {
	for _, s := range fastCases {
		f.Add([]byte(s))
	}
	f.Add(mm2Request(3))
	f.Fuzz(func(t *testing.T, data []byte) {
		requireSameParse(t, data)
	})
}
