package offsetstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/stretchr/testify/require"
)

func TestDecodeKey(t *testing.T) {
	tests := []struct {
		name      string
		key       string
		ok        bool
		connector string
		partition jsonvalue.Map
	}{
		{name: "file source", key: `["file-src-1",{"filename":"test.txt"}]`, ok: true, connector: "file-src-1", partition: jsonvalue.Map{{Key: "filename", Value: "test.txt"}}},
		{
			name: "stored order and literals kept", key: `["mm2",{"topic":"t","partition":007,"x":1.50,"b":true,"n":null}]`, ok: true, connector: "mm2",
			partition: jsonvalue.Map{{Key: "topic", Value: "t"}, {Key: "partition", Value: jsonvalue.Number("007")}, {Key: "x", Value: jsonvalue.Number("1.50")}, {Key: "b", Value: true}, {Key: "n", Value: nil}},
		},
		{name: "null partition", key: `["c",null]`, ok: true, connector: "c", partition: nil},
		{name: "empty partition", key: `["c",{}]`, ok: true, connector: "c", partition: jsonvalue.Map{}},
		{name: "whitespace", key: " [ \"c\" ,\n{ \"a\" : [ 1 , { } ] } ]\t", ok: true, connector: "c", partition: jsonvalue.Map{{Key: "a", Value: []any{jsonvalue.Number("1"), jsonvalue.Map{}}}}},
		{name: "trailing data ignored like Jackson readTree", key: `["c",{}]]garbage`, ok: true, connector: "c", partition: jsonvalue.Map{}},
		{name: "duplicate member keeps first position and last value", key: `["c",{"a":1,"b":2,"a":3}]`, ok: true, connector: "c", partition: jsonvalue.Map{{Key: "a", Value: jsonvalue.Number("3")}, {Key: "b", Value: jsonvalue.Number("2")}}},
		{
			name: "escapes", key: `["a\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00",{"\ud834\udd1e":"\u0000"}]`, ok: true, connector: "a\"\\/\b\f\n\r\té😀",
			partition: jsonvalue.Map{{Key: "𝄞", Value: "\x00"}},
		},
		{name: "lone surrogate becomes U+FFFD", key: `["\ud800x",{}]`, ok: true, connector: "\uFFFDx", partition: jsonvalue.Map{}},
		{name: "high surrogate then non-surrogate escape", key: `["\ud800\u0041",{}]`, ok: true, connector: "\uFFFDA", partition: jsonvalue.Map{}},
		{name: "raw utf-8", key: `["日本😀",{"é":"ü"}]`, ok: true, connector: "日本😀", partition: jsonvalue.Map{{Key: "é", Value: "ü"}}},
		{name: "one element", key: `["c"]`},
		{name: "three elements", key: `["c",{},1]`},
		{name: "name not a string", key: `[1,{}]`},
		{name: "name null", key: `[null,{}]`},
		{name: "partition is a string", key: `["c","p"]`},
		{name: "partition is an array", key: `["c",[]]`},
		{name: "not an array", key: `{"c":{}}`},
		{name: "empty", key: ``},
		{name: "truncated", key: `["c",{"a":1}`},
		{name: "unterminated string", key: `["c`},
		{name: "raw control character", key: "[\"a\x01\",{}]"},
		{name: "bad escape", key: `["\x",{}]`},
		{name: "short unicode escape", key: `["\u12",{}]`},
		{name: "invalid utf-8", key: "[\"\xff\",{}]"},
		{name: "bad number", key: `["c",{"a":1.}]`},
		{name: "plus number", key: `["c",{"a":+1}]`},
		{name: "bare word", key: `["c",{"a":nul}]`},
		{name: "missing colon", key: `["c",{"a" 1}]`},
		{name: "trailing comma", key: `["c",{"a":1,}]`},
		{name: "single quotes", key: `['c',{}]`},
		{name: "too deep", key: `["c",{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			connector, partition, ok := DecodeKey([]byte(tt.key))
			require.Equal(t, tt.ok, ok)
			if !tt.ok {
				return
			}
			require.Equal(t, tt.connector, connector)
			require.Equal(t, tt.partition, partition)
		})
	}
}

// TestDecodeKeyRoundTripGolden decodes every key the oracle produced and encodes it again.
func TestDecodeKeyRoundTripGolden(t *testing.T) {
	in, golden := loadOracle(t)
	for i, e := range in.Entries {
		t.Run(e.Note, func(t *testing.T) {
			key := decodeB64(t, golden.Entries[i].Key)
			connector, partition, ok := DecodeKey(key)
			require.True(t, ok)
			require.Equal(t, e.Name, connector)
			require.Equal(t, string(key), string(AppendKey(nil, connector, partition)))
		})
	}
}

// FuzzDecodeKey checks that DecodeKey never panics, agrees with DecodeValue on strict JSON,
// and that what it accepts encodes to a key it decodes back to the same bytes.
func FuzzDecodeKey(f *testing.F) {
	for _, seed := range []string{
		`["file-src-1",{"filename":"test.txt"}]`,
		`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`,
		`["c",null]`, `["c",{"a":[1,{"b":null}],"c":-1.5e3}]`, `["\u00e9\ud83d\ude00",{"\"":"\\"}]`,
		`["c",{"a":1,"a":2}]`, `[1,2]`, `{}`, `["c",{"a":007}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		connector, partition, ok := DecodeKey(key)
		if utf8.Valid(key) && json.Valid(key) {
			dec := json.NewDecoder(bytes.NewReader(key))
			dec.UseNumber()
			v, err := jsonvalue.DecodeValue(dec)
			arr, isArr := v.([]any)
			want := err == nil && isArr && len(arr) == 2
			if want {
				_, isStr := arr[0].(string)
				_, isMap := arr[1].(jsonvalue.Map)
				want = isStr && (isMap || arr[1] == nil)
			}
			require.Equal(t, want, ok, "jsonvalue.DecodeValue agrees")
			if ok {
				require.Equal(t, arr[0], connector)
				if arr[1] == nil {
					require.Nil(t, partition)
				} else {
					require.Equal(t, arr[1], partition)
				}
			}
		}
		if !ok {
			return
		}
		enc := AppendKey(nil, connector, partition)
		c2, p2, ok2 := DecodeKey(enc)
		require.True(t, ok2, "re-encoded key %q", enc)
		require.Equal(t, connector, c2)
		require.Equal(t, string(enc), string(AppendKey(nil, c2, p2)))
	})
}

func BenchmarkDecodeKey(b *testing.B) {
	key := []byte(`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`)
	b.SetBytes(int64(len(key)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := DecodeKey(key); !ok {
			b.Fatal("not ok")
		}
	}
}

// BenchmarkDecodeKeyJSONDecoder is the baseline DecodeKey replaces: DecodeValue on a
// json.Decoder.
func BenchmarkDecodeKeyJSONDecoder(b *testing.B) {
	key := []byte(`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`)
	b.SetBytes(int64(len(key)))
	b.ReportAllocs()
	for b.Loop() {
		dec := json.NewDecoder(bytes.NewReader(key))
		dec.UseNumber()
		if _, err := jsonvalue.DecodeValue(dec); err != nil {
			b.Fatal(err)
		}
	}
}
