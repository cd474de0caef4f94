package mm2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// MirrorMaker 2's health for one sink group: why checkpoints of the group will not come, found
// before anything is stopped, from MM2's configuration on B when it is readable (Setup) and
// from the checkpoints topic. Waiting is right only where a checkpoint may still come:
//
//   - MM2's config read: a checkpoint connector of the flow would checkpoint the group (enabled,
//     emit.checkpoints.enabled, offset syncs on, the group passing groups and groups.exclude): a
//     missing checkpoint is MM2 not having discovered the group yet
//     (refresh.groups.interval.seconds), so the translation waits (--checkpoint-wait);
//   - no config read and no checkpoint of the group at all while A holds its commits: a group
//     MM2's default groups.exclude matches (connect-<name>) is blocked, named as the likely
//     cause; another is waited for;
//   - the group has checkpoints, but the newest is older than the maximum age while some
//     partition's checkpoint lags A's commit: MM2 stopped checkpointing it (its checkpoint
//     connector stopped, or the group excluded since), unless the group just committed: the
//     record it consumed last on A (at the committed offset - 1) is younger than the maximum
//     age, so MM2 may not have had its emit.checkpoints.interval.seconds yet. Without A's
//     brokers that record cannot be read, and the lag is blocked.

// Finding is one thing the health check found about a group.
type Finding struct {
	// Key is the MM2 setting concerned ("" for none).
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
	// Fix says which MM2 setting to change, and how, for both of MM2's deployments.
	Fix string `json:"fix,omitempty"`
	// Blocked: no checkpoint of the group will come as things are; waiting is pointless.
	Blocked bool `json:"blocked"`
}

// HealthCheck is what Health judges a group with besides the checkpoints topic.
type HealthCheck struct {
	// Setup is MM2's configuration as read on B (ReadSetup); empty when none was readable.
	Setup Setup
	// MaxAge is --checkpoint-max-age; 0 skips the age check.
	MaxAge time.Duration
	// Now is the time checkpoints are aged against; zero means time.Now().
	Now time.Time
}

// Health says why MM2 will not checkpoint group, whose committed offsets on A are committed (by
// A's partition), as the comment above says; no finding means none was found. An error means
// nothing could be judged (ctx ended, the checkpoints topic unreadable).
func (t *Translator) Health(ctx context.Context, group string, committed map[TopicPartition]int64, hc HealthCheck) ([]Finding, error) {
	if hc.Now.IsZero() {
		hc.Now = time.Now()
	}
	if fs := t.configFindings(group, hc.Setup); len(fs) > 0 {
		return fs, nil
	}
	cpTopic := t.cfg.Policy.CheckpointsTopic()
	if err := t.read(ctx); errors.Is(err, ErrNoCheckpointsTopic) {
		return []Finding{{Blocked: true, Message: fmt.Sprintf("MirrorMaker 2's checkpoints topic %s does not exist on B: no checkpoint connector "+
			"ever ran for source alias %s (or --mm2-source-alias or --replication-separator is not MM2's)", cpTopic, t.cfg.Policy.SourceAlias),
			Fix: "run MirrorMaker 2's MirrorCheckpointConnector for this flow, or give MM2's source alias and separator"}}, nil
	} else if err != nil {
		return nil, fmt.Errorf("check mm2 health of group %q: %w", group, err)
	}
	if len(committed) == 0 {
		return nil, nil
	}
	st := t.checkpoints.stats(group)
	if st.mine == 0 {
		return t.noCheckpoint(group, hc.Setup, st), nil
	}
	if hc.MaxAge <= 0 {
		return nil, nil
	}
	return t.ageFindings(ctx, group, committed, hc)
}

// configFindings judges the group against MM2's configuration, when it was read.
func (t *Translator) configFindings(group string, s Setup) []Finding {
	p := t.cfg.Policy
	var out []Finding
	for _, c := range s.Source {
		if c.disabled(EmitOffsetSyncsKey) {
			out = append(out, Finding{Key: EmitOffsetSyncsKey, Blocked: true,
				Message: fmt.Sprintf("%s has %s=false: it writes no offset syncs, so MM2 translates no offset and writes no checkpoint (Kafka 3.9+, KIP-1031)",
					c.where(), EmitOffsetSyncsKey),
				Fix: fixFor(p, &c, "MirrorSourceConnector", EmitOffsetSyncsKey, "true (the default)")})
		}
	}
	if !s.Known() {
		return out
	}
	// The group is checkpointed when one checkpoint connector of the flow takes it.
	var blocked []Finding
	for _, c := range s.Checkpoint {
		fs := t.checkpointConnectorFindings(group, c)
		if len(fs) == 0 {
			return out
		}
		blocked = append(blocked, fs...)
	}
	return append(out, blocked...)
}

// checkpointConnectorFindings says why checkpoint connector c does not checkpoint group.
func (t *Translator) checkpointConnectorFindings(group string, c MM2Connector) []Finding {
	p := t.cfg.Policy
	const class = "MirrorCheckpointConnector"
	var out []Finding
	for _, key := range []string{EnabledKey, EmitCheckpointsKey, EmitOffsetSyncsKey} {
		if c.disabled(key) {
			why := "it writes no checkpoint"
			if key == EmitOffsetSyncsKey {
				why = "it cannot run without offset syncs (Kafka 3.9+, KIP-1031)"
			}
			out = append(out, Finding{Key: key, Blocked: true, Message: fmt.Sprintf("%s has %s=false: %s", c.where(), key, why),
				Fix: fixFor(p, &c, class, key, "true (the default)")})
		}
	}
	if fc, ok := c.setting(GroupFilterClassKey); ok && strings.TrimSpace(fc) != "" && !strings.HasSuffix(strings.TrimSpace(fc), "DefaultGroupFilter") {
		return out // a group filter of its own: its settings cannot be judged here
	}
	groups, set := c.setting(GroupsKey)
	if !set {
		groups = DefaultGroups
	}
	if in, ok := matchesList(splitList(groups), group); ok && !in {
		out = append(out, Finding{Key: GroupsKey, Blocked: true,
			Message: fmt.Sprintf("%s does not include group %q: its %s (%s) does not match it", c.where(), group, GroupsKey, groups),
			Fix:     fixFor(p, &c, class, GroupsKey, strings.Join(append(splitList(groups), regexpQuote(group)), ", "))})
	}
	exclude, set := c.setting(GroupsExcludeKey, groupsBlacklistKey)
	shown := exclude
	if !set {
		exclude, shown = DefaultGroupsExclude, "not set, so MM2's default: "+DefaultGroupsExclude
	}
	if ex, ok := matchesList(splitList(exclude), group); ok && ex {
		out = append(out, Finding{Key: GroupsExcludeKey, Blocked: true,
			Message: fmt.Sprintf("%s excludes group %q: its %s (%s) matches it, so MM2 never checkpoints the group", c.where(), group, GroupsExcludeKey, shown),
			Fix:     fixFor(p, &c, class, GroupsExcludeKey, strings.Join(without(splitList(exclude), group), ", ")) + refreshNote})
	}
	return out
}

const refreshNote = "; MM2 picks the group up within refresh.groups.interval.seconds (default 600) and checkpoints it every " +
	"emit.checkpoints.interval.seconds (default 60)"

// noCheckpoint judges a group with commits on A and no checkpoint at all.
func (t *Translator) noCheckpoint(group string, s Setup, st groupStats) []Finding {
	if s.Known() {
		return nil // a checkpoint connector takes the group: not discovered yet, waited for
	}
	if !excludedByDefault.MatchString(group) {
		return nil // perhaps not discovered yet: waited for
	}
	looked := "no MirrorMaker 2 config was readable on B"
	if len(s.Looked) > 0 {
		looked += " (" + strings.Join(s.Looked, "; ") + "; name it with --mm2-config-topic)"
	}
	return []Finding{{Key: GroupsExcludeKey, Blocked: true,
		Message: fmt.Sprintf("%s has checkpoints of %d other groups but no checkpoint at all of group %q, which has committed offsets on A; "+
			"%s, and MirrorMaker 2's default %s (%s) excludes it: the likely cause. Had %s already been changed, MM2 has not discovered the group yet: "+
			"run again once a checkpoint of it is on B",
			t.cfg.Policy.CheckpointsTopic(), st.otherGroups, group, looked, GroupsExcludeKey, DefaultGroupsExclude, GroupsExcludeKey),
		Fix: fixFor(t.cfg.Policy, nil, "MirrorCheckpointConnector", GroupsExcludeKey, "console-consumer-.*, __.*") + refreshNote}}
}

// ageFindings blocks a group whose newest checkpoint is older than hc.MaxAge while a partition's
// checkpoint lags A's commit and the group did not just commit (see the comment above).
func (t *Translator) ageFindings(ctx context.Context, group string, committed map[TopicPartition]int64, hc HealthCheck) ([]Finding, error) {
	newest := t.checkpoints.newest(group)
	age := hc.Now.Sub(newest)
	if age <= hc.MaxAge {
		return nil, nil
	}
	tps := make([]TopicPartition, 0, len(committed))
	for tp := range committed {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int { return strings.Compare(a.String(), b.String()) })
	var lagging []string
	for _, tp := range tps {
		g := committed[tp]
		cp, ok, _ := t.checkpoints.lookup(checkpointKey{group, t.cfg.Policy.RemoteTopic(tp.Topic), tp.Partition})
		if g <= 0 || (ok && cp.UpstreamOffset == g) {
			continue
		}
		fresh, err := t.consumedSince(ctx, tp, g, hc.Now.Add(-hc.MaxAge))
		if err != nil {
			return nil, err
		}
		if fresh {
			continue // the group just committed: MM2 may not have checkpointed it yet
		}
		at := "none"
		if ok {
			at = fmt.Sprintf("upstreamOffset %d", cp.UpstreamOffset)
		}
		lagging = append(lagging, fmt.Sprintf("%s: committed %d, checkpoint %s", tp, g, at))
	}
	if len(lagging) == 0 {
		return nil, nil
	}
	return []Finding{{Blocked: true,
		Message: fmt.Sprintf("the newest checkpoint of group %q in %s is %s old (written %s), older than --checkpoint-max-age %s, while A's commits are ahead of it (%s): "+
			"MirrorMaker 2 no longer checkpoints the group (its checkpoint connector is stopped or failing, or the group was excluded since)",
			group, t.cfg.Policy.CheckpointsTopic(), age.Round(time.Second), newest.UTC().Format(time.RFC3339), hc.MaxAge, strings.Join(lagging, "; ")),
		Fix: "check MirrorMaker 2's MirrorCheckpointConnector for this flow (its status, and that groups and groups.exclude take the group), " +
			"then run again once its checkpoints are current; --checkpoint-max-age 0 skips this check"}}, nil
}

// consumedSince reports whether A's record at g-1 of tp (the last the group consumed) was
// written after since: the group committed it at or after that. false when A is not read or the
// record is gone.
func (t *Translator) consumedSince(ctx context.Context, tp TopicPartition, g int64, since time.Time) (bool, error) {
	if len(t.cfg.Source.Brokers) == 0 {
		return false, nil
	}
	f, err := fetch(ctx, t.source, tp.Topic, int(tp.Partition), g-1)
	if errors.Is(err, kafka.OffsetOutOfRange) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the record at offset %d of %s on A: %w", g-1, tp, err)
	}
	if len(f.records) == 0 || f.records[0].Offset != g-1 {
		return false, nil
	}
	return f.records[0].Time.After(since), nil
}

// regexpQuote writes group as a regexp matching only itself, in the syntax Java and Go share.
func regexpQuote(group string) string {
	var b strings.Builder
	for _, r := range group {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
