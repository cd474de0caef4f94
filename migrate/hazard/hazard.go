package hazard

import (
	"context"
	"log/slog"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// The cutover's hazards are what would go wrong on B for a selected connector, found before
// anything is stopped on A: they are part of the prechecks and of a dry run, named per
// connector in the report (Entry.Hazards). A hazard that refuses skips its connector: it is
// not stopped on A and nothing of it is published; one that does not is a warning the report
// carries.

// Checks that find hazards, as Hazard.Check says them.
const (
	// HazardPointsAtA: a config value still names A (its bootstrap servers, its cluster, a topic
	// MirrorMaker 2 renames on B).
	HazardPointsAtA = "points_at_a"
	// HazardFamilyState: state a connector family keeps outside Connect's topics (Debezium's
	// schema history, signal and heartbeat topics, a replication slot; a sink's own progress).
	HazardFamilyState = "family_state"
	// HazardPlugin: B lacks the connector's plugin, or B's Connect does not validate its config.
	HazardPlugin = "plugin"
	// HazardMM2: MirrorMaker 2 does not (or no longer does) checkpoint a sink's group.
	HazardMM2 = "mm2"
	// HazardTopicNames: across a replication policy that renames topics, a sink derives a
	// destination (a table, an index, a path, a transform's output) from its topics' names,
	// and offsetagent cannot give its records back their names on A (topicnames.go).
	HazardTopicNames = "topic_names"
)

// Hazard is one thing found about a connector before anything is stopped.
type Hazard struct {
	Check string `json:"check"`
	// Key is the config key concerned, when one is.
	Key string `json:"key,omitempty"`
	// Message says what is wrong. It never carries a secret value.
	Message fleet.Text `json:"message"`
	// Fix says what to do about it (a setting of the run, a setting on B or on MirrorMaker 2).
	Fix fleet.Text `json:"fix,omitzero"`
	// Refuse: the connector is skipped; otherwise the hazard is a warning.
	Refuse bool `json:"refuse"`
}

// String is h in the library's own words (fleet.GoWords).
func (h Hazard) String() string { return h.Spell(fleet.GoWords) }

// Spell is h in w's words: its key, message and fix.
func (h Hazard) Spell(w fleet.Words) string {
	s := h.Message.Spell(w)
	if h.Key != "" {
		s = h.Key + ": " + s
	}
	if !h.Fix.IsZero() {
		s += "; " + h.Fix.Spell(w)
	}
	return s
}

// textOf is s as a Text: a fleet.Text as it is, a string as fleet.Plain (it names no setting).
func textOf(s any) fleet.Text {
	switch s := s.(type) {
	case fleet.Text:
		return s
	case string:
		return fleet.Plain(s)
	}
	return fleet.Textf("%v", s)
}

// Subject is one selected connector as the hazard checks see it: A's connector, its name on B,
// what the checks found, and the repairs they plan for B: a sink that follows its sources
// (pipeline.go), the re-key of a Debezium connector's offsets (family.go), the transform that
// gives a sink's records back their topics' names on A (topicnames.go).
type Subject struct {
	Connector *fleet.Connector
	Target    string
	Hazards   []Hazard
	Follows   *Following
	Rekey     *fleet.Rekey
	Restore   *TopicRestore
}

// add records h on e; a refusing hazard makes the connector's first Problem, so that it is
// neither stopped on A nor published.
func (e *Subject) add(h Hazard) {
	e.Hazards = append(e.Hazards, h)
	if h.Refuse && e.Connector != nil && e.Connector.Problem.IsZero() {
		e.Connector.Problem = fleet.Textf("refused before anything was stopped (%s): %v", h.Check, h)
	}
}

// Options say what the hazard checks judge a connector's move by.
type Options struct {
	// Selection edits the configs for B (--set, --unset, --map-value) and keeps keys on A
	// (--keep-a).
	Selection source.Selection
	// MM2 are MirrorMaker 2's settings when the sinks' offsets are translated through its
	// checkpoints (nil otherwise): its policy renames the sinks' topics on B.
	MM2 *fleet.MM2
	// Translated: the sinks' offsets are translated (MM2, or another SinkTranslator), not
	// copied; SinkOffsets is the mode.
	Translated  bool
	SinkOffsets fleet.SinkOffsetsMode
	// SinkFollowsSource moves a pipeline that MM2's policy would cut apart on B (pipeline.go).
	SinkFollowsSource bool
	// StopSource: the run stops the connectors on A; StopPlanned: a dry run of such a run,
	// which stops nothing.
	StopSource, StopPlanned bool
	// Registry knows connector classes; Logger receives warnings. Neither is nil.
	Registry *connectors.Registry
	Logger   *slog.Logger
}

// Checks runs the hazard checks of one run against A (a) and B (b: nil for an export, which
// has no B).
type Checks struct {
	opts Options
	a    *source.A
	b    *B
	// Blocked are the sinks' groups MirrorMaker 2 will not checkpoint (mm2health.go): their
	// translation waits for no checkpoint.
	Blocked map[string]bool
}

// NewChecks are the hazard checks of opts against A (a) and B (b: nil for an export).
func NewChecks(opts Options, a *source.A, b *B) *Checks {
	return &Checks{opts: opts, a: a, b: b}
}

// B is what the hazard checks know of B: nil for an export, which has no B.
type B struct {
	Target target.Target
	// REST is B's Connect REST API (nil without Target.ConnectURL).
	REST *connectrest.Client
	// ids resolves the addresses the checks meet to Kafka cluster ids (identity.go), made on
	// first use.
	ids *identities
}

// CheckHazards runs every hazard check on the entries still without a Problem. Each check
// sees every one of them, also those an earlier check refused, so that one refusal hides no
// other hazard (a dry run lists all there is to fix); the connector's Problem is the first
// refusal.
func (hc *Checks) CheckHazards(ctx context.Context, entries []*Subject) {
	var todo []*Subject
	for _, e := range entries {
		if e.Connector != nil && e.Connector.Problem.IsZero() {
			todo = append(todo, e)
		}
	}
	all := []func(context.Context, []*Subject){
		// Each check appends what it finds with subject.add. The topic names first: they
		// decide the transform the config on B gets (ConfigOnB), which the others judge.
		hc.checkTopicNames,
		hc.checkPointsAtA,
		hc.checkFamilyState,
		hc.checkPlugins,
		hc.checkMM2,
	}
	refused := map[*Subject]fleet.Text{}
	for _, check := range all {
		check(ctx, todo)
		for _, e := range todo {
			if p := e.Connector.Problem; !p.IsZero() {
				if _, ok := refused[e]; !ok {
					refused[e] = p
				}
				e.Connector.Problem = fleet.Text{} // the next checks look at it too
			}
		}
	}
	for e, p := range refused {
		e.Connector.Problem = p
	}
}
