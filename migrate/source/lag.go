package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// lag is how far group is on topics on A from having consumed every committed record, and
// per partition where it is not 0. A topic that does not exist has none.
//
// The end is not the log end: an exactly-once source (exactly.once.source.support=enabled)
// writes in transactions, each ended by a marker that takes an offset and is handed to no
// consumer, and a Connect sink commits the offset after the last record it delivered (the
// marker's offset), one below the log end for good. So a partition is consumed when no
// committed record lies between the group's offset and the last stable offset (read
// read_committed: markers and aborted records skipped). While a transaction is open (the
// last stable offset below the log end) its records may still commit, for A's sink to
// deliver: the partition is not consumed until it commits or aborts (the broker aborts it
// after the producer's transaction.timeout.ms), unless the group is past it already.
func (r *topicsReader) lag(ctx context.Context, group string, topics []string) (int64, string, error) {
	gos, err := r.store.GroupOffsets(ctx, group)
	if err != nil {
		return 0, "", fmt.Errorf("read the committed offsets of group %q: %w", group, err)
	}
	var total int64
	var behind []string
	for _, t := range topics {
		n, err := kafkaio.PartitionCount(ctx, r.client, t)
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		firsts, err := kafkaio.ListOffsets(ctx, r.client, t, n, kafka.FirstOffset)
		if err != nil {
			return 0, "", err
		}
		stable, err := kafkaio.ListOffsets(ctx, r.client, t, n, kafka.LastOffset)
		if err != nil {
			return 0, "", err
		}
		ends, err := kafkaio.LogEnds(ctx, r.client, t, n)
		if err != nil {
			return 0, "", err
		}
		for p := range n {
			done := firsts[p]
			if i := slices.IndexFunc(gos, func(g offsetstore.GroupOffset) bool { return g.Topic == t && int(g.Partition) == p }); i >= 0 && gos[i].Offset > done {
				done = gos[i].Offset
			}
			switch {
			case done >= ends[p]:
			case stable[p] < ends[p]:
				total += ends[p] - done
				behind = append(behind, fmt.Sprintf("%s-%d: a transaction open from offset %d, log end %d", t, p, stable[p], ends[p]))
			case done >= stable[p]:
			default:
				left, err := committedFrom(ctx, r.client, t, p, done, stable[p])
				if err != nil {
					return 0, "", err
				}
				if left {
					total += ends[p] - done
					behind = append(behind, fmt.Sprintf("%s-%d: %d", t, p, ends[p]-done))
				}
			}
		}
	}
	return total, strings.Join(behind, ", "), nil
}

// committedScanFetches bounds the fetches committedFrom makes: past them, a partition counts
// as not consumed yet (a later read goes on).
const committedScanFetches = 32

// committedFrom reports whether partition p of topic holds a committed record (not a marker,
// not in an aborted transaction) in [from, stable).
func committedFrom(ctx context.Context, cl *kafka.Client, topic string, p int, from, stable int64) (bool, error) {
	at := from
	for range committedScanFetches {
		if at >= stable {
			return false, nil
		}
		f, err := kafkaio.FetchPartition(ctx, cl, topic, p, at, 1<<20, 100*time.Millisecond)
		if err != nil {
			return false, fmt.Errorf("read topic %q partition %d from offset %d: %w", topic, p, at, err)
		}
		for _, m := range f.Messages {
			if m.Offset >= at && m.Offset < stable {
				return true, nil
			}
		}
		if f.Next <= at {
			return true, nil // no step forward: not known to be consumed
		}
		at = f.Next
	}
	return at < stable, nil
}
