package handlers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

func TestRepeatedHash(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 7))
	distinct := func(n int) []uint64 {
		seen := make(map[uint64]bool, n)
		out := make([]uint64, 0, n)
		for len(out) < n {
			if h := r.Uint64(); !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
		return out
	}
	withRepeat := func(hs []uint64, from, to int) []uint64 {
		hs = slices.Clone(hs)
		hs[to] = hs[from]
		return hs
	}
	big := distinct(100_000)
	// Hashes that share their top bits crowd one bucket (sorted rather than compared pairwise).
	crowded := make([]uint64, 5000)
	for i := range crowded {
		crowded[i] = uint64(i) * 7919
	}
	tests := []struct {
		name   string
		hashes []uint64
		want   bool
	}{
		{name: "none", hashes: nil},
		{name: "one", hashes: []uint64{42}},
		{name: "two equal", hashes: []uint64{42, 42}, want: true},
		{name: "small distinct", hashes: distinct(63)},
		{name: "small repeat", hashes: withRepeat(distinct(63), 3, 60), want: true},
		{name: "at the threshold", hashes: withRepeat(distinct(64), 0, 63), want: true},
		{name: "large distinct", hashes: big},
		{name: "large, first and last", hashes: withRepeat(big, 0, len(big)-1), want: true},
		{name: "large, neighbours", hashes: withRepeat(big, 50_000, 50_001), want: true},
		{name: "zero and all ones", hashes: append(distinct(1000), 0, ^uint64(0), 0), want: true},
		{name: "all ones twice", hashes: append(distinct(1000), ^uint64(0), ^uint64(0)), want: true},
		{name: "crowded bucket distinct", hashes: crowded},
		{name: "crowded bucket repeat", hashes: withRepeat(crowded, 17, 4000), want: true},
		{name: "crowded small bucket repeat", hashes: withRepeat(append(distinct(1000), 1, 2, 3, 4, 5), 1001, 1004), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.hashes)
			require.Equal(t, tt.want, repeatedHash(tt.hashes))
			require.Equal(t, before, tt.hashes, "the hashes were changed")
			// In parts (a repeat may lie in two of them), empty ones included.
			n := len(tt.hashes)
			for _, cuts := range [][2]int{{0, 0}, {0, n}, {n / 3, 2 * n / 3}, {1, n - 1}, {n / 2, n / 2}} {
				a := min(cuts[0], n)
				b := min(max(cuts[1], a), n)
				require.Equal(t, tt.want, repeatedHash(tt.hashes[:a], tt.hashes[a:b], tt.hashes[b:]), "cut at %v", cuts)
			}
			sorted := slices.Clone(tt.hashes)
			slices.Sort(sorted)
			require.Equal(t, sortedRepeat(sorted), tt.want, "the sort's answer")
		})
	}
}

// A partition given twice, wherever the two entries fall (one range, two ranges, at a range's
// edge), makes the single pass give up, and the text's entry point then answers as the general
// path does: the later entry wins.
func TestRawSourceRepeatedPartitionAnywhere(t *testing.T) {
	class, _ := connectors.Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	props := map[string]string{"connector.class": class.Name, "name": "c"}
	const n = 9
	for i := range n {
		for j := i + 1; j < n; j++ {
			var b bytes.Buffer
			b.WriteString("[")
			for k := range n {
				if k > 0 {
					b.WriteString(",")
				}
				p := k
				if k == j {
					p = i
				}
				fmt.Fprintf(&b, `{"partition":{"cluster":"c","topic":"t","partition":%d},"offset":{"offset":%d}}`, p, 10+k)
			}
			b.WriteString("]")
			raw := b.Bytes()
			entries, err := events.ParseOffsets(raw)
			require.NoError(t, err)
			want, err := sourceRecords("c", class, props, entries)
			require.NoError(t, err)
			require.Len(t, want, n-1)
			for _, parts := range []int{1, 2, 3, 4, n} {
				_, ok := rawSourceRecords("c", class, props, raw, rawRanges(1, parts))
				require.False(t, ok, "entries %d and %d, %d ranges: records", i, j, parts)
				_, ok = rawSourceBatches("c", class, props, raw, rawRanges(1, parts), 3)
				require.False(t, ok, "entries %d and %d, %d ranges: batches", i, j, parts)
			}
			for _, partitions := range []int{0, 3} {
				requireSameFromText(t, want, nil, class, props, raw, partitions)
			}
		}
	}
}
