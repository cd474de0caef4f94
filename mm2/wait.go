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
// for too: MM2 may not have discovered it yet (refresh.groups.interval.seconds).
func (t *Translator) await(ctx context.Context, group string, parts []PartitionTranslation) (time.Duration, error) {
	start := time.Now()
	t.deadlineOnce.Do(func() { t.deadline = start.Add(t.cfg.Wait) })
	if err := t.checkpoints.read(ctx); err != nil {
		return 0, err
	}
	prev := t.snapshot(group, parts)
	logged := false
	for {
		if err := t.checkpoints.read(ctx); err != nil {
			return time.Since(start), err
		}
		cur := t.snapshot(group, parts)
		pending := pendingCheckpoints(parts, prev, cur)
		left := time.Until(t.deadline)
		if pending == 0 || left <= 0 {
			return time.Since(start), nil
		}
		if !logged {
			t.logger.Info("wait for mm2 checkpoints", "group", group, "pending", pending, "left", left)
			logged = true
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("wait for checkpoints: %w", ctx.Err())
		case <-time.After(min(t.cfg.PollInterval, left)):
		}
		prev = cur
	}
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
		case c == nil, c.UpstreamOffset > p.Committed, prev[i] == nil, *prev[i] != *c:
			n++
		}
	}
	return n
}
