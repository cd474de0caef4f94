package kafkaio

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every fetch of this package reads committed data only (isolation level 1, READ_COMMITTED),
// as Connect's KafkaBasedLog reads its topics when a worker runs with
// exactly.once.source.support=enabled, and as a Kafka consumer with
// isolation.level=read_committed does:
//
//   - the broker answers nothing at or past the partition's last stable offset (LSO), the
//     first offset of a transaction still open; callers treat the LSO as the partition's end
//     (Fetched.LastStable, the Log's Sync barrier and its readiness);
//   - the response lists, per partition, the aborted transactions that overlap the records it
//     returns: a producer id and the first offset of its aborted transaction. A transactional
//     batch of that producer from that offset on, up to its abort marker (a control batch of
//     the same producer), is dropped; so is the marker. The list also names a transaction
//     that began before the offset asked for (a fetch that starts inside it), so nothing of
//     the state below is kept from one fetch to the next;
//   - control batches (commit and abort markers) are never handed to callers; they only move
//     the position past them.
//
// This is the Java consumer's CompletedFetch.nextFetchedRecord (abortedProducerIds,
// consumeAbortedTransactionsUpTo, isBatchAborted) on the batch headers: an aborted batch is
// skipped before it is checked, inflated or decoded.

// readCommitted is the Fetch and ListOffsets isolation level of every read: READ_COMMITTED.
const readCommitted = 1

// abortFilter drops the batches of aborted transactions while read walks the batches of one
// partition of one fetch response, in offset order.
type abortFilter struct {
	// pending are the response's aborted transactions whose first offset read has not
	// reached, by first offset.
	pending []kmsg.FetchResponseTopicPartitionAbortedTransaction
	// producers are the producer ids whose aborted transaction read is inside: their
	// transactional batches are dropped until their next control batch (the abort marker).
	producers []int64
}

// reset starts the walk of a partition whose response lists aborted.
func (a *abortFilter) reset(aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	a.pending, a.producers = a.pending[:0], a.producers[:0]
	if len(aborted) == 0 {
		return
	}
	a.pending = append(a.pending, aborted...)
	slices.SortStableFunc(a.pending, func(x, y kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return compareInt64(x.FirstOffset, y.FirstOffset)
	})
}

// drop reports whether the record batch b (magic 2, whole header), whose last offset is last,
// belongs to an aborted transaction or is the marker that ends one. Batches come in offset
// order, those before the offset asked for included.
func (a *abortFilter) drop(b []byte, last int64) bool {
	if len(a.pending) == 0 && len(a.producers) == 0 {
		return false // most responses: nothing aborted in them
	}
	attrs := binary.BigEndian.Uint16(b[attrOffset:])
	if attrs&batchTxnFlag == 0 {
		return false // not transactional: never aborted
	}
	for len(a.pending) > 0 && a.pending[0].FirstOffset <= last {
		a.producers = append(a.producers, a.pending[0].ProducerID)
		a.pending = a.pending[1:]
	}
	i := slices.Index(a.producers, int64(binary.BigEndian.Uint64(b[batchProducerOffset:])))
	if i < 0 {
		return false
	}
	if attrs&batchControlFlag != 0 {
		// The producer's first marker after its aborted transaction began is the abort
		// marker: a producer has one transaction open at a time.
		a.producers = slices.Delete(a.producers, i, i+1)
	}
	return true
}
