package offsetstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMurmur2SpecVectors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  int32
	}{
		// clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
		{name: "21", input: "21", want: -973932308},
		{name: "foobar", input: "foobar", want: -790332482},
		{name: "a-little-bit-long-string", input: "a-little-bit-long-string", want: -985981536},
		{name: "a-little-bit-longer-string", input: "a-little-bit-longer-string", want: -1486304829},
		{name: "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", input: "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", want: -58897971},
		{name: "abc", input: "abc", want: 479470107},
		// docs/connect-internals.md, "Partitioning"
		{name: "file source key", input: `["file-src-1",{"filename":"test.txt"}]`, want: -2121180496},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Murmur2([]byte(tt.input)))
		})
	}
}

func TestMurmur2PartitionFor(t *testing.T) {
	tests := []struct {
		name       string
		key        string
		partitions int
		want       int
	}{
		{name: "file source key", key: `["file-src-1",{"filename":"test.txt"}]`, partitions: 25, want: 2},
		{name: "mm2 source key", key: `["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`, partitions: 25, want: 19},
		// murmur2("21") is negative: toPositive masks the sign bit instead of negating.
		{name: "negative hash", key: "21", partitions: 25, want: int((uint32(0x100000000-973932308) & 0x7fffffff) % 25)},
		{name: "single partition", key: "anything", partitions: 1, want: 0},
		{name: "zero partitions does not panic", key: "x", partitions: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, PartitionFor([]byte(tt.key), tt.partitions))
		})
	}
}

func BenchmarkMurmur2(b *testing.B) {
	key := []byte(`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`)
	b.SetBytes(int64(len(key)))
	b.ReportAllocs()
	for b.Loop() {
		Murmur2(key)
	}
}
