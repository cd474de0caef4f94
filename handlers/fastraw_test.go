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
			body := f.request(r, 3000, false)
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
