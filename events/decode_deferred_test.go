package events

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/race"
)

// requireSameDecoding holds DecodeRequestDeferred to DecodeRequest on msg, both leaving arrays
// of rawBytes or more as text (0: RawOffsetsBytes): the same error, or a request that, settled
// after a strict reading of its offsets text or checked, is DecodeRequest's. It reports
// whether the offsets were left unchecked.
func requireSameDecoding(t *testing.T, msg *kafka.Message, rawBytes int) (deferred bool) {
	t.Helper()
	tune := defaultTuning()
	tune.rawOffsetsBytes = rawBytes
	want, wantErr := decodeRequest(msg, 1<<20, tune, false)
	got, err := decodeRequest(msg, 1<<20, tune, true)
	if err != nil || !got.Deferred() {
		requireSameDecodeError(t, wantErr, err)
		if err == nil {
			requireSameRequest(t, want, got)
		}
		return false
	}
	if _, perr := ParseOffsets(got.Data.RawOffsets); perr == nil {
		// A strict reader took the text as one array of entries: the request is DecodeRequest's.
		require.NoError(t, wantErr, "the offsets text %q reads as an array, but DecodeRequest refuses the record", got.Data.RawOffsets)
		settled := *got
		settled.Settle()
		require.False(t, settled.Deferred())
		requireSameRequest(t, want, &settled)
	}
	requireSameDecodeError(t, wantErr, got.Check())
	require.False(t, got.Deferred())
	if wantErr == nil {
		requireSameRequest(t, want, got)
	}
	return true
}

// requireSameRequest compares requests without printing megabytes of offsets text.
func requireSameRequest(t *testing.T, want, got *Request) {
	t.Helper()
	w, g := *want, *got
	require.True(t, bytes.Equal(w.Data.RawOffsets, g.Data.RawOffsets), "offsets text of %d bytes, want %d", len(g.Data.RawOffsets), len(w.Data.RawOffsets))
	require.Equal(t, w.Data.RawOffsets == nil, g.Data.RawOffsets == nil)
	w.Data.RawOffsets, g.Data.RawOffsets = nil, nil
	w.pending, g.pending, w.tune, g.tune = nil, nil, scanTuning{}, scanTuning{}
	require.Equal(t, w, g)
}

func requireSameDecodeError(t *testing.T, want, got error) {
	t.Helper()
	if want == nil {
		require.NoError(t, got)
		return
	}
	var w, g *DecodeError
	require.ErrorAs(t, want, &w)
	require.ErrorAs(t, got, &g, "DecodeRequest refuses the record with %q", want)
	require.Equal(t, [4]string{string(w.Reason), w.Message, w.ID, w.Source}, [4]string{string(g.Reason), g.Message, g.ID, g.Source})
	require.Equal(t, fmt.Sprint(w.Err), fmt.Sprint(g.Err))
}

// A large initial_offsets array left unchecked gives, once read or checked, exactly what
// DecodeRequest gives: the same request, or the same error, for malformed arrays of every kind
// and for valid ones the single pass does not take.
func TestDecodeRequestDeferredMatchesDecodeRequest(t *testing.T) {
	body := string(mm2Request(850)) // over RawOffsetsBytes
	require.Greater(t, len(body), RawOffsetsBytes)
	entry := `{"partition":{"cluster":"primary","partition":0,"topic":"topic-0"},"offset":{"offset":0}}`
	require.Contains(t, body, entry)
	head, arr, _ := strings.Cut(body, `"initial_offsets":`)
	arr = strings.TrimSuffix(arr, "}")
	mid := strings.Index(arr[len(arr)/2:], `{"partition"`) + len(arr)/2
	at := func(s string) string { return arr[:mid] + s + arr[mid:] }
	tests := []struct {
		name     string
		body     string
		deferred bool // in binary mode, left unchecked for a reader of the text: no error yet
	}{
		{name: "valid", body: body, deferred: true},
		{name: "valid with whitespace", body: head + `"initial_offsets" : ` + strings.ReplaceAll(arr, ",", " ,\n\t") + " }", deferred: true},
		{name: "truncated", body: body[:len(body)*2/3]},
		{name: "truncated before the closing bracket", body: strings.TrimSuffix(body, "]}") + "}"},
		{name: "entry cut short", body: head + `"initial_offsets":` + at(`{"partition":{"cluster":"a"},`) + "}", deferred: true},
		{name: "bad escape", body: head + `"initial_offsets":` + at(`{"partition":{"cluster":"a\x"},"offset":null},`) + "}", deferred: true},
		{name: "valid escapes", body: head + `"initial_offsets":` + at(`{"partition":{"cluster":"a\"]\\\n\u0041"},"offset":null},`) + "}", deferred: true},
		{name: "lone surrogate", body: head + `"initial_offsets":` + at(`{"partition":{"cluster":"\ud800"},"offset":null},`) + "}"},
		{name: "control character", body: head + `"initial_offsets":` + at("{\"partition\":{\"cluster\":\"a\tb\"},\"offset\":null},") + "}", deferred: true},
		{name: "invalid UTF-8", body: head + `"initial_offsets":` + at("{\"partition\":{\"cluster\":\"a\xffb\"},\"offset\":null},") + "}"},
		{name: "duplicate keys", body: head + `"initial_offsets":` + at(`{"partition":{"cluster":"a","cluster":"b","partition":1,"partition":2},"offset":{"offset":1,"offset":2},"offset":null},`) + "}", deferred: true},
		{name: "huge numbers", body: head + `"initial_offsets":` + at(`{"partition":{"p":123456789012345678901234567890},"offset":{"offset":1e400,"o":-0.0000001E-9}},`) + "}", deferred: true},
		{name: "leading zero", body: head + `"initial_offsets":` + at(`{"partition":{"p":007},"offset":null},`) + "}", deferred: true},
		{name: "trailing comma", body: strings.TrimSuffix(body, "]}") + ",]}", deferred: true},
		{name: "missing comma", body: head + `"initial_offsets":` + strings.Replace(arr, "},{", "}{", 1) + "}", deferred: true},
		{name: "nested arrays and nulls", body: head + `"initial_offsets":` + at(`{"partition":{"p":[1,[2,{"q":"]"}]]},"offset":null},{},{"partition":null},`) + "}", deferred: true},
		{name: "not an entry", body: head + `"initial_offsets":` + at(`[1],`) + "}", deferred: true},
		{name: "bracket in a later string", body: body[:len(body)-1] + `,"config":{"topics":"a]b"}}`},
		{name: "bracket in a later string that decodes as the end", body: head + `"initial_offsets":` + arr + `,"config":{"x":"]}`, deferred: true},
		{name: "later array", body: strings.TrimSuffix(body, "}") + `,"initial_state":"RUNNING","config":{"k":"[]"}}`},
		{name: "initial_offsets twice", body: strings.TrimSuffix(body, "}") + `,"initial_offsets":null}`},
		{name: "initial_offsets twice, both large", body: strings.TrimSuffix(body, "}") + `,"initial_offsets":` + arr + "}", deferred: true},
		{name: "unknown field after the array", body: strings.TrimSuffix(body, "}") + `,"other":1}`},
		{name: "trailing data", body: body + `]`},
		{name: "offsets object", body: head + `"initial_offsets":{"offsets":` + arr + "}}", deferred: true},
		{name: "offsets object cut", body: head + `"initial_offsets":{"offsets":` + arr + "}"},
		{name: "no name", body: strings.Replace(body, `"name":"mm2",`, "", 1)},
	}
	for i, tt := range tests {
		if !race.Sample(i, 3) { // under the race detector a third of the cases, "valid" first
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []Mode{ModeBinary, ModeStructured} {
				msg, err := RequestMessage("requests", []byte(tt.body), RequestOptions{Mode: mode, ID: "big", Source: "/s"})
				if mode == ModeStructured && err != nil {
					continue // not JSON: no structured event to carry it
				}
				require.NoError(t, err)
				if deferred := requireSameDecoding(t, &msg, 0); mode == ModeBinary {
					require.Equal(t, tt.deferred, deferred, "left unchecked")
					requireSameDecoding(t, &msg, 1) // every array left unchecked
				}
			}
		})
	}
}

// The valid bulk request is left unchecked, its text the array's.
func TestDecodeRequestDeferredLeavesText(t *testing.T) {
	body := mm2Request(2000)
	msg, err := RequestMessage("requests", body, RequestOptions{ID: "big"})
	require.NoError(t, err)
	req, err := DecodeRequestDeferred(&msg, 0)
	require.NoError(t, err)
	require.True(t, req.Deferred())
	require.Equal(t, body[bytes.IndexByte(body, '['):len(body)-1], req.Data.RawOffsets)
	require.NoError(t, req.Check())
	require.False(t, req.Deferred())
	require.NoError(t, req.Check(), "a second Check does nothing")
}

// FuzzDecodeRequestDeferred holds DecodeRequestDeferred to DecodeRequest on arbitrary request
// data, every initial_offsets array left unchecked.
func FuzzDecodeRequestDeferred(f *testing.F) {
	for _, s := range fastCases {
		f.Add([]byte(s))
	}
	f.Add(mm2Request(3))
	f.Add([]byte(`{"name":"n","initial_offsets":[{"partition":{"a":"]"},"offset":null}],"config":{"x":"]}`))
	f.Add([]byte(`{"name":"n","initial_offsets":[{"partition":{"a":"b"},"offset":{"o":1}}] , "initial_offsets":[{}]}`))
	f.Add([]byte(`{"name":"n","initial_offsets":{"offsets":[{"partition":{"a":"\u00e9\"]"},"offset":{"o":1e5}}]}}`))
	headers := binaryHeaders()
	f.Fuzz(func(t *testing.T, data []byte) {
		msg := record(string(data), headers...)
		requireSameDecoding(t, msg, 1)
	})
}
