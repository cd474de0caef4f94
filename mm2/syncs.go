package mm2

import (
	"context"
	"fmt"
	"sync"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// maxSyncsPerPartition bounds the offset syncs kept per source partition (the uncompacted tail
// of a busy topic holds one per offset.lag.max records); the oldest go first, which only makes a
// bound for a group far behind the head less tight.
const maxSyncsPerPartition = 10000

// OffsetSyncsLocation is where MM2's offset-syncs topic is: on the source cluster by default
// (offset-syncs.topic.location=source, topic Policy.OffsetSyncsTopic(targetAlias)), or on the
// target (location=target, Policy.OffsetSyncsTopic(sourceAlias)).
type OffsetSyncsLocation struct {
	Cluster kafkaio.Options
	Topic   string
}

// syncStore is the materialised offset-syncs topic: every sync per source partition since the
// upstream offset last went backwards (OffsetSyncStore clears its slots then,
// docs/mirrormaker2.md, "Translation").
type syncStore struct {
	readMu sync.Mutex
	tail   logTail

	mu      sync.Mutex
	syncs   map[TopicPartition][]OffsetSync
	refused int
}

func newSyncStore(loc OffsetSyncsLocation) *syncStore {
	return &syncStore{tail: logTail{cl: kafkaio.NewClient(loc.Cluster), topic: loc.Topic}, syncs: map[TopicPartition][]OffsetSync{}}
}

func (s *syncStore) read(ctx context.Context) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if err := s.tail.readToEnd(ctx, s.apply); err != nil {
		return fmt.Errorf("read offset syncs topic %q: %w", s.tail.topic, err)
	}
	return nil
}

func (s *syncStore) apply(r record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sy, err := DecodeOffsetSync(r.Key, r.Value)
	if err != nil {
		s.refused++ // skipped, as OffsetSyncStore does
		return
	}
	tp := TopicPartition{Topic: sy.Topic, Partition: sy.Partition}
	list := s.syncs[tp]
	if n := len(list); n > 0 && sy.UpstreamOffset < list[n-1].UpstreamOffset {
		list = list[:0]
	}
	if len(list) == maxSyncsPerPartition {
		list = append(list[:0], list[1:]...)
	}
	s.syncs[tp] = append(list, sy)
}

// bound is what the offset syncs of a source partition prove about starting a sink at
// downstream offset d for a group whose committed offset on the source is g.
type bound struct {
	known bool
	// replay is the most records that may be delivered again.
	replay int64
	// skips is true when a sync shows a record at or after g landing below d: starting at d
	// would skip it (MM2 before 3.4.1/3.5.0 extrapolated, docs/mirrormaker2.md, "Translation").
	skips bool
	// sync is the sync that gave the bound (or showed the skip).
	sync OffsetSync
}

// replayBound computes the bound from the syncs of tp. Records reach the target in source
// order, each at most once per MM2 generation, so for a sync (u, ds) with u < g the records
// replayed from d are at most those in [d, ds] on the target plus those in (u, g) on the
// source; with u == g the record g itself is at ds, so exactly ds-d are replayed.
func (s *syncStore) replayBound(tp TopicPartition, g, d int64) bound {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best bound
	for _, sy := range s.syncs[tp] {
		if sy.UpstreamOffset >= g && sy.Offset < d {
			return bound{known: true, skips: true, sync: sy}
		}
		if sy.UpstreamOffset > g {
			continue
		}
		var b int64
		if sy.UpstreamOffset == g {
			b = max(0, sy.Offset-d)
		} else {
			b = g - sy.UpstreamOffset - 1 + max(0, sy.Offset-d+1)
		}
		if !best.known || b < best.replay {
			best = bound{known: true, replay: b, sync: sy}
		}
	}
	return best
}
