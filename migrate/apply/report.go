package apply

import (
	"encoding/json"
	"io"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
)

// Outcome is what happened to one selected connector.
type Outcome string

// Outcomes of the report.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	// OutcomePlanned: a body was exported, or a dry-run request was planned by B's agent.
	OutcomePlanned Outcome = "planned"
	// OutcomeSkipped: bad input on A (or a stop barrier not reached): no body, no request.
	OutcomeSkipped Outcome = "skipped"
	// OutcomePending: the request was published and has no result yet, and B's agent may
	// still carry it out (the run was interrupted before the request's deadline, or requests
	// have none). The entry's message says when a re-run can tell.
	OutcomePending Outcome = "pending"
)

// Entry is one selected connector in the report.
type Entry struct {
	Name       string     `json:"name"`
	TargetName string     `json:"target_name"`
	Type       string     `json:"type"`
	Offsets    int        `json:"offsets"`
	Outcome    Outcome    `json:"outcome"`
	FailedStep string     `json:"failed_step"`
	Message    fleet.Text `json:"message"`
	RequestID  string     `json:"request_id"`
	// Translation is the SinkTranslator's detail for a sink (absent without one).
	Translation any `json:"translation,omitempty"`
	// Plan is what B's agent would write, from a dry run's planned result (secret values
	// hidden).
	Plan *events.Plan `json:"plan,omitempty"`
	// Manifest is the path of the connector's KafkaConnector manifest (Target), and
	// Warnings what the migration changed or found on the way (a name made a Kubernetes
	// name, a secret in clear text).
	Manifest string       `json:"manifest,omitempty"`
	Warnings []fleet.Text `json:"warnings,omitempty"`
	// Hazards are what the prechecks found would go wrong on B (the hazard package).
	Hazards []hazard.Hazard `json:"hazards,omitempty"`
	// Rewrites are the settings the migration changed for B itself, the edit flags' aside:
	// topics renamed by MirrorMaker 2's policy, the transform restoring A's topic names
	// (topicnames.go).
	Rewrites []plan.Edit `json:"config_rewrites,omitempty"`

	// Body is the KIP-995 body (nil when skipped). It holds secrets verbatim: never log it.
	Body *Body `json:"-"`

	// Connector is the connector as read from A.
	Connector *fleet.Connector `json:"-"`
	// Planned is the connector as the plan has it: its config on B, the repairs planned.
	Planned *plan.Connector `json:"-"`
	// Local: nothing to publish (a connector without offsets, into an operator-managed B).
	Local bool `json:"-"`
	// BornAfter is when the connector's offsets had been read on A (its wave built): its
	// connector on B is born after it.
	BornAfter time.Time `json:"-"`
	// StoppedBy says how the stop barrier established that A no longer runs it:
	// StoppedByREST, or how A's Kafka cluster showed that no worker of A holds it
	// (workersofa.go); "" when it was not stopped. RecordAt is the offset of its latest
	// connector record in A's config topic, when the stop was established without A's REST API
	// (-1 unknown).
	StoppedBy string `json:"-"`
	RecordAt  int64  `json:"-"`
	// drained is how long A's sink took, after its sources stopped, to consume all they wrote
	// on A (a sink that follows its sources: follow.go).
	drained time.Duration
}

// follows is the sources the entry's sink follows (nil for none).
func (e *Entry) follows() *hazard.Following {
	if e.Planned == nil {
		return nil
	}
	return e.Planned.Follows
}

// Rekey is the re-key of the entry's Debezium offsets to its logical name on B (nil for none).
func (e *Entry) Rekey() *fleet.Rekey {
	if e.Planned == nil {
		return nil
	}
	return e.Planned.Rekey
}

func (e *Entry) skip(reason fleet.Text) {
	e.Outcome, e.Message, e.Body = OutcomeSkipped, reason, nil
}

// Report is the outcome of an export or a migration.
type Report struct {
	MigrationID string    `json:"migration_id"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Connectors  []*Entry  `json:"connectors"`

	// Next says what completes the migration, when something does (the manifests to apply).
	Next fleet.Text `json:"next,omitzero"`
	// Unfinished is, in a report of a run still going (MigrateOptions.Checkpoint: Finished
	// is zero), how many selected connectors are in waves not done yet, and not listed: those
	// of the wave under way may be stopped on A already (their states are recorded on B), the
	// others are untouched. 0 once the run ended.
	Unfinished int `json:"unfinished,omitempty"`

	// Publishing is when the first request was published (zero when none was): the time
	// before it went to reading A and the prechecks.
	Publishing time.Time `json:"-"`
}

// OK reports whether every selected connector succeeded or was planned (exit status 0).
func (r *Report) OK() bool {
	for _, e := range r.Connectors {
		if e.Outcome != OutcomeSucceeded && e.Outcome != OutcomePlanned {
			return false
		}
	}
	return true
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Connectors == nil {
		r.Connectors = []*Entry{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
