package source

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// decodeOffset gives DecodeMap's values and errors: Maps in input order, numbers as their
// text, a repeated key's last value, null as a nil Map, and an error for anything but one
// object or null.
func TestDecodeOffsetIsDecodeMap(t *testing.T) {
	for _, in := range []string{
		`{"position":42}`, ` {"position" : 42 } `, `null`, `{}`, `{"a":1,"b":"x","a":2}`,
		`{"lsn":12345678901234567890,"txId":1.50,"f":-0e3}`, `{"n":{"m":[1,{"x":null}],"t":true}}`,
		`{"s":"\u00e9\n\ud83d\ude00"}`, "{\"s\":\"\xff\"}", `{"a":1} x`, `[1]`, `"s"`, `{"a":01}`, `{"a":1,}`, ``,
	} {
		want, wantErr := jsonvalue.DecodeMap([]byte(in))
		got, err := decodeOffset([]byte(in))
		if wantErr != nil {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		require.Equal(t, want == nil, got == nil, "nil Map: %s", in)
	}
	// The strings are the Map's own: the record's bytes may be reused.
	b := []byte(`{"file":"a.txt"}`)
	m, err := decodeOffset(b)
	require.NoError(t, err)
	copy(b, `{"file":"b.txt"}`)
	f, _ := m.Get("file")
	require.Equal(t, "a.txt", f)
}

// A source offset's decoding allocates a few times, not DecodeMap's dozen and more: each
// source's offsets are decoded three times over a migration (its listing and its stop
// barrier's two reads).
func TestDecodeOffsetAllocations(t *testing.T) {
	v := []byte(`{"position":1234567}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	testing.AllocsPerRun(50, func() { _, _ = decodeOffset(v) }) // 51 calls
	runtime.ReadMemStats(&after)
	allocs := alloctest.Least(50, func() { _, _ = decodeOffset(v) })
	require.LessOrEqual(t, allocs, 10.0, "allocations of decoding one source offset")
	// And few bytes: not an arena sized for a large document (32 KiB) for each of them.
	perRun := float64(after.TotalAlloc-before.TotalAlloc) / 51
	require.Less(t, perRun, 1024.0, "bytes allocated decoding one source offset")
	t.Logf("decodeOffset %v allocations (%.0f bytes), DecodeMap %v", allocs, perRun, alloctest.Least(50, func() { _, _ = jsonvalue.DecodeMap(v) }))
}
