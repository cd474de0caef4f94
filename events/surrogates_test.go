package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Lone surrogate escapes are found and named by field; pairs, other escapes and the literal
// characters are not.
func TestLoneSurrogates(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "none", body: `{"name":"c","config":{"a":"\u00e9\ud83d\ude00😀"}}`},
		{name: "high in the name", body: `{"name":"c\ud800","config":{}}`, want: []string{"name"}},
		{name: "upper-case low alone", body: `{"name":"\uDC00c"}`, want: []string{"name"}},
		{name: "high before another escape", body: `{"name":"\ud800\n"}`, want: []string{"name"}},
		{name: "two highs then a low", body: `{"name":"\ud800\ud800\udc00"}`, want: []string{"name"}},
		{name: "config key and value", body: `{"name":"c","config":{"k\udfff":"1","file":"a\ud801b"}}`,
			want: []string{`config key "k` + "\ufffd" + `"`, `config value of "file"`}},
		{name: "initial_state", body: `{"name":"c","initial_state":"\ud800"}`, want: []string{"initial_state"}},
		{name: "offsets array", body: `{"name":"c","initial_offsets":[{"partition":{"f":"a"},"offset":{"p":1}},{"partition":{"f":{"g":["x","\udc00"]}},"offset":{"p\ud800":2}}]}`,
			want: []string{"initial_offsets[1].partition.f.g[1]", `initial_offsets[1].offset key "p` + "\ufffd" + `"`}},
		{name: "offsets object", body: `{"name":"c","initial_offsets":{"offsets":[{"partition":{"f":"\ud800"},"offset":null}]}}`,
			want: []string{"initial_offsets.offsets[0].partition.f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseCreateRequest([]byte(tt.body))
			require.NoError(t, err, "a lone surrogate is valid JSON: validation refuses it, not decoding")
			require.Equal(t, tt.want, req.LoneSurrogates)
		})
	}
}
