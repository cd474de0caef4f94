package mm2

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// ExactScan is what --exact found for one partition (docs/migration.md, "--exact"), or what
// Back's search of A found.
type ExactScan struct {
	// Found is true when the scanned partition holds the record looked for, at offset At.
	Found bool  `json:"found"`
	At    int64 `json:"at,omitempty"`
	// Scanned is the number of records compared.
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
	want, ok, err := recordAt(ctx, t.source, src, g-1)
	if err != nil {
		return ExactScan{}, fmt.Errorf("exact refinement of %s: read the source: %w", src, err)
	}
	if !ok {
		return ExactScan{Note: fmt.Sprintf("the source has no record at offset %d of %s (deleted, compacted or a transaction marker)", g-1, src)}, nil
	}
	scan, err := search(ctx, t.target, dst, max(d-1, 0), -1, want, scanBounds{limit: t.cfg.ScanLimit})
	if err != nil {
		return scan, fmt.Errorf("exact refinement of %s: scan the target: %w", dst, err)
	}
	return scan, nil
}

// recordAt reads the record at offset off of tp; false when there is none (retention or
// compaction removed it, or off holds a transaction marker or an aborted record).
func recordAt(ctx context.Context, cl *kafka.Client, tp TopicPartition, off int64) (record, bool, error) {
	if off < 0 {
		return record{}, false, nil
	}
	f, err := fetch(ctx, cl, tp.Topic, int(tp.Partition), off)
	if errors.Is(err, kafka.OffsetOutOfRange) {
		return record{}, false, nil // retention removed it: no record to match
	}
	if err != nil {
		return record{}, false, err
	}
	if len(f.records) == 0 || f.records[0].Offset != off {
		return record{}, false, nil
	}
	return f.records[0], true, nil
}

// scanBounds bound a walk through a partition: at most limit records, and, when until is not
// zero, no fetch begun after it.
type scanBounds struct {
	limit int
	until time.Time
}

// walkEnd says why a walk ended.
type walkEnd int

const (
	// walkFound: visit took a record.
	walkFound walkEnd = iota
	// walkReached: the walk reached its stop offset, or the partition's end.
	walkReached
	// walkLimit: it handed scanBounds.limit records to visit.
	walkLimit
	// walkTime: scanBounds.until passed.
	walkTime
)

// walked is what a walk did: why it ended, how many records it handed to visit, and the
// offset of the record visit took.
type walked struct {
	end     walkEnd
	scanned int
	at      int64
}

// walk hands the records of tp to visit in offset order, from offset from (the log start when
// retention removed it) up to, not including, stop (the partition's last stable offset when
// stop < 0), until visit returns true or a bound is reached. Offsets without a record
// (compaction, transaction markers, aborted records) are skipped, as a read_committed
// consumer skips them.
func walk(ctx context.Context, cl *kafka.Client, tp TopicPartition, from, stop int64, b scanBounds, visit func(record) bool) (walked, error) {
	var w walked
	next := max(from, 0)
	restarted := false
	for {
		switch {
		case stop >= 0 && next >= stop:
			w.end = walkReached
			return w, nil
		case w.scanned >= b.limit:
			w.end = walkLimit
			return w, nil
		case !b.until.IsZero() && time.Now().After(b.until):
			w.end = walkTime
			return w, nil
		}
		f, err := fetch(ctx, cl, tp.Topic, int(tp.Partition), next)
		if errors.Is(err, kafka.OffsetOutOfRange) && !restarted {
			// Retention removed the start of the walk: walk from the log start.
			restarted = true
			lt := logTail{cl: cl, topic: tp.Topic, partition: int(tp.Partition)}
			_, first, err := lt.bounds(ctx)
			if err != nil {
				return w, err
			}
			next = max(next, first)
			continue
		}
		if err != nil {
			return w, err
		}
		for _, r := range f.records {
			if stop >= 0 && r.Offset >= stop {
				w.end = walkReached
				return w, nil
			}
			if w.scanned == b.limit {
				break
			}
			w.scanned++
			if visit(r) {
				w.end, w.at = walkFound, r.Offset
				return w, nil
			}
		}
		if w.scanned == b.limit {
			w.end = walkLimit
			return w, nil
		}
		if f.next >= f.hw {
			w.end = walkReached
			return w, nil
		}
		if f.next == next {
			f.next = f.hw // nothing below the last stable offset: compaction removed the rest
		}
		next = f.next
	}
}

// search looks for want in tp from offset from up to, not including, stop (the partition's
// end when stop < 0), comparing timestamp, key, value and headers (sameRecord); the first
// match wins.
func search(ctx context.Context, cl *kafka.Client, tp TopicPartition, from, stop int64, want record, b scanBounds) (ExactScan, error) {
	w, err := walk(ctx, cl, tp, from, stop, b, func(r record) bool { return sameRecord(r, want) })
	scan := ExactScan{Scanned: w.scanned}
	if err != nil {
		return scan, err
	}
	switch w.end {
	case walkFound:
		scan.Found, scan.At = true, w.at
	case walkReached:
		if stop >= 0 {
			scan.Note = fmt.Sprintf("no matching record in %s from offset %d below offset %d", tp, from, stop)
		} else {
			scan.Note = fmt.Sprintf("no matching record in %s from offset %d to its end", tp, from)
		}
	case walkLimit:
		scan.Note = fmt.Sprintf("no matching record in the first %d records of %s from offset %d", b.limit, tp, from)
	case walkTime:
		scan.Note = fmt.Sprintf("no matching record in the %d records of %s from offset %d read within the time bound", w.scanned, tp, from)
	}
	return scan, nil
}
