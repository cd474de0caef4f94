package kafkaio

import (
	"encoding/binary"
	"time"
)

// A caller that produces many records in one pass (the agent's bulk offsets: 100,000 records
// of ~75 bytes) need not build a Record per record, keep its key and value in buffers of their
// own and have WriteEncoded copy them again into Produce requests: a BatchEncoder appends each
// record, as it is made, to its partition's record batch (the format batch.go writes), and
// WriteEncoded sends those batches as they are. The view of a Log that reads the topic takes
// them in from the same bytes (Log.WrittenBatch). Each record's bytes then live once, in its
// batch, from the encoding to the view's copy.

// Encoded is records encoded in record batches for a topic of Partitions() partitions, in
// order per partition. Its records are numbered partition by partition, batch by batch, in
// their write order (Records); a WriteError of WriteEncoded names them by those numbers. An
// Encoded never changes once built: a write may be retried with it, and several topics of the
// same partition count written with it.
type Encoded struct {
	partitions int
	batches    [][]encodedBatch // by partition
	records    int
}

// encodedBatch is one record set: the size prefix of a Produce request's record set, then one
// record batch of n records, the first of them the Encoded's record first.
type encodedBatch struct {
	buf   []byte
	n     int
	first int
}

// batch is the record batch without its size prefix (from baseOffset on).
func (b encodedBatch) batch() []byte { return b.buf[4:] }

// Partitions is the partition count the records were partitioned for.
func (e *Encoded) Partitions() int { return e.partitions }

// Len is the number of records.
func (e *Encoded) Len() int { return e.records }

// Batches is the number of record batches.
func (e *Encoded) Batches() int {
	n := 0
	for _, bs := range e.batches {
		n += len(bs)
	}
	return n
}

// PartitionList is the partitions that have records, ascending.
func (e *Encoded) PartitionList() []int32 {
	var ps []int32
	for p, bs := range e.batches {
		if len(bs) > 0 {
			ps = append(ps, int32(p))
		}
	}
	return ps
}

// Records decodes the records in their numbering order, with their partition; their Key and
// Value alias the batches (they must not be changed). It is for the uncommon uses of an
// Encoded (the keys of a cleanup, a topic of another partition count), not for the write.
func (e *Encoded) Records() []Record {
	out := make([]Record, 0, e.records)
	for p, bs := range e.batches {
		for _, b := range bs {
			data := b.batch()[batchHeaderSize:]
			var r rawRecord
			for range b.n {
				// The batches were encoded here: they decode.
				length, n := binary.Varint(data)
				_ = decodeRecord(data[n:n+int(length)], &r)
				data = data[n+int(length):]
				out = append(out, Record{Key: r.key, Value: r.value, Partition: p})
			}
		}
	}
	return out
}

// JoinEncoded returns the records of parts, all for one partition count, as one Encoded: per
// partition, the batches of parts[0], then those of parts[1], and so on. The batches are
// shared, not copied.
func JoinEncoded(parts ...*Encoded) *Encoded {
	if len(parts) == 0 {
		return &Encoded{}
	}
	out := &Encoded{partitions: parts[0].partitions, batches: make([][]encodedBatch, parts[0].partitions)}
	for p := range out.batches {
		n := 0
		for _, e := range parts {
			n += len(e.batches[p])
		}
		if n == 0 {
			continue
		}
		bs := make([]encodedBatch, 0, n)
		for _, e := range parts {
			for _, b := range e.batches[p] {
				b.first = out.records
				out.records += b.n
				bs = append(bs, b)
			}
		}
		out.batches[p] = bs
	}
	return out
}

// BatchEncoder appends records to record batches, per partition, for an Encoded. A batch
// closes at the limits of a Produce request's partition (batchRecords, batchBytes) or when its
// buffer is full: buffers are sized from the caller's estimate and never grown, so that a
// batch's bytes are written once and no buffer is left behind as garbage. A BatchEncoder is
// used by one goroutine; parallel encoders are joined with JoinEncoded.
type BatchEncoder struct {
	open    []batchBuilder
	done    [][]encodedBatch
	records int
	// perPartition is the bytes expected in each partition, left is what is still expected;
	// last is the capacity of each partition's last buffer.
	perPartition int
	left, last   []int
	now          int64
}

// NewBatchEncoder returns an encoder for a topic of partitions partitions that expects about
// bytes bytes of records (keys and values) in all: its buffers are sized from it.
func NewBatchEncoder(partitions, bytes int) *BatchEncoder {
	e := &BatchEncoder{
		open:         make([]batchBuilder, partitions),
		done:         make([][]encodedBatch, partitions),
		left:         make([]int, partitions),
		last:         make([]int, partitions),
		perPartition: bytes / max(partitions, 1),
		now:          time.Now().UnixMilli(),
	}
	for p := range e.left {
		e.left[p] = e.perPartition
	}
	return e
}

// encodedSlack is added to a partition's expected bytes: murmur2 spreads keys evenly, not
// exactly (a few percent at thousands of records per partition).
const encodedSlack = 2 << 10

// Append appends a record to partition p; key and value are copied. A nil value is a
// tombstone.
func (e *BatchEncoder) Append(p int, key, value []byte) {
	b := &e.open[p]
	length := 3 + varintLen(int64(b.n)) + varbytesLen(key) + varbytesLen(value) // attributes, timestampDelta and header count take a byte each
	size := varintLen(int64(length)) + length
	if b.buf != nil && (b.n == batchRecords || len(b.buf)-b.start+size > batchBytes || len(b.buf)+size > cap(b.buf)) {
		e.close(p)
	}
	if b.buf == nil {
		// Expected bytes of the partition's records, with room for the batch's and the
		// records' headers, up to a full batch. Past the estimate, the partition's overflow
		// goes in buffers of an eighth of it, or twice the last one: an estimate far too
		// small costs a few more batches, not one per few records.
		want := max(e.left[p]+e.left[p]/16, e.perPartition/8, 2*e.last[p]) + encodedSlack
		want = min(want, batchBytes+batchHeaderSize+4)
		want = max(want, size+batchHeaderSize+4)
		b.buf = make([]byte, 0, want)
		e.last[p] = want
		b.beginAt(e.now)
	}
	b.add(key, value, nil)
	e.left[p] -= size
	e.records++
}

// close finishes partition p's open batch.
func (e *BatchEncoder) close(p int) {
	b := &e.open[p]
	buf := b.finish()
	e.done[p] = append(e.done[p], encodedBatch{buf: buf, n: int(b.n)})
	*b = batchBuilder{}
}

// Encoded finishes the open batches and returns the records; the encoder is not to be used
// afterwards.
func (e *BatchEncoder) Encoded() *Encoded {
	for p := range e.open {
		if e.open[p].buf != nil {
			e.close(p)
		}
	}
	out := &Encoded{partitions: len(e.done), batches: e.done}
	for _, bs := range out.batches {
		for i := range bs {
			bs[i].first = out.records
			out.records += bs[i].n
		}
	}
	e.open, e.done = nil, nil
	return out
}
