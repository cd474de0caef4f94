package mm2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/javaregex"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// Defaults: DefaultWait is --checkpoint-wait's (Config.Wait 0 means no wait, not this);
// DefaultPollInterval, DefaultScanLimit and DefaultScanTime are what Config's zero values mean.
const (
	DefaultWait         = 2 * time.Minute
	DefaultPollInterval = 5 * time.Second
	DefaultScanLimit    = 10000
	DefaultScanTime     = 30 * time.Second
)

// TopicPartition is a partition of a topic.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// String returns "topic-N", Kafka's usual way to write a partition.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// Verdict says how good a translated offset is.
type Verdict string

// The verdicts of a translated partition.
const (
	// VerdictExact: the sink continues on the target exactly where it stopped on the source.
	VerdictExact Verdict = "exact"
	// VerdictReplay: the offset is a lower bound: some records (ReplayBound, when known) are
	// delivered again; none is skipped.
	VerdictReplay Verdict = "replay"
	// VerdictMissing: no usable checkpoint; the partition gets no offset and the sink would
	// start at the earliest record of the target's topic.
	VerdictMissing Verdict = "missing"
)

// Config configures a Translator.
type Config struct {
	// Target is cluster B: it holds the checkpoints topic and the mirrored topics.
	Target kafkaio.Options
	// Policy is MM2's replication policy, with the source alias (A) and separator.
	Policy Policy
	// Wait is --checkpoint-wait: how long TranslateGroup waits while a needed checkpoint is
	// missing, stale or changed between two reads. Nothing is waited for when all are present
	// and still. The wait is counted from the Translator's first read of the checkpoints
	// topic, so that a run translating many groups waits at most Wait for MM2 in all, not Wait
	// per group. 0 reads twice and never waits.
	Wait time.Duration
	// PollInterval is the pause between reads while waiting; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Exact is --exact: refine each offset by matching the last consumed record (docs/migration.md, "--exact").
	Exact bool
	// Source is cluster A, read for --exact and by Back.
	Source kafkaio.Options
	// ScanLimit bounds the records --exact scans per partition, and each walk of Back (B's
	// records from a cut to the committed offset, A's records from the bound); 0 means
	// DefaultScanLimit.
	ScanLimit int
	// ScanTime bounds each walk of Back in time; 0 means DefaultScanTime. --exact is bounded
	// by ScanLimit alone.
	ScanTime time.Duration
	// OffsetSyncs, when set, is where MM2's offset syncs are read to bound each replay; without
	// them a replay's bound is unknown.
	OffsetSyncs *OffsetSyncsLocation
	// Logger receives progress logs (waits); nil discards them.
	Logger *slog.Logger
}

// Translator translates sink groups' offsets from cluster A to cluster B through MM2's
// checkpoints. It is safe for concurrent use; the checkpoints topic is read once for all groups
// and then only what was written since.
type Translator struct {
	cfg    Config
	logger *slog.Logger
	// deadline ends every wait: Config.Wait after the first read.
	deadlineOnce sync.Once
	deadline     time.Time
	checkpoints  *checkpointStore
	syncs        *syncStore // nil without Config.OffsetSyncs
	// source and target read single records and scan partitions for --exact.
	source, target *kafka.Client
	// afterRead, when set, runs after every read of the checkpoints topic (tests use it to
	// write between two reads).
	afterRead func()
}

// Target is cluster B as configured: where the checkpoints topic, and MM2's config, are read.
func (t *Translator) Target() kafkaio.Options { return t.cfg.Target }

// NewTranslator checks cfg and returns a Translator. It never dials.
func NewTranslator(cfg Config) (*Translator, error) {
	var errs []error
	if err := cfg.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.Target.Brokers) == 0 {
		errs = append(errs, errors.New("no target brokers"))
	}
	if cfg.Exact && len(cfg.Source.Brokers) == 0 {
		errs = append(errs, errors.New("exact refinement needs the source brokers"))
	}
	if cfg.Wait < 0 || cfg.PollInterval < 0 || cfg.ScanLimit < 0 || cfg.ScanTime < 0 {
		errs = append(errs, errors.New("negative wait, poll interval, scan limit or scan time"))
	}
	if cfg.OffsetSyncs != nil && (cfg.OffsetSyncs.Topic == "" || len(cfg.OffsetSyncs.Cluster.Brokers) == 0) {
		errs = append(errs, errors.New("offset syncs need a topic and brokers"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new mm2 translator: %w", err)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ScanLimit == 0 {
		cfg.ScanLimit = DefaultScanLimit
	}
	if cfg.ScanTime == 0 {
		cfg.ScanTime = DefaultScanTime
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Translator{cfg: cfg, logger: logger, checkpoints: newCheckpointStore(cfg.Target, cfg.Policy.CheckpointsTopic()),
		source: kafkaio.NewClient(cfg.Source), target: kafkaio.NewClient(cfg.Target)}
	if cfg.OffsetSyncs != nil {
		t.syncs = newSyncStore(*cfg.OffsetSyncs)
	}
	return t, nil
}

// PartitionTranslation is the translation of one partition of a group.
type PartitionTranslation struct {
	// Source is the partition on A; Target the partition on B (renamed by the policy).
	Source TopicPartition `json:"source"`
	Target TopicPartition `json:"target"`
	// Committed is the group's committed offset on A (g).
	Committed int64   `json:"committed"`
	Verdict   Verdict `json:"verdict"`
	// Offset is the offset to commit on B; -1 when Verdict is missing.
	Offset int64 `json:"offset"`
	// ReplayBound is the most records delivered again from Offset; nil when unknown.
	ReplayBound *int64 `json:"replay_bound"`
	// Checkpoint is the checkpoint used, if any.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Reason explains a missing verdict, or a replay's cause.
	Reason string `json:"reason,omitempty"`
	// Scan is what --exact found, when it ran.
	Scan *ExactScan `json:"exact_scan,omitempty"`
}

// Report is the `translation` object of a sink entry in the export and migrate reports.
type Report struct {
	Policy     PolicyKind `json:"policy"`
	Partitions int        `json:"partitions"`
	Exact      int        `json:"exact"`
	Replay     int        `json:"replay"`
	Missing    int        `json:"missing"`
	// ReplayBound is the sum of the replay partitions' bounds; null when any is unknown.
	ReplayBound *int64 `json:"replay_bound"`
	// MissingPartitions names the missing partitions as "topic-N", with the topic as on B.
	MissingPartitions []string `json:"missing_partitions"`
}

// Translation is the translation of one group.
type Translation struct {
	Group      string                 `json:"group"`
	Partitions []PartitionTranslation `json:"partitions"`
	Report     Report                 `json:"translation"`
	// GroupFilterTrap is set when the group has no checkpoint at all while other groups have
	// some: MM2 does not checkpoint it. It says why and what to change.
	GroupFilterTrap string `json:"group_filter_trap,omitempty"`
	// Waited is how long TranslateGroup waited for checkpoints to appear or settle.
	Waited time.Duration `json:"waited"`
}

// Offsets returns the offsets to commit on B, by target partition: every partition that is not
// missing.
func (t Translation) Offsets() map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for _, p := range t.Partitions {
		if p.Verdict != VerdictMissing {
			out[p.Target] = p.Offset
		}
	}
	return out
}

// AllExact reports whether every partition is exact: what a migration without --allow-replay
// requires.
func (t Translation) AllExact() bool {
	return t.Report.Exact == t.Report.Partitions
}

// TranslateGroup translates the committed offsets of group on A (by partition of A's topics) to
// offsets on B. It waits as Config.Wait says, reads the checkpoints, gives every partition a
// verdict and, with Config.Exact, refines each. An error means nothing could be decided (the
// checkpoints topic is missing or unreadable, ctx ended); per-partition problems are verdicts.
func (t *Translator) TranslateGroup(ctx context.Context, group string, offsets map[TopicPartition]int64) (Translation, error) {
	return t.translateGroup(ctx, group, offsets, false)
}

// TranslateGroupNow is TranslateGroup without the wait: for a group whose checkpoints Health
// found will not come.
func (t *Translator) TranslateGroupNow(ctx context.Context, group string, offsets map[TopicPartition]int64) (Translation, error) {
	return t.translateGroup(ctx, group, offsets, true)
}

func (t *Translator) translateGroup(ctx context.Context, group string, offsets map[TopicPartition]int64, noWait bool) (Translation, error) {
	parts := make([]PartitionTranslation, 0, len(offsets))
	for tp, g := range offsets {
		parts = append(parts, PartitionTranslation{Source: tp, Committed: g,
			Target: TopicPartition{Topic: t.cfg.Policy.RemoteTopic(tp.Topic), Partition: tp.Partition}})
	}
	slices.SortFunc(parts, func(a, b PartitionTranslation) int {
		return cmp.Or(cmp.Compare(a.Source.Topic, b.Source.Topic), cmp.Compare(a.Source.Partition, b.Source.Partition))
	})
	tr := Translation{Group: group, Partitions: parts}

	rs, err := t.await(ctx, group, parts, noWait)
	tr.Waited = rs.waited
	if err != nil {
		return Translation{}, fmt.Errorf("translate group %q: %w", group, err)
	}
	if t.syncs != nil {
		if err := t.syncs.read(ctx); err != nil {
			return Translation{}, fmt.Errorf("translate group %q: %w", group, err)
		}
	}
	st := t.checkpoints.stats(group)
	if st.mine == 0 && st.otherGroups > 0 {
		tr.GroupFilterTrap = groupFilterTrap(group, t.cfg.Policy.CheckpointsTopic(), st.otherGroups)
	}
	for i := range tr.Partitions {
		t.judge(&tr.Partitions[i], group, rs.checkpoints[i], rs.moving[i], tr.GroupFilterTrap, st)
	}
	if t.cfg.Exact {
		if err := t.refineAll(ctx, tr.Partitions); err != nil {
			return Translation{}, fmt.Errorf("translate group %q: %w", group, err)
		}
	}
	tr.Report = report(t.cfg.Policy.kind(), tr.Partitions)
	return tr, nil
}

// judge gives p its verdict from its checkpoint cp as await last read it (nil when none), the
// store's refusals and the offset syncs, when read. A checkpoint still moving when the wait
// ended is used, as the lower bound it is, but never called exact.
func (t *Translator) judge(p *PartitionTranslation, group string, cp *Checkpoint, moving bool, trap string, st groupStats) {
	g := p.Committed
	p.Offset = -1
	_, _, ref := t.checkpoints.lookup(checkpointKey{group, p.Target.Topic, p.Target.Partition})
	if cp == nil {
		p.Verdict = VerdictMissing
		switch {
		case ref != nil:
			p.Reason = fmt.Sprintf("checkpoint record at offset %d of %s refused: %v", ref.offset, t.cfg.Policy.CheckpointsTopic(), ref.err)
		case trap != "":
			p.Reason = "no checkpoint for this group: " + trap
		default:
			p.Reason = "no checkpoint for this partition (MM2 has no offset sync for it yet, filters its topic out, " +
				"or the group is behind the oldest sync MM2 keeps)"
		}
		if st.unattributed > 0 && ref == nil {
			p.Reason += fmt.Sprintf("; %d records of %s could not be read at all, the last at offset %d: %v",
				st.unattributed, t.cfg.Policy.CheckpointsTopic(), st.last.offset, st.last.err)
		}
		return
	}
	c := *cp
	p.Checkpoint = &c
	switch {
	case c.UpstreamOffset > g:
		p.Verdict = VerdictMissing
		p.Reason = fmt.Sprintf("stale checkpoint refused: its upstreamOffset %d is above the committed offset %d "+
			"(a checkpoint of an older generation of the group)", c.UpstreamOffset, g)
		return
	case c.UpstreamOffset < 0 || c.Offset < 0:
		p.Verdict = VerdictMissing
		p.Reason = fmt.Sprintf("checkpoint refused: negative offset (upstreamOffset %d, offset %d)", c.UpstreamOffset, c.Offset)
		return
	}
	p.Offset = c.Offset
	var b bound
	if t.syncs != nil {
		b = t.syncs.replayBound(p.Source, g, c.Offset)
	}
	switch {
	case b.skips:
		p.Verdict = VerdictMissing
		p.Reason = fmt.Sprintf("checkpoint refused: its offset %d is past where offset sync (upstream %d, downstream %d) puts "+
			"the next record; the sink would skip records (MM2 before 3.4.1/3.5.0 extrapolated)", c.Offset, b.sync.UpstreamOffset, b.sync.Offset)
	case c.UpstreamOffset == g && !moving && (!b.known || b.replay == 0):
		// Without offset syncs this is exact as docs/migration.md, "Verdicts" defines it: MM2
		// checkpointed the group's current commit. MM2's offset is still a lower bound
		// (docs/mirrormaker2.md, "Translation"); --exact or the syncs prove it.
		p.Verdict, p.ReplayBound = VerdictExact, ptr(int64(0))
	default:
		p.Verdict = VerdictReplay
		if b.known {
			p.ReplayBound = ptr(b.replay)
		}
		switch {
		case moving:
			p.Reason = "checkpoint still moving when the wait ended: MM2 is catching up; its offset is a lower bound"
		case c.UpstreamOffset == g:
			p.Reason = fmt.Sprintf("checkpoint is current but MM2's nearest offset sync (upstream %d) is %d records back",
				b.sync.UpstreamOffset, g-b.sync.UpstreamOffset)
		default:
			p.Reason = fmt.Sprintf("checkpoint lags: upstreamOffset %d, committed offset %d", c.UpstreamOffset, g)
		}
	}
}

// report counts the verdicts.
func report(kind PolicyKind, parts []PartitionTranslation) Report {
	r := Report{Policy: kind, Partitions: len(parts), ReplayBound: ptr(int64(0)), MissingPartitions: []string{}}
	for _, p := range parts {
		switch p.Verdict {
		case VerdictExact:
			r.Exact++
		case VerdictReplay:
			r.Replay++
			if p.ReplayBound == nil {
				r.ReplayBound = nil
			} else if r.ReplayBound != nil {
				*r.ReplayBound += *p.ReplayBound
			}
		case VerdictMissing:
			r.Missing++
			r.MissingPartitions = append(r.MissingPartitions, p.Target.String())
		}
	}
	return r
}

// defaultGroupsExclude is MM2's default groups.exclude (DefaultGroupFilter), a Java regex.
var defaultGroupsExclude = javaregex.MustCompile(strings.Join(splitList(DefaultGroupsExclude), "|"))

// excludedByDefault reports whether MM2's default groups.exclude matches group.
func excludedByDefault(group string) bool {
	m, err := defaultGroupsExclude.Matches(group)
	return err == nil && m
}

// groupFilterTrap explains why MM2 has no checkpoint for group while it has some for others.
func groupFilterTrap(group, topic string, others int) string {
	if excludedByDefault(group) {
		return fmt.Sprintf("%s has checkpoints for %d other groups but none for %q: MirrorMaker 2's default "+
			"groups.exclude (console-consumer-.*, connect-.*, __.*) excludes Connect sink groups. Set groups.exclude on "+
			"the MirrorCheckpointConnector (in MM2's config: <source>-><target>.groups.exclude), e.g. to "+
			"\"console-consumer-.*, __.*\", or list the group in groups; MM2 picks it up within "+
			"refresh.groups.interval.seconds (default 600) and checkpoints it every emit.checkpoints.interval.seconds (default 60)",
			topic, others, group)
	}
	return fmt.Sprintf("%s has checkpoints for %d other groups but none for %q: MirrorMaker 2's groups or groups.exclude "+
		"filter leaves it out, its topics are filtered out (topics, topics.exclude), or MM2 has not discovered it yet "+
		"(refresh.groups.interval.seconds, default 600)", topic, others, group)
}

func ptr[T any](v T) *T { return &v }
