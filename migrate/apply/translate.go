package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// SinkTranslation is a sink entry's "translation" in the report (docs/migration.md, "The
// report"): the counts of mm2's translation object, then what an operator must review: a
// rewritten topics.regex, the group filter trap, and every partition that is not exact, with its
// reason.
type SinkTranslation struct {
	mm2.Report
	// TopicsRegex flags a rewritten (or kept) topics.regex: "from -> to: note".
	TopicsRegex string `json:"topics_regex,omitempty"`
	// GroupFilterTrap says that MM2 does not checkpoint the group, and what to change.
	GroupFilterTrap string `json:"group_filter_trap,omitempty"`
	// NotExact lists the replay and missing partitions with their reasons (and --exact's
	// scan when it ran and fell back).
	NotExact []mm2.PartitionTranslation `json:"not_exact,omitempty"`

	// All is every partition, for the cutover report.
	All []mm2.PartitionTranslation `json:"-"`
}

// translateSink translates c's offsets through m and returns the offsets for B: the translated ones, and a
// reset (null offset) for each missing partition. c's config on B, its topics renamed, is
// ConfigOnB's (renamed). blocked: MirrorMaker 2 will not checkpoint c's group (mm2health.go),
// so no checkpoint is waited for.
func translateSink(ctx context.Context, m *fleet.MM2, c *fleet.Connector, blocked bool) ([]events.ConnectorOffset, any, error) {
	committed, err := mm2.SinkPartitions(c.Offsets)
	if err != nil {
		return nil, nil, fmt.Errorf("read the sink offsets of group %q on A: %w", c.Group, err)
	}
	translate := m.Translator.TranslateGroup
	if blocked {
		translate = m.Translator.TranslateGroupNow // no checkpoint will come: none is waited for
	}
	tr, err := translate(ctx, c.Group, committed)
	if err != nil {
		return nil, nil, err
	}
	d := &SinkTranslation{Report: tr.Report, GroupFilterTrap: tr.GroupFilterTrap, All: tr.Partitions}
	for _, p := range tr.Partitions {
		if p.Verdict != mm2.VerdictExact {
			d.NotExact = append(d.NotExact, p)
		}
	}
	_, d.TopicsRegex, err = hazard.RewriteConfig(m.Policy, c.Config)
	if err != nil {
		return nil, d, err
	}
	if tr.AllExact() {
		return tr.ConnectorOffsets(), d, nil
	}
	summary := summarize(tr)
	if !m.AllowReplay {
		return nil, d, fleet.Errorf("sink offsets of group %q are not all exact: %s; %s accepts them", c.Group, summary, fleet.AllowReplay)
	}
	if m.Logger != nil {
		fleet.Warn(m.Logger, fleet.Textf("sink offsets accepted with replay or missing partitions (%s)", fleet.AllowReplay), "connector", c.Name, "detail", summary)
	}
	return withResets(tr), d, nil
}

// withResets is tr's offsets plus a null offset (KIP-875's reset) for every missing partition:
// B's group then holds no offset for it, whatever MirrorMaker 2's group sync may have written
// there, and the sink starts it at the earliest record; a body whose partitions are all
// missing still says so, as Connect refuses an empty alter-offsets request.
func withResets(tr mm2.Translation) []events.ConnectorOffset {
	out := tr.ConnectorOffsets()
	for _, p := range tr.Partitions {
		if p.Verdict == mm2.VerdictMissing {
			o := handlers.SinkOffset(offsetstore.GroupOffset{Topic: p.Target.Topic, Partition: p.Target.Partition})
			o.Offset = nil
			out = append(out, o)
		}
	}
	return out
}

// summarize says in one line what is not exact in tr and why.
func summarize(tr mm2.Translation) string {
	var parts []string
	r := tr.Report
	if r.Replay > 0 {
		bound := "an unknown number of"
		if r.ReplayBound != nil {
			bound = fmt.Sprintf("at most %d", *r.ReplayBound)
		}
		parts = append(parts, fmt.Sprintf("%d of %d partitions replay (%s records delivered again)", r.Replay, r.Partitions, bound))
	}
	if r.Missing > 0 {
		var why []string
		for _, p := range tr.Partitions {
			if p.Verdict == mm2.VerdictMissing {
				why = append(why, p.Target.String()+": "+p.Reason)
			}
		}
		if tr.GroupFilterTrap != "" {
			why = []string{tr.GroupFilterTrap}
		}
		parts = append(parts, fmt.Sprintf("%d of %d partitions missing (no offset: the sink would start them at the earliest record of B's topic) [%s]",
			r.Missing, r.Partitions, strings.Join(why, "; ")))
	}
	return strings.Join(parts, "; ")
}
