package kafkaio

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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

// inflateOwn decompresses a batch's records into a new buffer of their exact size: it reads
// the data twice, once to count the bytes, so that a record of many MiB is neither copied out
// of the reader's buffer nor left in a buffer grown by doubling (garbage of twice its size).
// With limit > 0, a batch that inflates beyond it is not inflated (errInflateLimit).
func inflateOwn(codec compress.Compression, src []byte, limit int64) ([]byte, error) {
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
