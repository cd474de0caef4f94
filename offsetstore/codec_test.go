package offsetstore

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/stretchr/testify/require"
)

// oracleInput is testdata/oracle-input.json, the request sent to the Connect oracle.
type oracleInput struct {
	Partitions int      `json:"partitions"`
	Murmur2    []string `json:"murmur2"`
	Entries    []struct {
		Note      string  `json:"note"`
		Name      string  `json:"name"`
		Partition string  `json:"partition"`
		Offset    *string `json:"offset"`
	} `json:"entries"`
	Orders []string `json:"orders"`
}

// oracleGolden is testdata/oracle-golden.json, the oracle's answer (tools/oracle's
// connect set: make goldens).
type oracleGolden struct {
	Murmur2 []struct {
		Input     string `json:"input"`
		Hash      int32  `json:"hash"`
		Partition int    `json:"partition"`
	} `json:"murmur2"`
	Entries []struct {
		Key       string  `json:"key"`
		Value     *string `json:"value"`
		Hash      int32   `json:"hash"`
		Partition int     `json:"partition"`
	} `json:"entries"`
	Orders [][]string `json:"orders"`
}

func loadOracle(t testing.TB) (oracleInput, oracleGolden) {
	t.Helper()
	var in oracleInput
	var golden oracleGolden
	for path, v := range map[string]any{"oracle-input.json": &in, "oracle-golden.json": &golden} {
		data, err := os.ReadFile(filepath.Join("testdata", path))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, v), path)
	}
	require.Len(t, golden.Entries, len(in.Entries), "golden out of date: run make goldens GOLDENS=connect")
	require.Len(t, golden.Murmur2, len(in.Murmur2))
	require.Len(t, golden.Orders, len(in.Orders))
	return in, golden
}

func decodeB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

// oracleCorrections are the oracle entries where a real Connect worker writes other bytes than
// the oracle, which serializes with plain Jackson: {old, new} replaces the oracle's value text.
// Checked by integration/realkafka TestOffsetsRecordsByteParity against Apache Kafka 4.3.1.
var oracleCorrections = map[string][2]string{
	// Connect's JsonDeserializer reads floats as BigDecimal, which has no negative zero.
	"negative numbers": {`"c":-0.0`, `"c":0.0`},
}

// TestGoldenOracle replays every oracle entry: the key and value bytes, murmur2 hash and
// partition that a JVM with Jackson computes must come out of our codec byte for byte.
func TestGoldenOracle(t *testing.T) {
	in, golden := loadOracle(t)
	for i, e := range in.Entries {
		want := golden.Entries[i]
		t.Run(e.Note, func(t *testing.T) {
			partition, err := jsonvalue.DecodeMap([]byte(e.Partition))
			require.NoError(t, err)
			key := AppendKey(nil, e.Name, JavaHashMapOrder(partition))
			require.Equal(t, string(decodeB64(t, want.Key)), string(key), "key bytes")
			require.Equal(t, want.Hash, Murmur2(key), "murmur2")
			require.Equal(t, want.Partition, PartitionFor(key, in.Partitions), "partition")

			if e.Offset == nil {
				require.Nil(t, want.Value, "tombstone")
				return
			}
			offset, err := jsonvalue.DecodeMap([]byte(*e.Offset))
			require.NoError(t, err)
			require.NotNil(t, want.Value)
			value := AppendJSON(nil, JavaHashMapOrder(offset))
			wantValue := string(decodeB64(t, *want.Value))
			if c, ok := oracleCorrections[e.Note]; ok {
				wantValue = strings.Replace(wantValue, c[0], c[1], 1)
			}
			require.Equal(t, wantValue, string(value), "value bytes")
		})
	}
	for i, s := range in.Murmur2 {
		want := golden.Murmur2[i]
		t.Run("murmur2 "+s, func(t *testing.T) {
			require.Equal(t, want.Hash, Murmur2([]byte(s)))
			require.Equal(t, want.Partition, PartitionFor([]byte(s), in.Partitions))
		})
	}
	for i, o := range in.Orders {
		want := golden.Orders[i]
		t.Run("order "+o, func(t *testing.T) {
			m, err := jsonvalue.DecodeMap([]byte(o))
			require.NoError(t, err)
			require.Equal(t, want, mapKeys(JavaHashMapOrder(m)))
		})
	}
}

func TestCodecAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "null", v: nil, want: `null`},
		{name: "nil map is null", v: jsonvalue.Map(nil), want: `null`},
		{name: "empty map", v: jsonvalue.Map{}, want: `{}`},
		{name: "booleans", v: []any{true, false}, want: `[true,false]`},
		{name: "empty array", v: []any{}, want: `[]`},
		{name: "map keeps its order", v: jsonvalue.Map{{Key: "b", Value: jsonvalue.Number("1")}, {Key: "a", Value: "x"}}, want: `{"b":1,"a":"x"}`},
		{name: "short escapes", v: "\b\t\n\f\r", want: `"\b\t\n\f\r"`},
		{name: "other controls upper-case hex", v: "\x00\x01\x0b\x1f", want: `"\u0000\u0001\u000B\u001F"`},
		{name: "quote and backslash", v: `"\`, want: `"\"\\"`},
		{name: "no html or slash escapes", v: "<>&/", want: `"<>&/"`},
		{name: "DEL raw", v: "\x7f", want: "\"\x7f\""},
		{name: "line separators raw", v: "\u2028\u2029", want: "\"\u2028\u2029\""},
		{name: "bmp raw", v: "é日本\uFFFD\uFFFF", want: "\"é日本\uFFFD\uFFFF\""},
		{name: "non-bmp as escaped surrogates", v: "a😀b𝄞", want: `"a\uD83D\uDE00b\uD834\uDD1E"`},
		{name: "invalid utf-8 as U+FFFD", v: "a\xffb", want: "\"a\uFFFDb\""},
		{name: "integer normalized", v: jsonvalue.Number("-0"), want: `0`},
		{name: "float normalized", v: jsonvalue.Number("1e10"), want: `1.0E10`},
		{name: "invalid number written as is", v: jsonvalue.Number("99999999999999999999"), want: `99999999999999999999`},
		{name: "go int", v: 42, want: `42`},
		{name: "go int64", v: int64(-7), want: `-7`},
		{name: "go float64 as java double", v: 0.0001, want: `1.0E-4`},
		{name: "go NaN quoted like Jackson", v: math.NaN(), want: `"NaN"`},
		{name: "go -Inf quoted like Jackson", v: math.Inf(-1), want: `"-Infinity"`},
		{name: "json.Number", v: json.Number("30.0"), want: `30.0`},
		{name: "other types via encoding/json", v: []string{"a"}, want: `["a"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, string(AppendJSON(nil, tt.v)))
		})
	}
}

func TestCodecAppendKey(t *testing.T) {
	tests := []struct {
		name      string
		connector string
		partition jsonvalue.Map
		want      string
	}{
		{name: "file source", connector: "file-src-1", partition: jsonvalue.Map{{Key: "filename", Value: "test.txt"}}, want: `["file-src-1",{"filename":"test.txt"}]`},
		{
			name:      "mm2 in given order",
			connector: "mm2-source",
			partition: JavaHashMapOrder(jsonvalue.Map{{Key: "topic", Value: "orders"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "cluster", Value: "A"}}),
			want:      `["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`,
		},
		{name: "nil partition", connector: "c", partition: nil, want: `["c",null]`},
		{name: "escaped name", connector: "a\"b\n😀", partition: jsonvalue.Map{}, want: `["a\"b\n\uD83D\uDE00",{}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, string(AppendKey(nil, tt.connector, tt.partition)))
			// Appends without touching what dst already holds.
			require.Equal(t, "x"+tt.want, string(AppendKey([]byte("x"), tt.connector, tt.partition)))
		})
	}
}

func TestCodecMapJSON(t *testing.T) {
	type event struct {
		Partition jsonvalue.Map `json:"partition"`
		Offset    jsonvalue.Map `json:"offset"`
	}
	in := event{
		Partition: jsonvalue.Map{{Key: "topic", Value: "<t>"}, {Key: "partition", Value: jsonvalue.Number("3")}},
		Offset:    jsonvalue.Map{{Key: "z", Value: jsonvalue.Number("9007199254740993")}, {Key: "a", Value: []any{true, nil, jsonvalue.Map{}}}},
	}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	// encoding/json compacts (and would HTML-escape) MarshalJSON output; SetEscapeHTML is off
	// only through an Encoder, so '<' shows up as \u003c here. The order and the exact integer
	// survive either way.
	require.JSONEq(t, `{"partition":{"topic":"<t>","partition":3},"offset":{"z":9007199254740993,"a":[true,null,{}]}}`, string(data))
	require.Contains(t, string(data), `{"topic":"\u003ct\u003e","partition":3}`)

	var out event
	require.NoError(t, json.Unmarshal(data, &out))
	require.Equal(t, in, out)

	t.Run("null leaves the map unchanged", func(t *testing.T) {
		m := jsonvalue.Map{{Key: "a", Value: nil}}
		require.NoError(t, json.Unmarshal([]byte(`null`), &m))
		require.Equal(t, jsonvalue.Map{{Key: "a", Value: nil}}, m)
	})
	t.Run("not an object", func(t *testing.T) {
		var m jsonvalue.Map
		require.Error(t, json.Unmarshal([]byte(`[1]`), &m))
	})
}

func BenchmarkAppendKey(b *testing.B) {
	partition := JavaHashMapOrder(jsonvalue.Map{{Key: "topic", Value: "orders"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "cluster", Value: "A"}})
	dst := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendKey(dst[:0], "mm2-source", partition)
	}
}
