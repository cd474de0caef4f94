package mm2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Back translation: a sink connector moved from A to B across MirrorMaker 2 goes back to A, and
// B's committed offsets, on B's copies of A's topics, are carried to the offsets of A's
// originals (docs/mirrormaker2.md, "Back to the source").
//
// The bound. For B's committed offset d on a copy of A's partition (B consumed the records
// below d), a cut is a pair (u, ds) of offsets on A and B that correspond: B's records below ds
// are copies of A's records below u, and B's records from ds on copies of A's from u on. An
// offset sync of the A->B flow is one (MM2 wrote A's record u at B's offset ds), and so is a
// migration's exact pair (A's committed offset at the cutover, the offset placed on B). Take
// the latest cut with ds at or below B's last record before d, and count the records m that
// B holds from ds to that record (at offset l). Between two syncs B's records are copies of A's
// records in A's order, each of a later record than the one before, so the j-th record B holds
// from ds on (counting from 0) is a copy of an A record at or above u+j, and the original of
// B's record l is at or above
//
//	start = u + m - 1,
//
// and A's next offset after it, at or above c = u + m. Where B's offsets have no gaps this is
// u + (d - ds); the count is what holds where they do: transaction markers (MM2 run with
// exactly.once.source.support, KIP-618), records compaction removed on B, aborted records: each
// such offset would put u + (d - ds) one too high and the search past the original.
//
// Why the order holds, read from MirrorMaker 2's source (MirrorSourceTask, OffsetSyncWriter)
// and Connect's (Worker.baseProducerConfigs): MirrorSourceTask.poll hands A's records to
// Connect in A's order; Connect's producer writes them to B with acks=all and one request in
// flight per connection, so one partition's records land in that order; commitRecord gives
// OffsetSyncWriter each record's upstream offset and the offset B acknowledged, and
// PartitionState.update queues a sync at the task's first record, whenever the upstream offset
// is not the previous one plus one (a skip on A, a record a transformation dropped, and a
// re-replication after a restart, which goes backwards), whenever the downstream offset went
// backwards (truncation on B), and every offset.lag.max records. So between two syncs written
// for a partition there is no backward step. It does not hold, and only the record match below
// stands between the result and a wrong carry, where:
//   - a discontinuity's sync was not written: OffsetSyncWriter keeps one pending sync per
//     partition, replaced by the next urgent one while 10 are in flight, and a failed send is
//     only logged. A restart's re-replication can so start between two written syncs: records
//     copied twice, the later syncs' upstream below the earlier ones' (the sync store then
//     keeps only the later, syncStore.apply), but a d in between is judged by the earlier;
//   - Connect's producer wrote a record twice: Worker.baseProducerConfigs sets
//     enable.idempotence=false with unbounded retries, so a retried batch that had landed is
//     written again, and no sync says so (the task is told of one offset).
//
// Either puts the start too high: the search then misses the original and the partition is
// not carried, unless A holds an identical record (same timestamp, key, value and headers)
// further on, which would be carried past what B consumed. A cut at or above d bounds the
// search: B's records below d are copies of A's records below that cut's u, so the original is
// below it and nothing at or above it is taken.
//
// The search. B's record l is looked for on A from start onwards, as --exact does forwards
// (search, sameRecord): found at x, A's sink resumes at x+1, exactly past the copy of what B's
// sink consumed last ("carried"); an identical earlier record gives an earlier x, and so
// duplicates, never a gap. Not found within the bounds (ScanLimit records, ScanTime, the cut
// above): "not_carried", and A keeps its own offset and delivers again what B delivered since.
// B's committed offset on a cut (d = ds) needs no search: B consumed the copies of A's records
// below u and none of the others, and u is carried.
//
// Topics that B produced itself (no copy of A's) have no sync of the A->B flow. When MM2 also
// runs B->A, that flow copies them to A (Reverse().RemoteTopic, B.events) and checkpoints B's
// groups on A (<B alias>.checkpoints.internal): a checkpoint with its upstream offset at or
// below d puts A's next offset at or above its offset (MM2's translation never passes the
// exact position, docs/mirrormaker2.md, "Translation"), and B's record d-1 is looked for on A
// from there, as refine does. Without Policy.TargetAlias, or without that flow, such a
// partition is not carried.

// BackVerdict says whether B's progress on a partition is carried back to A.
type BackVerdict string

// The verdicts of Back.
const (
	// BackCarried: A's sink resumes exactly past the copy of the last record B's sink consumed.
	BackCarried BackVerdict = "carried"
	// BackNotCarried: B's progress cannot be placed on A; A keeps its own offset and delivers
	// again what B delivered since.
	BackNotCarried BackVerdict = "not_carried"
)

// Where a cut comes from.
const (
	// CutOffsetSync: an offset sync of the A->B flow.
	CutOffsetSync = "offset_sync"
	// CutGiven: given by the caller (a migration's exact pair).
	CutGiven = "given"
)

// Cut is a pair of offsets of one partition that correspond on A and B: B's records below
// Downstream are copies of A's records below Upstream, and B's records from Downstream on
// copies of A's from Upstream on. An offset sync is one; so is a cutover's exact pair (A's
// committed offset at the cutover, the offset placed on B), which a caller gives Back. A pair
// that is only a lower bound (a checkpoint's translation that replays) is no cut.
type Cut struct {
	// Source is the partition on A.
	Source     TopicPartition `json:"source"`
	Upstream   int64          `json:"upstream"`
	Downstream int64          `json:"downstream"`
	// From is CutOffsetSync or CutGiven.
	From string `json:"from"`
}

// BackBound is how Back placed the search on A.
type BackBound struct {
	// Cut is the cut used, at or below B's last consumed record.
	Cut Cut `json:"cut"`
	// LastOnB is the offset on B of the last record B's sink consumed (its last record below
	// the committed offset), the record looked for; RecordsOnB counts B's records from
	// Cut.Downstream to it, both included.
	LastOnB    int64 `json:"last_on_b"`
	RecordsOnB int   `json:"records_on_b"`
	// Start is the lowest offset on A its original can be at: Cut.Upstream + RecordsOnB - 1.
	Start int64 `json:"start"`
	// Below, when set, is the upstream offset of a cut at or above the committed offset: the
	// original is below it, and nothing at or above it is carried.
	Below *int64 `json:"below,omitempty"`
}

// BackPartition is the back translation of one partition of a sink group on B.
type BackPartition struct {
	// Target is the partition on B; Committed the group's committed offset there (d).
	Target    TopicPartition `json:"target"`
	Committed int64          `json:"committed"`
	// Source is the partition on A it is carried to; Topic is "" when B's topic has none.
	Source  TopicPartition `json:"source"`
	Verdict BackVerdict    `json:"verdict"`
	// Offset is the offset to commit on A; -1 when not carried.
	Offset int64 `json:"offset"`
	// Bound is the cut and the search start used, when there was one.
	Bound *BackBound `json:"bound,omitempty"`
	// Checkpoint is the checkpoint of the B->A flow used for a topic B produced itself.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Scan is what the search of A found, when it ran.
	Scan *ExactScan `json:"scan,omitempty"`
	// Reason says how the offset was found, or why it was not.
	Reason string `json:"reason"`
}

// BackTranslation is the back translation of one sink group on B.
type BackTranslation struct {
	Group      string          `json:"group"`
	Partitions []BackPartition `json:"partitions"`
	Carried    int             `json:"carried"`
	NotCarried int             `json:"not_carried"`
}

// Offsets returns the offsets to commit on A, by partition of A, of the carried partitions.
func (b BackTranslation) Offsets() map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for _, p := range b.Partitions {
		if p.Verdict == BackCarried {
			out[p.Source] = p.Offset
		}
	}
	return out
}

// maxCutsTried bounds the cuts Back walks down through when B holds no record between a cut
// and its committed offset (transaction markers or compaction right below it).
const maxCutsTried = 8

// Back carries the committed offsets of group on B (by partition of B's topics) back to A:
// per partition the topic on A by the replication policy, the offset to commit there and a
// verdict, as the comment above says. given are cuts the caller knows (a cutover's exact
// pairs, by partition of A); the offset syncs of Config.OffsetSyncs add theirs. Back reads
// B's records through Config.Target and A's through Config.Source, which it needs. An error
// means nothing could be decided (the offset-syncs topic unreadable, no source cluster, ctx
// ended); a partition that cannot be carried is a verdict.
func (t *Translator) Back(ctx context.Context, group string, committed map[TopicPartition]int64, given ...Cut) (BackTranslation, error) {
	if len(t.cfg.Source.Brokers) == 0 {
		return BackTranslation{}, fmt.Errorf("back translation of group %q: no source cluster to read A's records from", group)
	}
	if t.syncs != nil {
		if err := t.syncs.read(ctx); err != nil {
			return BackTranslation{}, fmt.Errorf("back translation of group %q: %w", group, err)
		}
	}
	cuts := map[TopicPartition][]Cut{}
	for _, c := range given {
		c.From = CutGiven
		cuts[c.Source] = append(cuts[c.Source], c)
	}
	out := BackTranslation{Group: group, Partitions: make([]BackPartition, 0, len(committed))}
	for tp, d := range committed {
		out.Partitions = append(out.Partitions, BackPartition{Target: tp, Committed: d, Offset: -1})
	}
	slices.SortFunc(out.Partitions, func(a, b BackPartition) int {
		return cmp.Or(cmp.Compare(a.Target.Topic, b.Target.Topic), cmp.Compare(a.Target.Partition, b.Target.Partition))
	})
	var rev reverseFlow
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(refineParallel)
	for i := range out.Partitions {
		p := &out.Partitions[i]
		g.Go(func() error {
			var err error
			if up, ok := t.cfg.Policy.UpstreamTopic(p.Target.Topic); ok {
				p.Source = TopicPartition{Topic: up, Partition: p.Target.Partition}
				err = t.backCopy(gctx, p, cuts[p.Source])
			} else {
				err = t.backReverse(gctx, group, p, &rev)
			}
			if err != nil && ctx.Err() != nil {
				return err
			}
			if err != nil {
				p.Verdict, p.Offset, p.Reason = BackNotCarried, -1, err.Error()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return BackTranslation{}, fmt.Errorf("back translation of group %q: %w", group, err)
	}
	for _, p := range out.Partitions {
		if p.Verdict == BackCarried {
			out.Carried++
		} else {
			out.NotCarried++
		}
	}
	return out, nil
}

// bounds are the bounds of one of Back's walks: Config.ScanLimit records, Config.ScanTime.
func (t *Translator) bounds() scanBounds {
	return scanBounds{limit: t.cfg.ScanLimit, until: time.Now().Add(t.cfg.ScanTime)}
}

// notCarried sets p's verdict to not carried, with why.
func notCarried(p *BackPartition, format string, args ...any) {
	p.Verdict, p.Offset, p.Reason = BackNotCarried, -1, fmt.Sprintf(format, args...)
}

// backCopy carries p, on B's copy of A's partition p.Source, with the cuts of the offset
// syncs and the given ones.
func (t *Translator) backCopy(ctx context.Context, p *BackPartition, given []Cut) error {
	d := p.Committed
	all := slices.Clone(given)
	if t.syncs != nil {
		all = append(all, t.syncs.cuts(p.Source)...)
	}
	// Below d, latest first; the least upstream offset of the cuts at or above d bounds the
	// search (B's records below d are copies of A's records below it).
	var below []Cut
	var above *int64
	atD := -1
	for i, c := range all {
		switch {
		case c.Downstream < d:
			below = append(below, c)
		default:
			if above == nil || c.Upstream < *above {
				above = ptr(c.Upstream)
			}
			if c.Downstream == d && (atD < 0 || c.Upstream < all[atD].Upstream) {
				atD = i
			}
		}
	}
	slices.SortStableFunc(below, func(a, b Cut) int {
		// Latest first; of two at one offset, the lower upstream offset (the safer start).
		return cmp.Or(cmp.Compare(b.Downstream, a.Downstream), cmp.Compare(a.Upstream, b.Upstream))
	})
	carried, err := t.searchFromCuts(ctx, p, below, above)
	if err != nil || carried {
		return err
	}
	if atD >= 0 {
		c := all[atD]
		note := p.Reason
		p.Verdict, p.Offset, p.Bound = BackCarried, c.Upstream, nil
		p.Reason = fmt.Sprintf("B's committed offset %d is on a cut (%s: upstream %d, downstream %d): B consumed the copies of A's records below %d and none of the others",
			d, c.From, c.Upstream, c.Downstream, c.Upstream)
		if note != "" {
			p.Reason += "; the record search: " + note
		}
	}
	return nil
}

// searchFromCuts looks for B's last record below p.Committed on A from the bound of the
// latest cut below it that has B records after it; true when it was found and p carried.
// Otherwise p is not carried, with why.
func (t *Translator) searchFromCuts(ctx context.Context, p *BackPartition, below []Cut, above *int64) (bool, error) {
	d := p.Committed
	if d <= 0 {
		notCarried(p, "B's sink consumed nothing of %s", p.Target)
		return false, nil
	}
	if len(below) == 0 {
		why := "no offsets syncs were read (they are on A, or on B with offset-syncs.topic.location=target) and no cut was given"
		if t.syncs != nil {
			why = fmt.Sprintf("%s holds no offset sync of %s below downstream offset %d since its upstream offsets last went back", t.syncs.tail.topic, p.Source, d)
		}
		notCarried(p, "no cut below B's committed offset %d of %s: %s", d, p.Target, why)
		return false, nil
	}
	hi := d
	for i, c := range below {
		if i == maxCutsTried || c.Downstream >= hi {
			break
		}
		// B's last record in [c.Downstream, hi), and how many B holds there.
		var last record
		n := 0
		w, err := walk(ctx, t.target, p.Target, c.Downstream, hi, t.bounds(), func(r record) bool {
			last, n = r, n+1
			return false
		})
		if err != nil {
			return false, fmt.Errorf("read %s on B from offset %d: %w", p.Target, c.Downstream, err)
		}
		if w.end != walkReached {
			notCarried(p, "B holds more records between the cut (%s: upstream %d, downstream %d) and its committed offset %d than the search reads (%d, or its time bound)",
				c.From, c.Upstream, c.Downstream, d, w.scanned)
			return false, nil
		}
		if n == 0 {
			hi = c.Downstream // markers or compaction right below: the cut before
			continue
		}
		b := &BackBound{Cut: c, LastOnB: last.Offset, RecordsOnB: n, Start: c.Upstream + int64(n) - 1, Below: above}
		p.Bound = b
		stop := int64(-1)
		if above != nil {
			stop = *above
			if stop <= b.Start {
				notCarried(p, "the cuts contradict each other: B's records from offset %d to %d are %d, which puts the original of B's record %d at offset %d of %s or above, "+
					"but a cut at or above B's committed offset %d puts it below %d (MirrorMaker 2 copied records twice, and the sync that says so was not written)",
					c.Downstream, last.Offset, n, last.Offset, b.Start, p.Source, d, stop)
				return false, nil
			}
		}
		scan, refused, err := t.searchA(ctx, p.Source, b.Start, stop, last)
		if err != nil {
			return false, err
		}
		if refused != "" {
			notCarried(p, "%s", refused)
			return false, nil
		}
		p.Scan = &scan
		if !scan.Found {
			notCarried(p, "B's record at offset %d of %s (the last its sink consumed) is not on A from offset %d, where the cut puts it at the earliest: %s",
				last.Offset, p.Target, b.Start, scan.Note)
			return false, nil
		}
		p.Verdict, p.Offset = BackCarried, scan.At+1
		p.Reason = fmt.Sprintf("B's record at offset %d of %s (the last its sink consumed) is A's record %d of %s", last.Offset, p.Target, scan.At, p.Source)
		return true, nil
	}
	notCarried(p, "B holds no record of %s from offset %d to its committed offset %d", p.Target, below[0].Downstream, d)
	return false, nil
}

// searchA looks for want on A in tp from offset from, below stop (to the end when stop < 0).
// It refuses, saying why, when A's log start is past from: retention or DeleteRecords removed
// records where the original may have been, and an identical record further on would be taken
// for it, carrying past what B consumed.
func (t *Translator) searchA(ctx context.Context, tp TopicPartition, from, stop int64, want record) (ExactScan, string, error) {
	lt := logTail{cl: t.source, topic: tp.Topic, partition: int(tp.Partition)}
	_, first, err := lt.bounds(ctx)
	if err != nil {
		return ExactScan{}, "", fmt.Errorf("read the log start of %s on A: %w", tp, err)
	}
	if first > from {
		return ExactScan{}, fmt.Sprintf("A's log start of %s is %d, past offset %d where the original of B's record may be: A deleted it, or records before it", tp, first, from), nil
	}
	scan, err := search(ctx, t.source, tp, from, stop, want, t.bounds())
	if err != nil {
		return scan, "", fmt.Errorf("search %s on A from offset %d: %w", tp, from, err)
	}
	return scan, "", nil
}

// reverseFlow is the checkpoints of the B->A flow on A, read once per Back.
type reverseFlow struct {
	once   sync.Once
	policy Policy
	store  *checkpointStore
	err    error
}

// backReverse carries p, on a topic B produced itself, with the checkpoints of a B->A flow.
func (t *Translator) backReverse(ctx context.Context, group string, p *BackPartition, rev *reverseFlow) error {
	if t.cfg.Policy.TargetAlias == "" {
		notCarried(p, "%s is not a copy of a topic of A under the %s policy, and without B's alias no MirrorMaker 2 flow from B to A is looked at",
			p.Target.Topic, t.cfg.Policy.kind())
		return nil
	}
	rev.once.Do(func() {
		rev.policy, rev.err = t.cfg.Policy.Reverse()
		if rev.err == nil {
			rev.store = newCheckpointStore(t.cfg.Source, rev.policy.CheckpointsTopic())
			rev.err = rev.store.read(ctx)
		}
	})
	topic := rev.policy.RemoteTopic(p.Target.Topic)
	p.Source = TopicPartition{Topic: topic, Partition: p.Target.Partition}
	if errors.Is(rev.err, ErrNoCheckpointsTopic) {
		notCarried(p, "%s is not a copy of a topic of A, and A holds no checkpoints of a MirrorMaker 2 flow from B (no topic %s)",
			p.Target.Topic, rev.policy.CheckpointsTopic())
		return nil
	}
	if rev.err != nil {
		return rev.err
	}
	cp, ok, _ := rev.store.lookup(checkpointKey{group, topic, p.Target.Partition})
	d := p.Committed
	switch {
	case !ok:
		notCarried(p, "%s holds no checkpoint of group %q for %s (B's %s copied to A)", rev.policy.CheckpointsTopic(), group, p.Source, p.Target)
		return nil
	case cp.UpstreamOffset > d:
		notCarried(p, "the checkpoint's upstream offset %d is above B's committed offset %d (a checkpoint of an older generation of the group)", cp.UpstreamOffset, d)
		return nil
	case d <= 0:
		notCarried(p, "B's sink consumed nothing of %s", p.Target)
		return nil
	}
	p.Checkpoint = &cp
	want, ok, err := recordAt(ctx, t.target, p.Target, d-1)
	if err != nil {
		return fmt.Errorf("read %s on B at offset %d: %w", p.Target, d-1, err)
	}
	if !ok {
		notCarried(p, "B has no record at offset %d of %s (deleted, compacted or a transaction marker) to look for on A", d-1, p.Target)
		return nil
	}
	from := max(cp.Offset-1, 0)
	scan, refused, err := t.searchA(ctx, p.Source, from, -1, want)
	if err != nil {
		return err
	}
	if refused != "" {
		notCarried(p, "%s", refused)
		return nil
	}
	p.Scan = &scan
	if !scan.Found {
		notCarried(p, "B's record at offset %d of %s is not on A's copy %s from offset %d, where the checkpoint (upstream %d, offset %d) puts it at the earliest: %s",
			d-1, p.Target, p.Source, from, cp.UpstreamOffset, cp.Offset, scan.Note)
		return nil
	}
	p.Verdict, p.Offset = BackCarried, scan.At+1
	p.Reason = fmt.Sprintf("B's record at offset %d of %s (the last its sink consumed) is record %d of A's copy %s", d-1, p.Target, scan.At, p.Source)
	return nil
}

// cuts returns the syncs of tp as cuts, oldest first, since the downstream offset last went
// back (a truncation of B's partition: the syncs before it name offsets B no longer holds
// those records at). apply already drops what came before the upstream offset went back.
func (s *syncStore) cuts(tp TopicPartition) []Cut {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.syncs[tp]
	from := 0
	for i := 1; i < len(list); i++ {
		if list[i].Offset < list[i-1].Offset {
			from = i
		}
	}
	out := make([]Cut, 0, len(list)-from)
	for _, sy := range list[from:] {
		out = append(out, Cut{Source: tp, Upstream: sy.UpstreamOffset, Downstream: sy.Offset, From: CutOffsetSync})
	}
	return out
}
