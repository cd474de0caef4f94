package events

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
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
	`{"name":"c","create":"offsets-only","create":null}`,
	`{"name":"c","create":"offsets-only","initial_offsets":[]}`,
	`{"name":"c","create":7}`,
	`{"name":"c","create":nul}`,
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
// same result (were it to reject more, ParseCreateRequest would still be right, only slower),
// both in one pass and with every initial_offsets array cut into parallel runs.
func requireSameParse(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := parseTokens(data)
	for _, parts := range []int{1, 3} {
		got, ok := parseFastWith(t, data, parts)
		if wantErr != nil {
			require.False(t, ok, "parseFast (%d runs) accepted %q, which parseTokens rejects: %v", parts, data, wantErr)
			continue
		}
		require.True(t, ok, "parseFast (%d runs) rejected %q, which parseTokens accepts", parts, data)
		require.Equal(t, want, got, "%d runs: %q", parts, data)
	}
	// With every initial_offsets array left as text (checked in one run and in three), the
	// same requests are accepted, and the text decodes to the same entries.
	for _, parts := range []int{1, 3} {
		tune := defaultTuning()
		tune.rawOffsetsBytes, tune.parallelBytes, tune.parallelism = 1, 0, parts
		got, ok := parseFast(data, tune)
		if wantErr != nil {
			require.False(t, ok, "parseFast with raw offsets (%d runs) accepted %q, which parseTokens rejects: %v", parts, data, wantErr)
			continue
		}
		require.True(t, ok, "parseFast with raw offsets (%d runs) rejected %q, which parseTokens accepts", parts, data)
		entries, err := got.Offsets()
		require.NoError(t, err, "%q", data)
		got.InitialOffsets, got.RawOffsets = entries, nil
		if want.InitialOffsets != nil && len(want.InitialOffsets) == 0 {
			// An empty array decodes to an empty list either way; only nil-ness may differ.
			require.Empty(t, got.InitialOffsets)
			got.InitialOffsets = want.InitialOffsets
		}
		require.Equal(t, want, got, "raw offsets, %d runs: %q", parts, data)
	}
}

// parseFastWith is parseFast cutting arrays of any size into parts runs.
func parseFastWith(t *testing.T, data []byte, parts int) (CreateRequest, bool) {
	t.Helper()
	tune := defaultTuning()
	tune.parallelBytes, tune.parallelism = 0, parts
	if parts > 1 {
		tune.copyStringsBytes = 0 // and the strings copied
	}
	return parseFast(data, tune)
}

// TestLargeRequestDoesNotAliasData checks that a large request's parsed values own their
// strings: the request record can be released (here: overwritten) while they are in use.
func TestLargeRequestDoesNotAliasData(t *testing.T) {
	data := []byte(`{"name":"mm2","config":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","k":"v\u00e9"},` +
		`"initial_offsets":[{"partition":{"cluster":"a-longer-cluster-alias-than-thirty-two-bytes","topic":"t","partition":0},"offset":{"offset":5,"meta":["x",{"y":"z"}]}},` +
		string(mm2Request(2000)[len(`{"name":"mm2","config":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","source.cluster.alias":"primary"},"initial_offsets":[`):]))
	want, err := parseTokens(bytes.Clone(data))
	require.NoError(t, err)
	for _, parts := range []int{1, 3} {
		in := bytes.Clone(data)
		got, ok := parseFast(in, scanTuning{copyStringsBytes: 0, parallelBytes: 0, parallelism: parts})
		require.True(t, ok)
		for i := range in {
			in[i] = ' '
		}
		require.Equal(t, want, got, "%d runs", parts)
	}
}

// TestParallelScanCuts checks the parallel parse of initial_offsets: runs cut between entries
// parse into the same entries as one pass; cuts guessed inside a string or a nested array are
// found out and the array is parsed again in one pass; a bad entry in any run is an error.
func TestParallelScanCuts(t *testing.T) {
	valid := mm2Request(2000)
	sc := jsonvalue.NewScanner(valid)
	require.True(t, sc.Consume('{'))
	var start int
	for {
		key, ok := sc.ReadString()
		require.True(t, ok)
		require.True(t, sc.Consume(':'))
		if key == "initial_offsets" {
			start = sc.Pos()
			break
		}
		_, err := sc.Value()
		require.NoError(t, err)
		require.True(t, sc.Consume(','))
	}
	cuts := sc.GuessCuts(4)
	require.Len(t, cuts, 3)
	for i, c := range cuts {
		require.Equal(t, byte(','), valid[c], "cut %d", i)
		require.Equal(t, byte('{'), valid[c+1])
	}
	sc.Seek(start)
	parallel, ok := scanRuns(sc, start, cuts)
	require.True(t, ok)
	end := sc.Pos()
	sc.Seek(start)
	seq, ok := scanEntryRun(sc, true)
	require.True(t, ok)
	require.Equal(t, end, sc.Pos(), "both end after the array")
	require.Len(t, parallel, 2000)
	require.Equal(t, seq, parallel)

	// Entries whose strings and nested arrays look like cuts: the guesses land inside them.
	var tricky bytes.Buffer
	tricky.WriteString(`{"name":"c","initial_offsets":[`)
	for i := range 600 {
		if i > 0 {
			tricky.WriteString(" , ")
		}
		fmt.Fprintf(&tricky, `{"partition":{"k":"},{%d},{","a":[{"x":1} ,{"y":2}]},"offset":{"o":%d}}`, i, i)
	}
	tricky.WriteString(`]}`)
	for _, parts := range []int{2, 3, 7} {
		req, ok := parseFastWith(t, tricky.Bytes(), parts)
		require.True(t, ok)
		require.Len(t, req.InitialOffsets, 600)
		require.Equal(t, jsonvalue.Number("599"), req.InitialOffsets[599].Offset[0].Value)
	}
	requireSameParse(t, tricky.Bytes())

	// A bad entry early, in the middle or last: every run's error counts.
	for _, at := range []int{3, 1000, 1998} {
		bad := bytes.Replace(valid, fmt.Appendf(nil, `"offset":{"offset":%d}`, 10*at), []byte(`"offset":{"offset":01}`), 1)
		require.NotEqual(t, valid, bad)
		requireSameParse(t, bad)
		_, ok := parseFastWith(t, bad, 4)
		require.False(t, ok, "bad entry %d", at)
	}
	// A trailing comma before the closing bracket, and a missing one between entries.
	requireSameParse(t, bytes.Replace(valid, []byte(`}]}`), []byte(`},]}`), 1))
	requireSameParse(t, bytes.Replace(valid, []byte(`}},{"partition"`), []byte(`}}{"partition"`), 1))
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
