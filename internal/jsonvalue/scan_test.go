package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// decodeWhole decodes data, which must hold one JSON value and nothing else, with DecodeValue.
func decodeWhole(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := DecodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

// scanWhole is decodeWhole with ScanValue.
func scanWhole(data []byte) (any, error) {
	v, n, err := ScanValue(data)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(data[n:], " \t\r\n")) != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

func TestScanValue(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name  string
		input string
		want  any
		n     int // bytes read; -1: all of input
		err   string
	}{
		{name: "object in order", input: `{"b":1,"a":"x"}`, want: Map{{Key: "b", Value: Number("1")}, {Key: "a", Value: "x"}}, n: -1},
		{name: "repeated key", input: `{"a":1,"b":2,"a":{"c":null}}`, want: Map{{Key: "a", Value: Map{{Key: "c", Value: nil}}}, {Key: "b", Value: Number("2")}}, n: -1},
		{name: "empty object and array", input: ` [ {} , [ ] ] `, want: []any{Map{}, []any{}}, n: 13},
		{name: "scalars", input: `[true,false,null,-0.5e+10,0,"é\u00e9\ud83d\ude00\n"]`, want: []any{true, false, nil, Number("-0.5e+10"), Number("0"), "éé😀\n"}, n: -1},
		{name: "big integer kept as text", input: `9007199254740993`, want: Number("9007199254740993"), n: -1},
		{name: "lone surrogate", input: `"\ud800x"`, want: "\uFFFDx", n: -1},
		{name: "trailing data left to the caller", input: `{"a":1}]x`, want: Map{{Key: "a", Value: Number("1")}}, n: 7},
		{name: "max depth", input: deep(maxDepth + 1), want: nil, n: -1},
		{name: "too deep", input: deep(maxDepth + 2), err: "json nested too deeply"},
		{name: "leading zero", input: `[01]`, err: "invalid JSON at byte 2"},
		{name: "bare minus", input: `-`, err: "ends early"},
		{name: "fraction without digits", input: `1.`, err: "ends early"},
		{name: "trailing comma", input: `{"a":1,}`, err: "invalid JSON at byte 7"},
		{name: "control character", input: "\"a\tb\"", err: "invalid JSON at byte 2"},
		{name: "bad escape", input: `"\x"`, err: "invalid JSON"},
		{name: "invalid utf-8", input: "\"a\xffb\"", err: "invalid JSON at byte 2"},
		{name: "unquoted key", input: `{a:1}`, err: "invalid JSON at byte 1"},
		{name: "empty", input: ``, err: "ends early"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, n, err := ScanValue([]byte(tt.input))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			if tt.name == "max depth" {
				require.Equal(t, len(tt.input), n)
				return
			}
			require.Equal(t, tt.want, v)
			if tt.n < 0 {
				tt.n = len(tt.input)
			}
			require.Equal(t, tt.n, n)
		})
	}
}

// TestScanValueSlabMapsAreIndependent checks that Maps carved from one slab do not share
// capacity: appending to one must not overwrite its neighbour.
func TestScanValueSlabMapsAreIndependent(t *testing.T) {
	v, _, err := ScanValue([]byte(`[{"a":1},{"b":2}]`))
	require.NoError(t, err)
	arr := v.([]any)
	first := append(arr[0].(Map), Field{Key: "x", Value: true})
	require.Len(t, first, 2)
	require.Equal(t, Map{{Key: "b", Value: Number("2")}}, arr[1])
}

// FuzzScanValue checks ScanValue against DecodeValue: the same value or both an error. Input
// that is not valid UTF-8 is only checked for not panicking, since DecodeValue replaces such
// bytes where ScanValue rejects them.
func FuzzScanValue(f *testing.F) {
	for _, s := range []string{
		`{"cluster":"a","topic":"t","partition":1}`, `[1,-0,0.5e-3,"\u00e9\ud83d\ude00",true,false,null,{}]`,
		`{"a":1,"a":2}`, `"\ud800\u0041"`, `01`, `1.`, `[1,]`, "\"\x01\"", ` {"a" : [ ] } `, `-`, `{"a":{"b":{"c":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := scanWhole(data)
		// Skip accepts what Value accepts and stops where it stops.
		vs, ss := NewScanner(data), NewScanner(data)
		_, verr := vs.Value()
		serr := ss.Skip()
		if (verr == nil) != (serr == nil) || (verr == nil && vs.Pos() != ss.Pos()) {
			t.Fatalf("%q: Value error %v at %d, Skip error %v at %d", data, verr, vs.Pos(), serr, ss.Pos())
		}
		if !utf8.Valid(data) {
			return
		}
		want, wantErr := decodeWhole(data)
		if wantErr != nil || gotErr != nil {
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("%q: DecodeValue error %v, ScanValue error %v", data, wantErr, gotErr)
			}
			return
		}
		require.Equal(t, want, got, "%q", data)
	})
}

// BenchmarkScanValue compares ScanValue with DecodeValue on a 10,000-offset array of MM2
// entries.
func BenchmarkScanValue(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i := range 10_000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"partition":{"cluster":"primary","partition":` + strconv.Itoa(i%100) + `,"topic":"topic-` + strconv.Itoa(i/100) + `"},"offset":{"offset":` + strconv.Itoa(i*10) + `}}`)
	}
	buf.WriteByte(']')
	data := buf.Bytes()
	b.Run("ScanValue", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ScanValue(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeValue", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeWhole(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A request's ten offsets, read object by object as events reads them, box each repeated
// short scalar (the cluster alias, the topic) once, and no partition number at all (0 to 255
// are boxed once for every scan): beside the scanner, its stack and its Fields' slab, and the
// small box cache, they cost one box per distinct value.
func TestScanSharesRepeatedBoxes(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"cluster":"src","topic":"mirrored-00000","partition":%d,"offset":%d}`, i, 1000+7*i)
	}
	b.WriteByte(']')
	data := []byte(b.String())
	scan := func() (last Map) {
		sc := NewScanner(data)
		sc.Consume('[')
		for {
			m, err := sc.Object()
			require.NoError(t, err)
			last = m
			if !sc.Consume(',') {
				return last
			}
		}
	}
	require.Equal(t, Map{{Key: "cluster", Value: "src"}, {Key: "topic", Value: "mirrored-00000"},
		{Key: "partition", Value: Number("9")}, {Key: "offset", Value: Number("1063")}}, scan())
	allocs := alloctest.Least(50, func() { scan() })
	t.Logf("%.0f allocations", allocs)
	// The scanner, its stack's growth, the slabs, the cache (about ten); "src" and the topic
	// (before the cache is on, and once in it), ten offsets. Each value boxed was 47.
	require.LessOrEqual(t, allocs, 24.0)
}
