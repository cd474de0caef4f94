package mm2

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// ExactScan is what --exact found for one partition (docs/migration.md, "--exact").
type ExactScan struct {
	// Found is true when the target holds the source's record at Committed-1, at offset At.
	Found bool  `json:"found"`
	At    int64 `json:"at,omitempty"`
	// Scanned is the number of target records compared.
	Scanned int `json:"scanned"`
	// Note says why nothing was found, when nothing was.
	Note string `json:"note,omitempty"`
}

// refineParallel bounds the partitions of a group refined at once.
const refineParallel = 8

// refineAll runs refine on every partition with a checkpoint and a consumed record, a few at a
// time, and makes the found ones exact. A partition whose scan fails keeps its verdict, with
// the failure in its scan note; only the end of ctx is an error.
func (t *Translator) refineAll(ctx context.Context, parts []PartitionTranslation) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(refineParallel)
	for i := range parts {
		p := &parts[i]
		if p.Verdict == VerdictMissing || p.Committed <= 0 {
			continue
		}
		g.Go(func() error {
			scan, err := t.refine(gctx, p.Source, p.Target, p.Committed, p.Offset)
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				scan.Note = err.Error()
			}
			p.Scan = &scan
			if scan.Found {
				p.Verdict, p.Offset, p.ReplayBound, p.Reason = VerdictExact, scan.At+1, ptr(int64(0)), ""
			}
			return nil
		})
	}
	return g.Wait()
}

// refine looks for A's record at g-1 (the last one the sink consumed) in B's partition, from
// d-1 forward, comparing timestamp, key, value and headers, which MM2 copies. The first match
// is safe: an identical earlier record only yields a position at or before the exact one. The
// scan stops after Config.ScanLimit records or at the end of the partition.
func (t *Translator) refine(ctx context.Context, src, dst TopicPartition, g, d int64) (ExactScan, error) {
	var scan ExactScan
	f, err := fetch(ctx, t.source, src.Topic, int(src.Partition), g-1)
	if errors.Is(err, kafka.OffsetOutOfRange) {
		f, err = fetched{}, nil // retention removed it: no record to match
	}
	if err != nil {
		return scan, fmt.Errorf("exact refinement of %s: read the source: %w", src, err)
	}
	if len(f.records) == 0 || f.records[0].Offset != g-1 {
		scan.Note = fmt.Sprintf("the source has no record at offset %d of %s (deleted, compacted or a transaction marker)", g-1, src)
		return scan, nil
	}
	want := f.records[0]
	b := t.target
	next := max(d-1, 0)
	restarted := false
	for scan.Scanned < t.cfg.ScanLimit {
		f, err := fetch(ctx, b, dst.Topic, int(dst.Partition), next)
		if errors.Is(err, kafka.OffsetOutOfRange) && !restarted {
			// Retention removed the start of the scan: scan from the log start.
			restarted = true
			lt := logTail{cl: b, topic: dst.Topic, partition: int(dst.Partition)}
			_, first, err := lt.bounds(ctx)
			if err != nil {
				return scan, fmt.Errorf("exact refinement of %s: %w", dst, err)
			}
			next = max(next, first)
			continue
		}
		if err != nil {
			return scan, fmt.Errorf("exact refinement of %s: scan the target: %w", dst, err)
		}
		for _, r := range f.records {
			if scan.Scanned == t.cfg.ScanLimit {
				break
			}
			scan.Scanned++
			if sameRecord(r, want) {
				scan.Found, scan.At = true, r.Offset
				return scan, nil
			}
		}
		if scan.Scanned == t.cfg.ScanLimit {
			break
		}
		if f.next >= f.hw {
			scan.Note = fmt.Sprintf("no matching record in %s from offset %d to its end", dst, max(d-1, 0))
			return scan, nil
		}
		if f.next == next {
			f.next = f.hw // nothing below the high watermark: compaction removed the rest
		}
		next = f.next
	}
	scan.Note = fmt.Sprintf("no matching record in the first %d records of %s from offset %d", t.cfg.ScanLimit, dst, max(d-1, 0))
	return scan, nil
}
