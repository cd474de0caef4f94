package kafkaio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	ksnappy "github.com/klauspost/compress/snappy"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/compress/snappy"
	"github.com/stretchr/testify/require"
)

// snappyByCodec inflates src as kafka-go's snappy reader does (what inflateCounted reads).
func snappyByCodec(src []byte) ([]byte, error) {
	r := compress.Snappy.Codec().NewReader(bytes.NewReader(src))
	defer r.Close()
	return io.ReadAll(r)
}

// jsonish is n bytes of text like a bulk request's offsets (compressible, not uniform).
func jsonish(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, `{"partition":{"server":"srv","database":"db%06d"},"offset":{"commit_lsn":"%08x:%08x:%04x","event_serial_no":%d}},`,
			rng.IntN(1_000_000), rng.Uint32(), rng.Uint32(), rng.IntN(1<<16), rng.IntN(10))
	}
	return b.Bytes()[:n]
}

func snappyCompress(t testing.TB, data []byte, c *snappy.Codec) []byte {
	var out bytes.Buffer
	w := c.NewWriter(&out)
	_, err := w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// inflateSnappy reads every snappy stream kafka-go's reader reads, to the same bytes: framed
// (one chunk and many) and unframed, of every compression level, empty or not.
func TestInflateSnappyMatchesCodec(t *testing.T) {
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	inputs := map[string][]byte{
		"empty": {}, "one byte": {'x'}, "small": []byte(`{"offset":1}`),
		"32 KiB": jsonish(32<<10, 1), "a chunk and a byte": jsonish(32<<10+1, 2),
		"3 MiB": jsonish(3<<20, 3), "random": random,
	}
	codecs := map[string]*snappy.Codec{
		"framed":           {},
		"framed, faster":   {Compression: snappy.FasterCompression},
		"framed, best":     {Compression: snappy.BestCompression},
		"unframed":         {Framing: snappy.Unframed},
		"unframed, faster": {Framing: snappy.Unframed, Compression: snappy.FasterCompression},
	}
	for in, data := range inputs {
		for cn, c := range codecs {
			t.Run(in+"/"+cn, func(t *testing.T) {
				src := snappyCompress(t, data, c)
				want, err := snappyByCodec(src)
				require.NoError(t, err)
				require.Equal(t, len(data), len(want))
				got, ok, err := inflateSnappy(src, 0)
				require.True(t, ok, "inflated in one pass")
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "inflated bytes differ")
				got, err = inflateOwn(compress.Snappy, src, int64(len(data)))
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "inflated bytes differ at the limit")
				if len(data) > 1 { // a limit of 0 is none
					_, err = inflateOwn(compress.Snappy, src, int64(len(data)-1))
					require.ErrorIs(t, err, errInflateLimit)
				}
			})
		}
	}
}

// Corrupt snappy data fails to inflate where kafka-go's reader fails, and inflates to the same
// bytes where it does not: streams cut anywhere, bytes flipped, headers alone.
func TestInflateSnappyCorruptMatchesCodec(t *testing.T) {
	data := jsonish(100_000, 4)
	for _, c := range []*snappy.Codec{{}, {Framing: snappy.Unframed}} {
		src := snappyCompress(t, data, c)
		var cases [][]byte
		for _, n := range []int{1, 4, 7, 8, 9, 15, 16, 17, 19, 20, 21, 100, len(src) / 2, len(src) - 1} {
			cases = append(cases, src[:n])
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for range 200 {
			b := bytes.Clone(src)
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			cases = append(cases, b)
		}
		cases = append(cases, append(bytes.Clone(src), 0, 0), append(bytes.Clone(xerialMagic[:]), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0))
		for i, b := range cases {
			want, werr := snappyByCodec(b)
			got, gerr := inflateOwn(compress.Snappy, b, 0)
			if werr != nil {
				require.Error(t, gerr, "case %d: kafka-go's reader fails (%v)", i, werr)
				require.ErrorIs(t, gerr, errCorruptBatch, "case %d", i)
				continue
			}
			require.NoError(t, gerr, "case %d", i)
			require.True(t, bytes.Equal(want, got), "case %d: inflated bytes differ", i)
		}
	}
}

func FuzzInflateSnappy(f *testing.F) {
	f.Add(snappyCompress(f, jsonish(1000, 7), &snappy.Codec{}))
	f.Add(snappyCompress(f, jsonish(40_000, 8), &snappy.Codec{}))
	f.Add(snappyCompress(f, jsonish(1000, 9), &snappy.Codec{Framing: snappy.Unframed}))
	f.Fuzz(func(t *testing.T, src []byte) {
		if claimsHuge(src) {
			return // kafka-go's reader allocates what a chunk's length claims, before reading it
		}
		want, werr := snappyByCodec(src)
		got, gerr := inflateOwn(compress.Snappy, src, 0)
		if werr != nil {
			require.Error(t, gerr)
			return
		}
		require.NoError(t, gerr)
		require.True(t, bytes.Equal(want, got))
	})
}

// BenchmarkInflateOwn inflates a large request's snappy data (16 MB of JSON, as the bulk
// scenario's Debezium SQL Server request) into a buffer of its exact size: "counted" reads
// the data twice through kafka-go's reader (each chunk inflated into its buffer and copied),
// "blocks" sizes the buffer from the blocks' headers and inflates each in place.
func BenchmarkInflateOwn(b *testing.B) {
	data := jsonish(16_000_000, 10)
	src := snappyCompress(b, data, &snappy.Codec{})
	for _, bc := range []struct {
		name    string
		inflate func([]byte, int64) ([]byte, error)
	}{
		{"counted", func(src []byte, limit int64) ([]byte, error) { return inflateCounted(compress.Snappy, src, limit) }},
		{"blocks", func(src []byte, limit int64) ([]byte, error) {
			out, _, err := inflateSnappy(src, limit)
			return out, err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := bc.inflate(src, 32<<20)
				if err != nil || len(out) != len(data) {
					b.Fatalf("inflate: %v", err)
				}
			}
		})
	}
}

// claimsHuge reports whether src, read as xerial-framed snappy, has a chunk length beyond the
// data or a block claiming more than 64 MiB.
func claimsHuge(src []byte) bool {
	if len(src) < 16 || !bytes.Equal(src[:8], xerialMagic[:]) {
		n, err := ksnappy.DecodedLen(src)
		return err == nil && n > 64<<20
	}
	for rest := src[16:]; len(rest) >= 4; {
		n := int(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if n > len(rest) {
			return len(rest) > 0
		}
		if d, err := ksnappy.DecodedLen(rest[:n]); err == nil && d > 64<<20 {
			return true
		}
		rest = rest[n:]
	}
	return false
}
