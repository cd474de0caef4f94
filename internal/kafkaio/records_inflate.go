package kafkaio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// Compressed record batches: inflating them within the reader's limits, and the messages that
// stand for the records of a batch not inflated.

// inflateLimit is what the next compressed batch may inflate to (0: no limit): inflateMax,
// or, with readMax and a batch already taken, what is left of readMax if that is less (room
// is then true: a batch beyond it is not too large, only too large for this read). With room
// and a limit of 0 nothing is left: the batch is not to be inflated at all.
func (rr *recordReader) inflateLimit() (limit int64, room bool) {
	if rr.readMax == 0 || rr.taken == 0 {
		return rr.inflateMax, false
	}
	left := max(rr.readMax-rr.taken, 0)
	if rr.inflateMax > 0 && rr.inflateMax <= left {
		return rr.inflateMax, false
	}
	return left, true
}

// take counts n record bytes against readMax and reports whether they fit (the first batch of a
// read always does).
func (rr *recordReader) take(n int64) bool {
	if rr.readMax > 0 && rr.taken > 0 && rr.taken+n > rr.readMax {
		return false
	}
	rr.taken += n
	return true
}

// errReadFull says that read stops before a batch: it does not fit what is left of readMax.
var errReadFull = errors.New("read records: the batch does not fit the read's bound")

// inflate decompresses a batch's records into rr's buffer, up to limit bytes (0: no limit).
func (rr *recordReader) inflate(codec compress.Compression, src []byte, limit int64) ([]byte, error) {
	c := codec.Codec()
	if c == nil {
		return nil, fmt.Errorf("%w: unknown compression %d", errCorruptBatch, codec)
	}
	r := c.NewReader(bytes.NewReader(src))
	defer r.Close()
	rr.inflated.Reset()
	var in io.Reader = r
	if limit > 0 {
		in = io.LimitReader(r, limit+1)
	}
	if _, err := rr.inflated.ReadFrom(in); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorruptBatch, codec, err)
	}
	if limit > 0 && int64(rr.inflated.Len()) > limit {
		if rr.inflated.Cap() > 4<<20 {
			rr.inflated = bytes.Buffer{} // not kept for the next batch
		}
		return nil, errInflateLimit
	}
	return rr.inflated.Bytes(), nil
}

// errInflateLimit says that a compressed batch inflates beyond the reader's inflateMax.
var errInflateLimit = errors.New("compressed record batch inflates beyond the limit")

// maxTooLarge bounds the messages a batch not inflated stands for (its offsets come from the
// batch header; a broker assigns them, one per record).
const maxTooLarge = 1 << 20

// TooLargeHeader is the header of the messages FetchPartition returns, with no key and no
// value, for the records of a compressed batch that inflates beyond its inflateMax.
const TooLargeHeader = "offsetagent.inflate-limit"

var tooLargeHeaders = []kafka.Header{{Key: TooLargeHeader}}

// TooLarge reports whether m stands for a record FetchPartition did not read because its
// compressed batch inflates beyond the limit it was given.
func TooLarge(m *kafka.Message) bool {
	return m.Key == nil && m.Value == nil && len(m.Headers) == 1 && m.Headers[0].Key == TooLargeHeader
}

// inflateOwnMin is the least compressed size of a one-record batch that FetchPartition inflates
// into a buffer of the record's own.
const inflateOwnMin = 8 << 10

// inflateExactMin is the least compressed size of a batch of several records that a bounded
// read (readMax) inflates with inflateOwn: reading the data twice costs less than a buffer
// grown by doubling only for batches of large records.
const inflateExactMin = 256 << 10

// inflateOwn decompresses a batch's records into a new buffer of their exact size, so that a
// record of many MiB is neither copied out of the reader's buffer nor left in a buffer grown
// by doubling (garbage of twice its size). Snappy's blocks each state their inflated size, so
// the buffer is sized from them and each block inflated into its place, in one pass
// (inflateSnappy); the other codecs' data is read twice, once to count the bytes. With limit >
// 0, a batch that inflates beyond it is not inflated (errInflateLimit).
func inflateOwn(codec compress.Compression, src []byte, limit int64) ([]byte, error) {
	if codec == compress.Snappy {
		if out, ok, err := inflateSnappy(src, limit); ok {
			return out, err
		}
	}
	return inflateCounted(codec, src, limit)
}

// inflateCounted is inflateOwn for any codec: the data is inflated once to count its bytes,
// then again into a buffer of that size.
func inflateCounted(codec compress.Compression, src []byte, limit int64) ([]byte, error) {
	c := codec.Codec()
	if c == nil {
		return nil, fmt.Errorf("%w: unknown compression %d", errCorruptBatch, codec)
	}
	r := c.NewReader(bytes.NewReader(src))
	var in io.Reader = r
	if limit > 0 {
		in = io.LimitReader(r, limit+1)
	}
	n, err := io.Copy(io.Discard, in)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorruptBatch, codec, err)
	}
	if limit > 0 && n > limit {
		return nil, errInflateLimit
	}
	buf := make([]byte, n)
	r = c.NewReader(bytes.NewReader(src))
	defer r.Close()
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorruptBatch, codec, err)
	}
	return buf, nil
}

// A snappy-compressed batch (kafka-go's and Kafka's Java clients' codec) is either xerial
// framed (a 16-byte header whose first 8 bytes are xerialMagic, then chunks of a big-endian
// int32 length and one snappy block each) or, without that magic, one snappy block. Each
// block starts with its inflated length (a uvarint), which snappy.DecodedLen reads. This is
// how kafka-go's reader (compress/snappy) takes the data, which
// TestInflateSnappyMatchesCodec holds it to.
var xerialMagic = [...]byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// snappyBlocks returns the snappy blocks of src and their inflated size in all, read from the
// framing and the blocks' headers without inflating anything. It stops counting once the
// size passes limit (> 0): the batch is then too large whatever the rest holds.
func snappyBlocks(src []byte, limit int64) (blocks [][]byte, total int64, err error) {
	add := func(block []byte) error {
		n, err := snappy.DecodedLen(block)
		if err != nil {
			return err
		}
		blocks = append(blocks, block)
		total += int64(n)
		return nil
	}
	if len(src) == 0 {
		return nil, 0, nil
	}
	// kafka-go reads the header into 16 zeroed bytes: data cut short of them is framed when
	// what it has of the magic matches (its last byte is a zero), and then holds no chunk.
	var head [16]byte
	copy(head[:], src)
	if !bytes.Equal(head[:8], xerialMagic[:]) {
		return blocks, total, add(src)
	}
	rest := src[min(16, len(src)):]
	for len(rest) > 0 && (limit <= 0 || total <= limit) {
		if len(rest) < 4 {
			return nil, 0, io.ErrUnexpectedEOF
		}
		n := int(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if len(rest) == 0 && n > 0 {
			break // kafka-go's reader finds nothing to read of the chunk: the stream's end
		}
		if n > len(rest) {
			return nil, 0, io.ErrUnexpectedEOF
		}
		if err := add(rest[:n]); err != nil {
			return nil, 0, err
		}
		rest = rest[n:]
	}
	return blocks, total, nil
}

// snappyMaxExpansion bounds the inflated size inflateSnappy allocates for, per compressed
// byte: a snappy copy of at most 64 bytes takes at least 2 bytes of data. Blocks whose headers
// claim more (corrupt data, or an extension of the format) are left to inflateCounted, which
// counts what they really inflate to.
const snappyMaxExpansion = 32

// inflateSnappy is inflateOwn for snappy: one buffer of the exact size, each block inflated
// straight into its place. ok is false when it leaves src to inflateCounted.
func inflateSnappy(src []byte, limit int64) (_ []byte, ok bool, _ error) {
	blocks, total, err := snappyBlocks(src, limit)
	if err != nil {
		return nil, true, fmt.Errorf("%w: snappy: %w", errCorruptBatch, err)
	}
	if limit > 0 && total > limit {
		return nil, true, errInflateLimit
	}
	if total > snappyMaxExpansion*int64(len(src)) {
		return nil, false, nil
	}
	buf := make([]byte, total)
	at := 0
	for _, block := range blocks {
		n, _ := snappy.DecodedLen(block) // read before, without error
		out, err := snappy.Decode(buf[at:at+n], block)
		if err != nil {
			return nil, true, fmt.Errorf("%w: snappy: %w", errCorruptBatch, err)
		}
		if len(out) != n {
			return nil, true, fmt.Errorf("%w: snappy: a block inflates to %d bytes, its header says %d", errCorruptBatch, len(out), n)
		}
		at += n
	}
	return buf, true, nil
}
