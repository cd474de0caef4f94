package mm2

import (
	"context"
	"fmt"
	"time"
)

// await reads the checkpoints topic until every checkpoint parts need is present, not stale,
// and unchanged between two consecutive reads, or until the wait deadline (Config.Wait after the
// Translator's first read). The first two reads follow each other at once, so nothing is waited
// for when all checkpoints are present and still. A group with no checkpoint at all is waited
// for too: MM2 may not have discovered it yet (refresh.groups.interval.seconds). With noWait the
// two reads are made and nothing is waited for.
func (t *Translator) await(ctx context.Context, group string, parts []PartitionTranslation, noWait bool) (readState, error) {
	start := time.Now()
	t.deadlineOnce.Do(func() { t.deadline = start.Add(t.cfg.Wait) })
	if err := t.read(ctx); err != nil {
		return readState{}, err
	}
	prev := t.snapshot(group, parts)
	logged := false
	for {
		if err := t.read(ctx); err != nil {
			return readState{}, err
		}
		cur := t.snapshot(group, parts)
		pending := pendingCheckpoints(parts, prev, cur)
		left := time.Until(t.deadline)
		if pending == 0 || left <= 0 || noWait {
			st := readState{waited: time.Since(start), checkpoints: cur, moving: make([]bool, len(parts))}
			for i := range parts {
				st.moving[i] = !sameCheckpoint(prev[i], cur[i])
			}
			return st, nil
		}
		if !logged {
			t.logger.Info("wait for mm2 checkpoints", "group", group, "pending", pending, "left", left)
			logged = true
		}
		select {
		case <-ctx.Done():
			return readState{}, fmt.Errorf("wait for checkpoints: %w", ctx.Err())
		case <-time.After(min(t.cfg.PollInterval, left)):
		}
		prev = cur
	}
}

// read reads the checkpoints written since the last read.
func (t *Translator) read(ctx context.Context) error {
	err := t.checkpoints.read(ctx)
	if t.afterRead != nil {
		t.afterRead()
	}
	return err
}

// readState is what await saw: how long it waited, and per partition the checkpoint of the
// last read (nil when none) and whether it differed from the read before.
type readState struct {
	waited      time.Duration
	checkpoints []*Checkpoint
	moving      []bool
}

func sameCheckpoint(a, b *Checkpoint) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// snapshot returns the current checkpoint of each partition (nil when there is none).
func (t *Translator) snapshot(group string, parts []PartitionTranslation) []*Checkpoint {
	out := make([]*Checkpoint, len(parts))
	for i, p := range parts {
		if c, ok, _ := t.checkpoints.lookup(checkpointKey{group, p.Target.Topic, p.Target.Partition}); ok {
			out[i] = &c
		}
	}
	return out
}

// pendingCheckpoints counts the partitions whose checkpoint is missing, stale (upstreamOffset
// above the committed offset: MM2 re-emits once it sees the group's rewind) or moved between
// the two reads.
func pendingCheckpoints(parts []PartitionTranslation, prev, cur []*Checkpoint) int {
	n := 0
	for i, p := range parts {
		c := cur[i]
		switch {
		case c == nil, c.UpstreamOffset > p.Committed, !sameCheckpoint(prev[i], c):
			n++
		}
	}
	return n
}
