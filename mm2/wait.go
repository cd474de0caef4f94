package mm2

import (
	"context"
	"fmt"
	"time"
)

// await reads the checkpoints topic until every checkpoint parts need is present, not stale,
// and unchanged between two consecutive reads, or until Config.Wait has passed since the first
// read. The first two reads follow each other at once, so nothing is waited for when all
// checkpoints are present and still. A group MM2 does not checkpoint at all while it does
// checkpoint others (the group filter trap) is not waited for: MM2 discovers groups only every
// refresh.groups.interval.seconds (default 10 minutes), far longer than a sensible wait.
func (t *Translator) await(ctx context.Context, group string, parts []PartitionTranslation) (time.Duration, error) {
	start := time.Now()
	if err := t.checkpoints.read(ctx); err != nil {
		return 0, err
	}
	prev := t.snapshot(group, parts)
	logged := false
	for {
		if mine, others, _ := t.checkpoints.groupStats(group); mine == 0 && others > 0 {
			return time.Since(start), nil
		}
		if err := t.checkpoints.read(ctx); err != nil {
			return time.Since(start), err
		}
		cur := t.snapshot(group, parts)
		pending := pendingCheckpoints(parts, prev, cur)
		elapsed := time.Since(start)
		if pending == 0 || elapsed >= t.cfg.Wait {
			return elapsed, nil
		}
		if !logged {
			t.logger.Info("wait for mm2 checkpoints", "group", group, "pending", pending, "wait", t.cfg.Wait)
			logged = true
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("wait for checkpoints: %w", ctx.Err())
		case <-time.After(min(t.cfg.PollInterval, t.cfg.Wait-elapsed)):
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
