package mm2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/internal/wording"
	"github.com/segmentio/kafka-go"
)

// MirrorMaker 2's health for one sink group: why checkpoints of the group will not come, found
// before anything is stopped, from MM2's configuration on B when it is readable (Setup) and
// from the checkpoints topic. Waiting is right only where a checkpoint may still come:
//
//   - MM2's config read: a checkpoint connector of the flow would checkpoint the group (enabled,
//     emit.checkpoints.enabled, offset syncs on, RUNNING with a task that has not failed when
//     its status was read, the group passing groups and groups.exclude, every topic of the
//     group's commits passing its topics and topics.exclude, and, when MM2's source connectors
//     were read, one of them replicating each topic): a missing checkpoint is MM2 not having
//     discovered the group yet (refresh.groups.interval.seconds), so the translation waits
//     (--checkpoint-wait). A filter MM2 reads as a Java regex that cannot be evaluated here
//     as Java would (filter.go) blocks too: the question is not answered, so nothing is
//     stopped. A check that could not be made (the status not read, a filter class of MM2's
//     user's own) is a finding that does not block;
//   - MM2's config not read: said in a finding that does not block;
//   - records of the group in the checkpoints topic, none of which can be read: blocked, with
//     their count and why;
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
	Key string `json:"key,omitempty"`
	// Message says what was found. A setting of the caller's run it names (the config topic
	// of MM2's connectors, the source alias, the maximum age, the replay allowed) is a typed
	// argument (wording.Setting), which the caller's reader spells.
	Message wording.Text `json:"message"`
	// Fix says which MM2 setting to change, and how, for both of MM2's deployments.
	Fix wording.Text `json:"fix,omitzero"`
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
	var topics []string
	for tp := range committed {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	slices.Sort(topics)
	notes := t.configFindings(group, topics, hc.Setup)
	if slices.ContainsFunc(notes, func(f Finding) bool { return f.Blocked }) {
		return notes, nil
	}
	if !hc.Setup.Known() {
		notes = append(notes, notRead(hc.Setup))
	}
	fs, err := t.checkpointFindings(ctx, group, committed, hc)
	if err != nil {
		return nil, err
	}
	return append(notes, fs...), nil
}

// notRead says that MM2's configuration was not found on B, so that neither its filters nor
// whether its checkpoint connector runs were checked.
func notRead(s Setup) Finding {
	looked := ""
	if len(s.Looked) > 0 {
		looked = " (" + strings.Join(s.Looked, "; ") + ")"
	}
	return Finding{Message: wording.Plain("MirrorMaker 2's checkpoint connector for this flow was not found on B" + looked +
		": neither its group and topic filters nor whether it is running were checked"),
		Fix: wording.Textf("name the Connect config topic that holds MirrorMaker 2's connectors with %s", wording.MM2ConfigTopic)}
}

// checkpointFindings judges the group by what the checkpoints topic holds.
func (t *Translator) checkpointFindings(ctx context.Context, group string, committed map[TopicPartition]int64, hc HealthCheck) ([]Finding, error) {
	cpTopic := t.cfg.Policy.CheckpointsTopic()
	if err := t.read(ctx); errors.Is(err, ErrNoCheckpointsTopic) {
		return []Finding{{Blocked: true, Message: wording.Textf("MirrorMaker 2's checkpoints topic %s does not exist on B: no checkpoint connector "+
			"ever ran for source alias %s (or %s or %s is not MM2's)", cpTopic, t.cfg.Policy.SourceAlias, wording.MM2SourceAlias, wording.ReplicationSeparator),
			Fix: wording.Plain("run MirrorMaker 2's MirrorCheckpointConnector for this flow, or give MM2's source alias and separator")}}, nil
	} else if err != nil {
		return nil, fmt.Errorf("check mm2 health of group %q: %w", group, err)
	}
	if len(committed) == 0 {
		return nil, nil
	}
	st := t.checkpoints.stats(group)
	if st.valid == 0 && st.refused == 0 { // none, or only tombstones
		fs := t.noCheckpoint(group, hc.Setup, st)
		if st.unattributed > 0 {
			fs = append(fs, Finding{Message: wording.Textf("%s holds %d record(s) that could not be read at all, not even their group (the last, at offset %d: %v): "+
				"some may be checkpoints of group %q", cpTopic, st.unattributed, st.last.offset, st.last.err, group),
				Fix: wording.Plain(unreadableFix(st.last.err, cpTopic))})
		}
		return fs, nil
	}
	if st.valid == 0 && st.refused > 0 {
		// Every checkpoint record of the group was refused: none can be used, and MM2 keeps
		// writing the same way.
		return []Finding{{Blocked: true,
			Message: wording.Textf("none of the %d checkpoint records of group %q in %s could be read (the last, at offset %d: %v): no checkpoint of the group is usable",
				st.refused, group, cpTopic, st.lastMine.offset, st.lastMine.err),
			Fix: wording.Plain(unreadableFix(st.lastMine.err, cpTopic))}}, nil
	}
	if hc.MaxAge <= 0 {
		return nil, nil
	}
	return t.ageFindings(ctx, group, committed, hc)
}

// unreadableFix says what to do about checkpoint records that cannot be read, by why.
func unreadableFix(err error, topic string) string {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Reason == ReasonWrapped {
		return "run MirrorMaker 2's connectors with key.converter and value.converter = org.apache.kafka.connect.converters.ByteArrayConverter " +
			"(as connect-mirror-maker.sh and Strimzi do): its checkpoints are then written in MM2's own format, which is read here"
	}
	return "find what writes these records to " + topic + ": MirrorMaker 2's MirrorCheckpointConnector writes its own binary format (docs/mirrormaker2.md, \"Checkpoint records\")"
}

// configFindings judges the group, whose committed offsets are for topics (A's names), against
// MM2's configuration, when it was read.
func (t *Translator) configFindings(group string, topics []string, s Setup) []Finding {
	p := t.cfg.Policy
	var out []Finding
	for _, c := range s.Source {
		if c.disabled(EmitOffsetSyncsKey) {
			out = append(out, Finding{Key: EmitOffsetSyncsKey, Blocked: true,
				Message: wording.Textf("%s has %s=false: it writes no offset syncs, so MM2 translates no offset and writes no checkpoint (Kafka 3.9+, KIP-1031)",
					c.where(), EmitOffsetSyncsKey),
				Fix: wording.Plain(fixFor(p, &c, "MirrorSourceConnector", EmitOffsetSyncsKey, "true (the default)"))})
		}
	}
	out = append(out, sourceTopicFindings(p, s.Source, topics)...)
	if !s.Known() {
		return out
	}
	// The group is checkpointed when one checkpoint connector of the flow takes it: then only
	// that connector's notes are said.
	var blocked []Finding
	for _, c := range s.Checkpoint {
		fs := t.checkpointConnectorFindings(group, topics, c)
		if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Blocked }) {
			return append(out, fs...)
		}
		blocked = append(blocked, fs...)
	}
	return append(out, blocked...)
}

// checkpointConnectorFindings says why checkpoint connector c does not checkpoint group for
// topics: its switches, its status when read, its group filter and its topic filter
// (MirrorCheckpointConnector checkpoints a group only for the topics its topic filter takes,
// and not at all when it takes none of them).
func (t *Translator) checkpointConnectorFindings(group string, topics []string, c MM2Connector) []Finding {
	p := t.cfg.Policy
	const class = "MirrorCheckpointConnector"
	var out []Finding
	for _, key := range []string{EnabledKey, EmitCheckpointsKey, EmitOffsetSyncsKey} {
		if c.disabled(key) {
			why := "it writes no checkpoint"
			if key == EmitOffsetSyncsKey {
				why = "it cannot run without offset syncs (Kafka 3.9+, KIP-1031)"
			}
			out = append(out, Finding{Key: key, Blocked: true, Message: wording.Textf("%s has %s=false: %s", c.where(), key, why),
				Fix: wording.Plain(fixFor(p, &c, class, key, "true (the default)"))})
		}
	}
	out = append(out, statusFindings(c)...)
	if fc, ok := c.setting(GroupFilterClassKey); ok && strings.TrimSpace(fc) != "" && !strings.HasSuffix(strings.TrimSpace(fc), "DefaultGroupFilter") {
		out = append(out, Finding{Key: GroupFilterClassKey,
			Message: wording.Textf("%s has its own %s (%s): whether it takes group %q is not judged here", c.where(), GroupFilterClassKey, strings.TrimSpace(fc), group)})
	} else {
		gf := groupFilter(c)
		switch v := gf.judge(group); {
		case v.err != nil:
			out = append(out, undecided(p, &c, class, v, "group", group))
		case v.passes:
		case v.by.key == GroupsKey:
			out = append(out, Finding{Key: GroupsKey, Blocked: true,
				Message: wording.Textf("%s does not include group %q: its %s (%s) does not match it", c.where(), group, GroupsKey, gf.include.shown()),
				Fix:     wording.Plain(fixFor(p, &c, class, GroupsKey, strings.Join(append(splitList(gf.include.value), regexpQuote(group)), ", ")))})
		default:
			out = append(out, Finding{Key: GroupsExcludeKey, Blocked: true,
				Message: wording.Textf("%s excludes group %q: its %s (%s) matches it, so MM2 never checkpoints the group", c.where(), group, GroupsExcludeKey, gf.exclude.shown()),
				Fix:     wording.Plain(fixFor(p, &c, class, GroupsExcludeKey, listValue(without(splitList(gf.exclude.value), group))) + refreshNote)})
		}
	}
	return append(out, topicFindings(p, c, class, topics, "checkpoints the group only for the topics it takes: partitions of")...)
}

// topicFindings judges c's topic filter on the sink's topics.
func topicFindings(p Policy, c MM2Connector, class string, topics []string, why string) []Finding {
	if fc, ok := c.setting(TopicFilterClassKey); ok && strings.TrimSpace(fc) != "" && !strings.HasSuffix(strings.TrimSpace(fc), "DefaultTopicFilter") {
		return []Finding{{Key: TopicFilterClassKey,
			Message: wording.Textf("%s has its own %s (%s): whether it takes topics %s is not judged here", c.where(), TopicFilterClassKey, strings.TrimSpace(fc), strings.Join(topics, ", "))}}
	}
	tf := topicFilter(c)
	var out []Finding
	left := map[string][]string{} // by the setting that leaves them out
	for _, topic := range topics {
		switch v := tf.judge(topic); {
		case v.err != nil:
			out = append(out, undecided(p, &c, class, v, "topic", topic))
		case !v.passes:
			left[v.by.key] = append(left[v.by.key], topic)
		case !tf.exclude.set:
			// MM2's default topics.exclude changed between releases: a topic only the
			// earlier default excludes depends on B's MirrorMaker 2 version.
			if m, err := legacyTopicsExcludeRE.Matches(topic); err == nil && m {
				out = append(out, Finding{Key: TopicsExcludeKey, Blocked: true,
					Message: wording.Textf("%s does not set %s, and MM2's default depends on its release: earlier ones exclude %s (%s), later ones do not (%s)",
						c.where(), TopicsExcludeKey, topic, legacyTopicsExclude, DefaultTopicsExclude),
					Fix: wording.Plain(fixFor(p, &c, class, TopicsExcludeKey, DefaultTopicsExclude))})
			}
		}
	}
	for _, l := range []*listSetting{&tf.include, &tf.exclude} {
		names := left[l.key]
		if len(names) == 0 {
			continue
		}
		verb, fix := "does not match", strings.Join(append(splitList(l.value), quoteAll(names)...), ", ")
		if l == &tf.exclude {
			verb, fix = "matches", listValue(without(splitList(l.value), names...))
		}
		out = append(out, Finding{Key: l.key, Blocked: true,
			Message: wording.Textf("%s leaves out topic %s of the sink: its %s (%s) %s it, and it %s them get no checkpoint",
				c.where(), strings.Join(names, ", "), l.key, l.shown(), verb, why),
			Fix: wording.Plain(fixFor(p, &c, class, l.key, fix))})
	}
	return out
}

// sourceTopicFindings: topics no MirrorSourceConnector of the flow replicates get no offset
// sync, so no checkpoint. Judged only when MM2's source connectors were read.
func sourceTopicFindings(p Policy, sources []MM2Connector, topics []string) []Finding {
	var running []MM2Connector
	for _, c := range sources {
		if !c.disabled(EnabledKey) {
			running = append(running, c)
		}
	}
	if len(running) == 0 {
		return nil
	}
	var out []Finding
	for _, topic := range topics {
		var why []Finding
		for _, c := range running {
			fs := topicFindings(p, c, "MirrorSourceConnector", []string{topic}, "replicates, and writes offset syncs for, only the topics it takes:")
			if len(fs) == 0 || !fs[0].Blocked { // this one replicates it, or cannot be judged
				why = nil
				break
			}
			why = append(why, fs...)
		}
		out = append(out, why...)
	}
	return out
}

// listValue writes a LIST value for a fix; an empty one is said so.
func listValue(entries []string) string {
	if len(entries) == 0 {
		return `"" (empty)`
	}
	return strings.Join(entries, ", ")
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexpQuote(n)
	}
	return out
}

// statusFindings judges c's status on its Connect cluster, when it was read: a checkpoint
// connector that is not running, or whose every task failed, writes no checkpoint.
func statusFindings(c MM2Connector) []Finding {
	st := c.Status
	if st == nil {
		why := c.StatusUnread
		if why.IsZero() {
			why = wording.Plain("its status was not read")
		}
		return []Finding{{Message: wording.Textf("not checked whether %s is running: %v", c.where(), why),
			Fix: wording.Plain("check that it is RUNNING with running tasks before its checkpoints are relied on")}}
	}
	restart := wording.Textf("resume or restart it (PUT /connectors/%[1]s/resume, POST /connectors/%[1]s/restart?includeTasks=true&onlyFailed=true), then run again", c.Name)
	switch state := strings.ToUpper(st.Connector.State); state {
	case "RUNNING":
	case "FAILED", "PAUSED", "STOPPED":
		return []Finding{{Blocked: true, Message: wording.Textf("%s is %s on its Connect cluster: it writes no checkpoint%s", c.where(), state, firstLine(st.Connector.Trace)),
			Fix: restart}}
	default: // UNASSIGNED, RESTARTING: on its way
		return []Finding{{Message: wording.Textf("%s is %s on its Connect cluster: its checkpoints may lag until it runs", c.where(), state)}}
	}
	failed := 0
	var trace string
	for _, task := range st.Tasks {
		if strings.EqualFold(task.State, "FAILED") {
			failed++
			if trace == "" {
				trace = firstLine(task.Trace)
			}
		}
	}
	switch {
	case failed > 0 && failed == len(st.Tasks):
		return []Finding{{Blocked: true, Message: wording.Textf("every task of %s has FAILED: it writes no checkpoint%s", c.where(), trace), Fix: restart}}
	case failed > 0:
		return []Finding{{Message: wording.Textf("%d of the %d tasks of %s have FAILED: the groups they checkpoint get no checkpoint%s", failed, len(st.Tasks), c.where(), trace), Fix: restart}}
	}
	return nil
}

// firstLine is a trace's first line, for a message.
func firstLine(trace string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(trace), "\n")
	if line == "" {
		return ""
	}
	return " (" + line + ")"
}

const refreshNote = "; MM2 picks the group up within refresh.groups.interval.seconds (default 600) and checkpoints it every " +
	"emit.checkpoints.interval.seconds (default 60)"

// noCheckpoint judges a group with commits on A and no checkpoint at all.
func (t *Translator) noCheckpoint(group string, s Setup, st groupStats) []Finding {
	if s.Known() {
		return nil // a checkpoint connector takes the group: not discovered yet, waited for
	}
	if !excludedByDefault(group) {
		return nil // perhaps not discovered yet: waited for
	}
	looked := wording.Plain("no MirrorMaker 2 config was readable on B")
	if len(s.Looked) > 0 {
		looked = looked.Append(" (%s; name it with %s)", strings.Join(s.Looked, "; "), wording.MM2ConfigTopic)
	}
	return []Finding{{Key: GroupsExcludeKey, Blocked: true,
		Message: wording.Textf("%s has checkpoints of %d other groups but no checkpoint at all of group %q, which has committed offsets on A; "+
			"%s, and MirrorMaker 2's default %s (%s) excludes it: the likely cause. Had %s already been changed, MM2 has not discovered the group yet: "+
			"run again once a checkpoint of it is on B",
			t.cfg.Policy.CheckpointsTopic(), st.otherGroups, group, looked, GroupsExcludeKey, DefaultGroupsExclude, GroupsExcludeKey),
		Fix: wording.Plain(fixFor(t.cfg.Policy, nil, "MirrorCheckpointConnector", GroupsExcludeKey, "console-consumer-.*, __.*") + refreshNote)}}
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
		Message: wording.Textf("the newest checkpoint of group %q in %s is %s old (written %s), older than %s %s, while A's commits are ahead of it (%s): "+
			"MirrorMaker 2 no longer checkpoints the group (its checkpoint connector is stopped or failing, or the group was excluded since)",
			group, t.cfg.Policy.CheckpointsTopic(), age.Round(time.Second), newest.UTC().Format(time.RFC3339), wording.CheckpointMaxAge, hc.MaxAge, strings.Join(lagging, "; ")),
		Fix: wording.Textf("check MirrorMaker 2's MirrorCheckpointConnector for this flow (its status, and that groups and groups.exclude take the group), "+
			"then run again once its checkpoints are current; %s 0 skips this check", wording.CheckpointMaxAge)}}, nil
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
