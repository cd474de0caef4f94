package handlers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/race"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Valid requests of every family whose class judges entries one by one take the single pass
// over the text, in one range and in several, with the general path's records.
func TestRawSourceRecordsTakesValidRequests(t *testing.T) {
	reg := connectors.Builtin()
	for _, f := range fastFamilies() {
		class, _ := reg.Lookup(f.class)
		if class == nil || !class.PerEntry || f.config["database.names"] != "" || f.name == "filestream without file" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			props := familyProps(f)
			r := rand.New(rand.NewPCG(7, 18))
			body := f.request(r, race.Rounds(3000, 3), false)
			raw := body[bytes.IndexByte(body, '[') : len(body)-1]
			entries, err := events.ParseOffsets(raw)
			require.NoError(t, err)
			want, err := generalSourceRecords("c", class, props, entries)
			require.NoError(t, err)
			for _, parts := range []int{1, 2, 5} {
				got, ok := rawSourceRecords("c", class, props, raw, rawRanges(1, parts))
				require.True(t, ok, "%d ranges: the single pass gave up", parts)
				requireSameRecords(t, want, got)
				for _, partitions := range []int{1, 25} {
					enc, ok := rawSourceBatches("c", class, props, raw, rawRanges(1, parts), partitions)
					require.True(t, ok, "%d ranges, %d partitions: the single pass into batches gave up", parts, partitions)
					requireSameBatches(t, want, enc)
				}
			}
		})
	}
}

// FuzzRawSourceRecords feeds arbitrary text as a request's initial_offsets to the single pass:
// whenever the text is an array of entries (what the decoder's check lets through as
// RawOffsets), the single pass either gives up or gives the general path's records, and the
// text's entry point answers exactly as the general path does, records and errors alike; on any
// other text (what the decoder leaves unchecked and ReadAhead reads) the single pass gives up.
func FuzzRawSourceRecords(f *testing.F) {
	fams := fastFamilies()
	for i, fam := range fams {
		body := fam.request(rand.New(rand.NewPCG(uint64(i), 1)), 3, i%2 == 1)
		f.Add(uint8(i), body[bytes.IndexByte(body, '['):len(body)-1])
	}
	f.Add(uint8(0), []byte(`[{"offset":{"offset":1},"partition":{"cluster":"a","topic":"t","partition":0}} , {"partition":{"cluster":"a","topic":"t","partition":1},"offset":{"offset":2}}]`))
	f.Add(uint8(3), []byte(`[{"partition":{"filename":"a\"b"},"offset":{"position":1}},{"partition":{"filename":"\u00e9\ud83d\ude00"},"offset":{"position":2}}]`))
	f.Add(uint8(5), []byte(`[{"partition":{"server":"srv","database":"d"},"offset":{"commit_lsn":"0000002d:00000b48:0003","event_serial_no":1,"snapshot":true}}]`))
	for _, bad := range []string{
		`[{"partition":{"cluster":"a","topic":"t","partition":0},"offset":{"offset":1}}`,
		`[{"partition":{"cluster":"a","topic":"t","partition":0},"offset":{"offset":1}},]`,
		`[{"partition":{"cluster":"a","topic":"t","partition":0},"offset":{"offset":01}}]`,
		`[{"partition":{"cluster":"a","topic":"t","partition":0},"offset":{"offset":1}}],"x":[]`,
		`[{"partition":{"cluster":"a\q","topic":"t","partition":0},"offset":{"offset":1}}]`,
		`[{"partition":{"filename":"a"},"offset":{"position":1}}{"partition":{"filename":"b"},"offset":{"position":2}}]`,
		`[{"partition":{"server":"srv","database":"d"},"offset":{"commit_lsn":"NULL","event_serial_no":-}}]`,
	} {
		f.Add(uint8(0), []byte(bad))
		f.Add(uint8(3), []byte(bad))
		f.Add(uint8(5), []byte(bad))
	}
	reg := connectors.Builtin()
	f.Fuzz(func(t *testing.T, family uint8, raw []byte) {
		fam := fams[int(family)%len(fams)]
		class, _ := reg.Lookup(fam.class)
		props := familyProps(fam)
		entries, err := events.ParseOffsets(raw)
		if err != nil {
			// The decoder refuses such a request, but it may leave the text unchecked
			// (events.DecodeRequestDeferred, valid UTF-8 checked) for the single pass (ReadAhead),
			// which must then give up: the decoding is finished as DecodeRequest does it.
			if utf8.Valid(raw) {
				for _, parts := range []int{1, 3} {
					_, ok := rawSourceRecords("c", class, props, raw, rawRanges(1, parts))
					require.False(t, ok, "the single pass accepted %q, which is not an array of entries", raw)
				}
			}
			return
		}
		var want []offsetstore.Record
		var wantErr error
		if len(entries) == 0 {
			wantErr = badRequest(msgNoOffsets)
		} else {
			want, wantErr = sourceRecords("c", class, props, slices.Clone(entries))
		}
		for _, parts := range []int{1, 3} {
			if got, ok := rawSourceRecords("c", class, props, raw, rawRanges(1, parts)); ok {
				require.NoError(t, wantErr, "the single pass accepted %q, which the general path refuses", raw)
				requireSameRecords(t, want, got)
			}
		}
		for _, parts := range []int{1, 3} {
			if enc, ok := rawSourceBatches("c", class, props, raw, rawRanges(1, parts), 3); ok {
				require.NoError(t, wantErr, "the single pass into batches accepted %q, which the general path refuses", raw)
				requireSameBatches(t, want, enc)
			}
		}
		for _, partitions := range []int{0, 3} {
			requireSameFromText(t, want, wantErr, class, props, raw, partitions)
		}
	})
}

func familyProps(f fastFamily) map[string]string {
	props := map[string]string{"connector.class": f.class, "name": "c"}
	for k, v := range f.config {
		props[k] = v
	}
	return props
}

// Ranges whose entries are much shorter than the first outgrow their windows: the records
// are then copied into a slice of their own, still in order.
func TestRawSourceRecordsOutgrownWindows(t *testing.T) {
	class, _ := connectors.Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	props := map[string]string{"connector.class": class.Name}
	var b bytes.Buffer
	b.WriteString(`[{"partition":{"cluster":"` + string(bytes.Repeat([]byte("c"), 400)) + `","topic":"t","partition":0},"offset":{"offset":0}}`)
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&b, `,{"partition":{"cluster":"c","topic":"t","partition":%d},"offset":{"offset":%d}}`, i, i)
	}
	b.WriteString("]")
	entries, err := events.ParseOffsets(b.Bytes())
	require.NoError(t, err)
	want, err := generalSourceRecords("c", class, props, entries)
	require.NoError(t, err)
	for _, parts := range []int{1, 3} {
		got, ok := rawSourceRecords("c", class, props, b.Bytes(), rawRanges(1, parts))
		require.True(t, ok)
		requireSameRecords(t, want, got)
		// The batches' buffers are sized from the first entry too (too large here): the
		// records still land in order.
		enc, ok := rawSourceBatches("c", class, props, b.Bytes(), rawRanges(1, parts), 2)
		require.True(t, ok)
		requireSameBatches(t, want, enc)
	}
}

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
