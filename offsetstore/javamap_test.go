package offsetstore

import (
	"fmt"
	"testing"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/stretchr/testify/require"
)

// keysMap builds a Map with the given keys (in that insertion order) and values 0..n-1.
func keysMap(keys ...string) jsonvalue.Map {
	m := make(jsonvalue.Map, len(keys))
	for i, k := range keys {
		m[i] = jsonvalue.Field{Key: k, Value: jsonvalue.Number(string(rune('0' + i%10)))}
	}
	return m
}

func mapKeys(m jsonvalue.Map) []string {
	keys := make([]string, len(m))
	for i, f := range m {
		keys[i] = f.Key
	}
	return keys
}

// TestJavaHashMapOrderSpec checks the orders that docs/connect-internals.md, "Offsets topic records"
// describes, as a real JVM reports them.
func TestJavaHashMapOrderSpec(t *testing.T) {
	tests := []struct {
		name     string
		inserted []string
		capacity int // 0: new HashMap<>()
		want     []string
	}{
		{name: "mm2 source", inserted: []string{"topic", "partition", "cluster"}, want: []string{"cluster", "partition", "topic"}},
		{name: "mm2 checkpoint", inserted: []string{"group", "topic", "partition"}, want: []string{"partition", "topic", "group"}},
		{name: "mm2 heartbeat", inserted: []string{"targetClusterAlias", "sourceClusterAlias"}, want: []string{"sourceClusterAlias", "targetClusterAlias"}},
		{name: "sink rest view", inserted: []string{"kafka_topic", "kafka_partition"}, want: []string{"kafka_partition", "kafka_topic"}},
		{name: "sql server partition", inserted: []string{"server", "database"}, want: []string{"server", "database"}},
		{name: "mongo 2.5 partition", inserted: []string{"server_id", "rs"}, want: []string{"rs", "server_id"}},
		{name: "vitess per task", inserted: []string{"task_key", "server"}, want: []string{"server", "task_key"}},
		{name: "jdbc v1 partition", inserted: []string{"table", "protocol"}, want: []string{"protocol", "table"}},
		{
			name:     "mysql offset",
			inserted: []string{"server_id", "gtids", "file", "pos", "event", "row", "ts_sec"},
			want:     []string{"ts_sec", "file", "pos", "gtids", "row", "server_id", "event"},
		},
		{
			name:     "mysql offset 2.5 with transaction_id",
			inserted: []string{"server_id", "gtids", "file", "pos", "event", "row", "ts_sec", "transaction_id"},
			want:     []string{"transaction_id", "ts_sec", "file", "pos", "gtids", "row", "server_id", "event"},
		},
		{
			name:     "postgres offset",
			inserted: []string{"ts_usec", "txId", "lsn", "lsn_proc", "lsn_commit", "messageType"},
			want:     []string{"lsn_proc", "messageType", "lsn_commit", "lsn", "txId", "ts_usec"},
		},
		{name: "sql server offset", inserted: []string{"commit_lsn", "change_lsn", "event_serial_no"}, want: []string{"event_serial_no", "commit_lsn", "change_lsn"}},
		{name: "sql server 3.0.1 snapshot", inserted: []string{"snapshot", "snapshot_completed", "commit_lsn"}, want: []string{"commit_lsn", "snapshot", "snapshot_completed"}},
		{name: "oracle offset", inserted: []string{"scn", "snapshot_scn", "commit_scn"}, want: []string{"commit_scn", "snapshot_scn", "scn"}},
		{name: "oracle 2.5 transaction_id after commit_scn", inserted: []string{"scn", "snapshot_scn", "commit_scn", "transaction_id"}, want: []string{"commit_scn", "transaction_id", "snapshot_scn", "scn"}},
		{
			name:     "jdbc offset capacity 4",
			inserted: []string{"incrementing", "timestamp", "timestamp_nanos"},
			capacity: 3,
			want:     []string{"timestamp_nanos", "incrementing", "timestamp"},
		},
		{name: "jdbc timestamp only capacity 4", inserted: []string{"timestamp", "timestamp_nanos"}, capacity: 3, want: []string{"timestamp_nanos", "timestamp"}},
		// new HashMap<>(3-entry map) pre-sizes differently by JDK.
		{name: "aiven copy jdk 17 capacity 8", inserted: []string{"objectKey", "partition", "bucket"}, capacity: 8, want: []string{"bucket", "partition", "objectKey"}},
		{name: "aiven copy jdk 25 capacity 4", inserted: []string{"objectKey", "partition", "bucket"}, capacity: 4, want: []string{"bucket", "objectKey", "partition"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got jsonvalue.Map
			if tt.capacity == 0 {
				got = JavaHashMapOrder(keysMap(tt.inserted...))
			} else {
				got = JavaHashMapOrderCap(keysMap(tt.inserted...), tt.capacity)
			}
			require.Equal(t, tt.want, mapKeys(got))
		})
	}
}

// TestJavaHashMapBuckets checks the spread hash against the bucket table of
// (the bucket at capacity 16 and 32, docs/connect-internals.md, "Offsets topic records").
func TestJavaHashMapBuckets(t *testing.T) {
	tests := []struct {
		name     string
		b16, b32 uint32
	}{
		{"server", 1, 1}, {"database", 2, 18}, {"server_id", 12, 12}, {"rs", 1, 1},
		{"task_key", 7, 23}, {"table", 14, 30}, {"protocol", 2, 18}, {"query", 7, 7},
		{"filename", 3, 19}, {"cluster", 1, 1}, {"partition", 3, 19}, {"topic", 9, 25},
		{"group", 15, 31}, {"sourceClusterAlias", 10, 10}, {"targetClusterAlias", 15, 15},
		{"bucket", 0, 16}, {"objectKey", 6, 22}, {"transaction_id", 0, 0},
		{"incremental_snapshot_correlation_id", 0, 0}, {"incremental_snapshot_maximum_key", 8, 24},
		{"incremental_snapshot_collections", 12, 12}, {"incremental_snapshot_primary_key", 14, 14},
		{"snapshot", 14, 30}, {"snapshot_completed", 15, 31}, {"ts_sec", 2, 2}, {"file", 3, 19},
		{"pos", 5, 21}, {"gtids", 10, 10}, {"row", 11, 27}, {"event", 12, 28},
		{"lsn_proc", 1, 1}, {"lsn_events_processed", 1, 1}, {"xmin", 2, 2},
		{"last_snapshot_record", 3, 19}, {"messageType", 4, 20}, {"lsn_commit", 5, 5},
		{"lsn", 6, 6}, {"txId", 9, 9}, {"ts_usec", 13, 29}, {"event_serial_no", 2, 2},
		{"commit_lsn", 9, 9}, {"change_lsn", 10, 10}, {"sec", 0, 16}, {"ord", 0, 0},
		{"lsid", 0, 16}, {"resume_token", 4, 4}, {"initsync", 5, 5}, {"txnNumber", 9, 9},
		{"commit_scn", 0, 0}, {"txSeq", 1, 1}, {"lcr_position", 2, 2},
		{"window_advance_enabled", 9, 9}, {"scn_idx", 11, 11}, {"snapshot_pending_tx", 12, 28},
		{"snapshot_scn", 12, 28}, {"scn", 15, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := javaSpreadHash(tt.name)
			require.Equal(t, tt.b16, h&15, "bucket at capacity 16")
			require.Equal(t, tt.b32, h&31, "bucket at capacity 32")
		})
	}
}

func TestJavaStringHash(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  int32
	}{
		{name: "empty", input: "", want: 0},
		{name: "ascii", input: "hello", want: 99162322},
		// "😀" is the UTF-16 pair D83D DE00: 31*0xD83D + 0xDE00.
		{name: "non-bmp counts surrogates", input: "😀", want: 31*0xD83D + 0xDE00},
		{name: "bmp", input: "é", want: 0xE9},
		{name: "invalid utf-8 reads as U+FFFD", input: "\xff", want: 0xFFFD},
		// Wraps around int32 like Java's int arithmetic.
		{name: "overflow", input: "polygenelubricants", want: -2147483648},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, javaStringHash(tt.input))
		})
	}
}

func TestJavaHashMapOrderSemantics(t *testing.T) {
	t.Run("does not mutate its input", func(t *testing.T) {
		in := jsonvalue.Map{{Key: "topic", Value: "t"}, {Key: "partition", Value: jsonvalue.Number("1")}, {Key: "cluster", Value: "c"}}
		before := append(jsonvalue.Map(nil), in...)
		out := JavaHashMapOrder(in)
		require.Equal(t, before, in)
		require.Equal(t, []string{"cluster", "partition", "topic"}, mapKeys(out))
	})
	t.Run("repeated key keeps first position and last value", func(t *testing.T) {
		in := jsonvalue.Map{{Key: "b", Value: jsonvalue.Number("1")}, {Key: "a", Value: jsonvalue.Number("2")}, {Key: "b", Value: jsonvalue.Number("3")}}
		require.Equal(t, jsonvalue.Map{{Key: "a", Value: jsonvalue.Number("2")}, {Key: "b", Value: jsonvalue.Number("3")}}, JavaHashMapOrder(in))
	})
	t.Run("nil stays nil", func(t *testing.T) {
		require.Nil(t, JavaHashMapOrder(nil))
	})
	t.Run("empty stays empty and non-nil", func(t *testing.T) {
		out := JavaHashMapOrder(jsonvalue.Map{})
		require.NotNil(t, out)
		require.Empty(t, out)
	})
	t.Run("nested maps are reordered, arrays copied", func(t *testing.T) {
		inner := jsonvalue.Map{{Key: "topic", Value: "t"}, {Key: "cluster", Value: "c"}}
		arr := []any{jsonvalue.Number("1"), inner}
		out := JavaHashMapOrder(jsonvalue.Map{{Key: "x", Value: inner}, {Key: "y", Value: arr}})
		x, _ := out.Get("x")
		require.Equal(t, []string{"cluster", "topic"}, mapKeys(x.(jsonvalue.Map)))
		y, _ := out.Get("y")
		require.Equal(t, []string{"cluster", "topic"}, mapKeys(y.([]any)[1].(jsonvalue.Map)))
		require.Equal(t, []string{"topic", "cluster"}, mapKeys(inner), "input untouched")
	})
	t.Run("capacity zero and one grow like Java", func(t *testing.T) {
		keys := []string{"incrementing", "timestamp", "timestamp_nanos"}
		// Tables 1 -> 2 -> 4: the final table of 4 gives the same order as capacity 3.
		require.Equal(t, []string{"timestamp_nanos", "incrementing", "timestamp"}, mapKeys(JavaHashMapOrderCap(keysMap(keys...), 0)))
		require.Equal(t, []string{"timestamp_nanos", "incrementing", "timestamp"}, mapKeys(JavaHashMapOrderCap(keysMap(keys...), 1)))
	})
}

func TestJavaHashMapTableGrowth(t *testing.T) {
	tests := []struct {
		name            string
		keys            int
		initialCapacity int
		want            int
	}{
		{name: "default empty", keys: 0, initialCapacity: -1, want: 16},
		{name: "default 12", keys: 12, initialCapacity: -1, want: 16},
		{name: "default 13", keys: 13, initialCapacity: -1, want: 32},
		{name: "default 24", keys: 24, initialCapacity: -1, want: 32},
		{name: "default 25", keys: 25, initialCapacity: -1, want: 64},
		{name: "default 49", keys: 49, initialCapacity: -1, want: 128},
		{name: "cap 3 with 3", keys: 3, initialCapacity: 3, want: 4},
		{name: "cap 3 with 4", keys: 4, initialCapacity: 3, want: 8},
		{name: "cap 0 with 1", keys: 1, initialCapacity: 0, want: 2},
		{name: "cap 0 with 2", keys: 2, initialCapacity: 0, want: 4},
		{name: "cap 8 with 7", keys: 7, initialCapacity: 8, want: 16},
		{name: "cap 100 with 5", keys: 5, initialCapacity: 100, want: 128},
		{name: "cap huge", keys: 1, initialCapacity: 1 << 40, want: 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hashes := make([]uint32, tt.keys)
			for i := range hashes {
				hashes[i] = uint32(i) // distinct buckets: no treeify resizes
			}
			got, tree := simulateJavaPuts(hashes, tt.initialCapacity)
			require.Equal(t, tt.want, got)
			require.False(t, tree)
		})
	}
}

func BenchmarkJavaHashMapOrder(b *testing.B) {
	m := jsonvalue.Map{{Key: "topic", Value: "orders"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "cluster", Value: "A"}}
	b.ReportAllocs()
	for b.Loop() {
		_ = JavaHashMapOrder(m)
	}
}

func BenchmarkJavaHashMapOrderWide(b *testing.B) {
	m := keysMap("server_id", "gtids", "file", "pos", "event", "row", "ts_sec", "snapshot", "transaction_id",
		"incremental_snapshot_primary_key", "incremental_snapshot_maximum_key",
		"incremental_snapshot_collections", "incremental_snapshot_correlation_id")
	b.ReportAllocs()
	for b.Loop() {
		_ = JavaHashMapOrder(m)
	}
}

func TestJavaCompareStrings(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		sign int
	}{
		{name: "equal", a: "abc", b: "abc", sign: 0},
		{name: "ascii", a: "abc", b: "abd", sign: -1},
		{name: "prefix is smaller", a: "ab", b: "abc", sign: -1},
		{name: "longer is bigger", a: "abc", b: "ab", sign: 1},
		// UTF-16 order: U+1F600 is D83D DE00, which sorts before U+E000 (UTF-8 says after).
		{name: "surrogates before private use", a: "😀", b: "\uE000", sign: -1},
		{name: "same high surrogate", a: "😀", b: "😁", sign: -1},
		{name: "bmp", a: "é", b: "z", sign: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := javaCompareStrings(tt.a, tt.b)
			switch tt.sign {
			case 0:
				require.Zero(t, got)
			case -1:
				require.Negative(t, got)
			default:
				require.Positive(t, got)
			}
		})
	}
}

// TestJavaHashMapOrderTreeBins covers tree bins with an initial capacity (the oracle only
// builds new HashMap<>(); the default-capacity tree cases are in the oracle goldens): sixteen
// keys with one String.hashCode ("Aa" and "BB" collide) land in one bucket whatever the
// table, so they end in a tree ordered by compareTo with its root first.
func TestJavaHashMapOrderTreeBins(t *testing.T) {
	var keys []string
	for _, a := range []string{"Aa", "BB"} {
		for _, b := range []string{"Aa", "BB"} {
			for _, c := range []string{"Aa", "BB"} {
				for _, d := range []string{"Aa", "BB"} {
					keys = append(keys, a+b+c+d)
				}
			}
		}
	}
	// From the oracle golden: new HashMap<>() with these keys in this order.
	want := []string{"AaAaBBBB", "AaAaAaAa", "AaAaAaBB", "AaAaBBAa", "AaBBAaAa", "AaBBAaBB", "AaBBBBAa", "AaBBBBBB",
		"BBAaAaAa", "BBAaAaBB", "BBAaBBAa", "BBAaBBBB", "BBBBAaAa", "BBBBAaBB", "BBBBBBAa", "BBBBBBBB"}
	require.Equal(t, want, mapKeys(JavaHashMapOrder(keysMap(keys...))))
	// With a table of 64 from the start the ninth key already treeifies; jshell (OpenJDK
	// 17.0.15) prints the same order for new HashMap<>(64).
	require.Equal(t, want, mapKeys(JavaHashMapOrderCap(keysMap(keys...), 64)))
	// new HashMap<>(3) grows 4, 8, 16, then treeifyBin resizes to 32 and 64 (jshell output).
	collide := []string{"k0", "k70", "k81", "k92", "k719", "k609", "k818", "k708", "k917", "k807", "k1", "k2"}
	require.Equal(t, []string{"k70", "k92", "k609", "k708", "k807", "k0", "k81", "k719", "k818", "k917", "k1", "k2"},
		mapKeys(JavaHashMapOrderCap(keysMap(collide...), 3)))
	// A huge initial capacity must not allocate a huge table.
	require.Len(t, JavaHashMapOrderCap(keysMap(keys...), 1<<30), len(keys))
}

func TestJavaHashMapOrderReturnsMapInOrder(t *testing.T) {
	mm2 := JavaHashMapOrder(jsonvalue.Map{{Key: "topic", Value: "t"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "cluster", Value: "A"}})
	nestedOut := jsonvalue.Map{{Key: "o", Value: []any{jsonvalue.Number("1"), jsonvalue.Map{{Key: "topic", Value: "t"}, {Key: "cluster", Value: "A"}, {Key: "partition", Value: jsonvalue.Number("0")}}}}}
	tests := []struct {
		name string
		m    jsonvalue.Map
		same bool
	}{
		{name: "one key", m: jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("5")}}, same: true},
		{name: "empty", m: jsonvalue.Map{}, same: true},
		{name: "already in order", m: mm2, same: true},
		{name: "nested already in order", m: jsonvalue.Map{{Key: "a", Value: []any{jsonvalue.Number("1"), mm2}}, {Key: "b", Value: mm2}}, same: true},
		{name: "repeated key", m: jsonvalue.Map{{Key: "a", Value: jsonvalue.Number("1")}, {Key: "a", Value: jsonvalue.Number("2")}}, same: false},
		{name: "nested out of order", m: nestedOut, same: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.m)
			got := JavaHashMapOrder(tt.m)
			require.Equal(t, before, fmt.Sprint(tt.m), "m was modified")
			if tt.same {
				require.True(t, len(got) == 0 || &got[0] == &tt.m[0], "expected m itself, got a copy")
				return
			}
			require.False(t, len(got) > 0 && &got[0] == &tt.m[0], "expected a copy, got m itself")
		})
	}
	require.Equal(t, jsonvalue.Map{{Key: "o", Value: []any{jsonvalue.Number("1"), mm2}}}, JavaHashMapOrder(nestedOut))
}

func BenchmarkJavaHashMapOrderInOrder(b *testing.B) {
	m := JavaHashMapOrder(jsonvalue.Map{{Key: "topic", Value: "orders"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "cluster", Value: "A"}})
	o := jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("42")}}
	b.ReportAllocs()
	for b.Loop() {
		_ = JavaHashMapOrder(m)
		_ = JavaHashMapOrder(o)
	}
}

// JavaHashMapOrderInto orders as JavaHashMapOrder, building small maps in the scratch array it
// is given, which the next call may reuse.
func TestJavaHashMapOrderInto(t *testing.T) {
	maps := []jsonvalue.Map{
		keysMap("cluster", "topic", "partition"),
		keysMap("b", "a"),
		keysMap("a", "b", "a"), // repeated key: first position, last value
		keysMap("offset"),
		keysMap("k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17"),
		nil,
	}
	var scratch [4]jsonvalue.Field
	for _, m := range maps {
		want := JavaHashMapOrder(m)
		got := JavaHashMapOrderInto(scratch[:0], m)
		require.Equal(t, want, got)
	}
}
