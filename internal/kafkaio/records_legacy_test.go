package kafkaio

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/stretchr/testify/require"
)

// legacyBytesOf encodes one magic 0/1 message at offset as the formats before record batches
// laid it out (the test's own encoder, from the format's description, not the decoder's code).
func legacyBytesOf(offset int64, magic, attrs byte, ts int64, key, value []byte) []byte {
	var body []byte
	body = append(body, magic, attrs)
	if magic == 1 {
		body = binary.BigEndian.AppendUint64(body, uint64(ts))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			body = binary.BigEndian.AppendUint32(body, 0xffffffff)
			continue
		}
		body = binary.BigEndian.AppendUint32(body, uint32(len(b)))
		body = append(body, b...)
	}
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := compress.Gzip.Codec().NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// A partition that still holds messages of magic 0 and 1 (plain, and gzip-wrapped with
// relative and absolute inner offsets) before its record batches reads as one log: every
// record at its offset, nulls kept, timestamps of magic 1, then the batches after them.
func TestRecordReaderLegacyMessages(t *testing.T) {
	at := time.UnixMilli(1_600_000_000_000)
	var data []byte
	data = append(data, legacyBytesOf(0, 0, 0, 0, []byte("k0"), []byte("v0"))...)
	data = append(data, legacyBytesOf(1, 1, 0, at.UnixMilli(), []byte("k1"), nil)...)
	// magic 1 wrapper: inner offsets 0..2 relative, the wrapper holds the last's absolute (4).
	var set1 []byte
	for i, k := range []string{"k2", "k3", "k4"} {
		set1 = append(set1, legacyBytesOf(int64(i), 1, 0, at.UnixMilli()+int64(i), []byte(k), []byte("v"))...)
	}
	data = append(data, legacyBytesOf(4, 1, byte(compress.Gzip), at.UnixMilli()+2, nil, gzipped(t, set1))...)
	// magic 0 wrapper: inner offsets absolute.
	var set0 []byte
	for i, k := range []string{"k5", "k6"} {
		set0 = append(set0, legacyBytesOf(int64(5+i), 0, 0, 0, []byte(k), []byte{})...)
	}
	data = append(data, legacyBytesOf(6, 0, byte(compress.Gzip), 0, nil, gzipped(t, set0))...)
	data = append(data, kafkaGoBatch(t, 7, 0, testRecord{at: at, key: []byte("k7"), value: []byte("v7")})...)

	want := []kafka.Message{
		{Topic: "t", Partition: 3, Offset: 0, Key: []byte("k0"), Value: []byte("v0")},
		{Topic: "t", Partition: 3, Offset: 1, Key: []byte("k1"), Time: at},
		{Topic: "t", Partition: 3, Offset: 2, Key: []byte("k2"), Value: []byte("v"), Time: at},
		{Topic: "t", Partition: 3, Offset: 3, Key: []byte("k3"), Value: []byte("v"), Time: at.Add(time.Millisecond)},
		{Topic: "t", Partition: 3, Offset: 4, Key: []byte("k4"), Value: []byte("v"), Time: at.Add(2 * time.Millisecond)},
		{Topic: "t", Partition: 3, Offset: 5, Key: []byte("k5"), Value: []byte{}},
		{Topic: "t", Partition: 3, Offset: 6, Key: []byte("k6"), Value: []byte{}},
		{Topic: "t", Partition: 3, Offset: 7, Key: []byte("k7"), Value: []byte("v7"), Time: at},
	}
	for _, borrow := range []bool{false, true} {
		for _, from := range []int64{0, 3, 6} {
			got, next, err := collect(&recordReader{borrow: borrow}, data, from)
			require.NoError(t, err)
			require.Equal(t, want[from:], got, "borrow=%v from %d", borrow, from)
			require.Equal(t, int64(8), next)
		}
	}

	// With readMax, each read stops before the first message or batch beyond it (the first is
	// always read); reading on from where it stopped gives every record once.
	for _, readMax := range []int64{1, 60} {
		var got []kafka.Message
		reads := 0
		for from := int64(0); from < 8; reads++ {
			out, next, err := collect(&recordReader{readMax: readMax}, data, from)
			require.NoError(t, err)
			require.Greater(t, next, from)
			got, from = append(got, out...), next
		}
		require.Equal(t, want, got, "readMax %d", readMax)
		require.Greater(t, reads, 2, "readMax %d", readMax)
	}

	// With inflateMax, a wrapper that inflates beyond it is not read: each offset it holds
	// from the read's start is a message that TooLarge recognises, and the read goes on
	// after it (as for a record batch).
	for _, from := range []int64{0, 3} {
		got, next, err := collect(&recordReader{inflateMax: int64(len(set1)) - 1}, data, from)
		require.NoError(t, err)
		require.Equal(t, int64(8), next)
		var tooLarge []int64
		for _, m := range got {
			if TooLarge(&m) {
				tooLarge = append(tooLarge, m.Offset)
			}
		}
		require.Equal(t, []int64{2, 3, 4}[max(from-2, 0):], tooLarge, "from %d", from)
		require.Equal(t, want[len(want)-1], got[len(got)-1])
	}

	// A flipped byte fails the message's CRC.
	bad := bytes.Clone(data)
	bad[29] ^= 1 // the first message's value
	_, _, err := collect(&recordReader{}, bad, 0)
	require.ErrorContains(t, err, "CRC mismatch")
}
