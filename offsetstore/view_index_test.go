package offsetstore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// Entries of equal high hash bits, runs that wrap around the table's end and deletions in
// the middle of a run: every key stays findable, and a removed one is gone.
func TestKeyIndexProbeRuns(t *testing.T) {
	last := uint64(1<<minIndexBits-1) << (64 - minIndexBits) // home: the table's last entry
	tests := []struct {
		name   string
		hashes []uint64
		remove []int // indexes into hashes, in order
	}{
		{name: "equal hashes", hashes: []uint64{42, 42, 42, 42}, remove: []int{1, 0, 3}},
		{name: "run wraps around the end", hashes: []uint64{last, last, last | 1, 1, last}, remove: []int{0, 3, 4}},
		{name: "neighbours of different homes", hashes: []uint64{0, 0, 1 << 54, 1 << 54, 2 << 54, 0}, remove: []int{0, 2, 5, 1}},
		{name: "remove everything", hashes: []uint64{7, 7, last, 1 << 60}, remove: []int{3, 2, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x keyIndex
			live := map[int32]bool{}
			find := func(k int) bool {
				_, found := x.probe(tt.hashes[k], func(slot int32) bool { return slot == int32(k) })
				return found
			}
			for k, h := range tt.hashes {
				pos, found := x.probe(h, func(slot int32) bool { return slot == int32(k) })
				require.False(t, found)
				x.insertAt(pos, h, int32(k))
				live[int32(k)] = true
			}
			for _, k := range tt.remove {
				pos, found := x.probe(tt.hashes[k], func(slot int32) bool { return slot == int32(k) })
				require.True(t, found, k)
				x.deleteAt(pos)
				delete(live, int32(k))
				for j := range tt.hashes {
					require.Equal(t, live[int32(j)], find(j), "key %d after removing %d", j, k)
				}
			}
			require.Equal(t, len(live), x.count)
		})
	}
}

// The view against a map of the latest value per key, through overwrites, tombstones,
// re-added keys, unindexed keys, table growth and compactions.
func TestOffsetsViewMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := newOffsetsView()
	v.expect(3000) // the table is sized once
	require.Len(t, v.index.entries, 4096)
	type rec struct {
		value     string
		partition int
	}
	model := map[string]rec{}
	keyOf := func(i int) string {
		if i%50 == 0 {
			return fmt.Sprintf("unindexed-%d", i)
		}
		return fmt.Sprintf(`["conn-%d",{"k":%d}]`, i%17, i)
	}
	for round := range 40 {
		msgs := make([]kafka.Message, 500)
		for i := range msgs {
			k := keyOf(rng.IntN(3000))
			m := kafka.Message{Key: []byte(k), Partition: rng.IntN(25)}
			if rng.IntN(3) == 0 && round%2 == 1 || round >= 30 {
				// Tombstones every other round, then only tombstones: removed slots pile up.
				delete(model, k)
			} else {
				val := fmt.Sprintf(`{"o":%d}`, rng.IntN(1000))
				m.Value = []byte(val)
				model[k] = rec{value: val, partition: m.Partition}
			}
			msgs[i] = m
		}
		v.apply(msgs)

		others := 0
		for c := range 17 {
			conn := fmt.Sprintf("conn-%d", c)
			var want []SourceRecord
			for k, r := range model {
				if name, ok := keyConnector([]byte(k)); ok && name == conn {
					want = append(want, SourceRecord{Key: []byte(k), Value: []byte(r.value), Partition: r.partition})
				}
			}
			slices.SortFunc(want, func(a, b SourceRecord) int {
				return cmp.Or(cmp.Compare(a.Partition, b.Partition), slices.Compare(a.Key, b.Key))
			})
			got := v.records(conn)
			if len(want) == 0 {
				require.Empty(t, got, "round %d %s", round, conn)
			} else {
				require.Equal(t, want, got, "round %d %s", round, conn)
			}
			keys, o := v.live(conn)
			require.Equal(t, len(want), keys)
			others = o
		}
		wantOthers := 0
		for k := range model {
			if _, ok := keyConnector([]byte(k)); !ok {
				wantOthers++
			}
		}
		require.Equal(t, wantOthers, others, "round %d", round)
		require.Equal(t, len(model), v.index.count, "round %d", round)
		if round < 30 {
			require.Len(t, v.index.entries, 4096, "round %d: at most 3,000 keys fit", round)
		}
	}
	v.expect(1 << 40) // a topic of far more records than keys: the table stays bounded
	require.Len(t, v.index.entries, 1<<21)
	require.LessOrEqual(t, v.dead, max(1024, v.slots.n/2))
	require.Less(t, v.slots.n, 3000, "removed slots were compacted away")
}

// Connectors whose names share a bucket of recent (thousands of them, of lengths around what
// a bucket holds, sharing their first and last bytes and length), or are empty or escaped,
// each get exactly their own keys, however their records interleave.
func TestOffsetsViewConnectorNames(t *testing.T) {
	var names []string
	for i := range 3000 {
		names = append(names, fmt.Sprintf("%s%04d%s", strings.Repeat("p", i%40), i, strings.Repeat("s", i%9)))
	}
	for n := 20; n <= 34; n++ {
		names = append(names, strings.Repeat("x", n), strings.Repeat("x", n-1)+"y")
	}
	names = append(names, "", "a\"b", "0123456789abcdefghij0123456789",
		strings.Repeat("z", 254), strings.Repeat("z", 255), strings.Repeat("z", 256)) // a length of recentLong
	v := newOffsetsView()
	want := map[string]int{}
	for round := range 3 {
		var msgs []kafka.Message
		for i, name := range names {
			raw, err := json.Marshal(name)
			require.NoError(t, err)
			key := fmt.Sprintf(`[%s,{"k":%d}]`, raw, round*len(names)+i)
			msgs = append(msgs, kafka.Message{Key: []byte(key), Value: []byte(`{"o":1}`)})
			want[name]++
		}
		rand.New(rand.NewPCG(uint64(round), 9)).Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
		v.apply(msgs)
	}
	for _, name := range names {
		keys, others := v.live(name)
		require.Equal(t, want[name], keys, "%q", name)
		require.Zero(t, others)
		for _, r := range v.records(name) {
			got, ok := keyConnector(r.Key)
			require.True(t, ok)
			require.Equal(t, name, got)
		}
	}
	require.Len(t, v.conns, len(names)+1)
}
