package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/offsetagent/offsetagent/events"
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
	Name       string  `json:"name"`
	TargetName string  `json:"target_name"`
	Type       string  `json:"type"`
	Offsets    int     `json:"offsets"`
	Outcome    Outcome `json:"outcome"`
	FailedStep string  `json:"failed_step"`
	Message    string  `json:"message"`
	RequestID  string  `json:"request_id"`
	// Translation is the SinkTranslator's detail for a sink (absent without one).
	Translation any `json:"translation,omitempty"`
	// Plan is what B's agent would write, from a dry run's planned result (secret values
	// hidden).
	Plan *events.Plan `json:"plan,omitempty"`
	// Manifest is the path of the connector's KafkaConnector manifest (StrimziTarget), and
	// Warnings what the migration changed or found on the way (a name made a Kubernetes
	// name, a secret in clear text).
	Manifest string   `json:"manifest,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Hazards are what the prechecks found would go wrong on B (hazards.go).
	Hazards []Hazard `json:"hazards,omitempty"`
	// Rewrites are the settings the migration changed for B itself, the edit flags' aside:
	// topics renamed by MirrorMaker 2's policy, the transform restoring A's topic names
	// (topicnames.go).
	Rewrites []ConfigRewrite `json:"config_rewrites,omitempty"`

	// Body is the KIP-995 body (nil when skipped). It holds secrets verbatim: never log it.
	Body *Body `json:"-"`

	connector *Connector
	// local: nothing to publish (a connector without offsets, into an operator-managed B).
	local bool
	// bornAfter is when the connector's offsets had been read on A (its wave built): its
	// connector on B is born after it.
	bornAfter time.Time
}

func (e *Entry) skip(reason string) {
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
	Next string `json:"next,omitempty"`

	// Cutover is the cutover report of a migration that is not a dry run (cutover.go),
	// verified when MigrateOptions.Verify is set; written apart (Cutover.WriteJSON).
	Cutover *Cutover `json:"-"`

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

// WritePlans writes the plan of every entry that has one as a JSON line: {"name",
// "target_name", "plan"}.
func (r *Report) WritePlans(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, e := range r.Connectors {
		if e.Plan == nil {
			continue
		}
		if err := enc.Encode(struct {
			Name       string       `json:"name"`
			TargetName string       `json:"target_name"`
			Plan       *events.Plan `json:"plan"`
		}{e.Name, e.TargetName, e.Plan}); err != nil {
			return err
		}
	}
	return nil
}

// WriteTable writes the summary table: connector, name on B, type, offsets, outcome, failing
// step, message.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONNECTOR\tNAME ON B\tTYPE\tOFFSETS\tOUTCOME\tFAILED STEP\tMESSAGE")
	counts := map[Outcome]int{}
	for _, e := range r.Connectors {
		counts[e.Outcome]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.Name, e.TargetName, dash(e.Type), e.Offsets, e.Outcome,
			dash(e.FailedStep), dash(oneLine(e.Message, 100)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	line := fmt.Sprintf("%d connectors: %d succeeded, %d planned, %d failed, %d skipped", len(r.Connectors),
		counts[OutcomeSucceeded], counts[OutcomePlanned], counts[OutcomeFailed], counts[OutcomeSkipped])
	if n := counts[OutcomePending]; n > 0 {
		line += fmt.Sprintf(", %d pending (B's agent may still create them: run again before acting on A)", n)
	}
	for _, e := range r.Connectors {
		for _, warn := range e.Warnings {
			line += fmt.Sprintf("\nwarning: %s: %s", e.Name, warn)
		}
		if e.Body != nil {
			line += rewriteLines(e.Name, e.Rewrites)
		}
	}
	line += hazardWarnings(r.Connectors)
	if r.Next != "" {
		line += "\n" + r.Next
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// rewriteLines are the lines of a connector's rewrites, one per reason: the settings changed
// for the same reason (the keys of one transform) share a line.
func rewriteLines(name string, rws []ConfigRewrite) string {
	var out strings.Builder
	for i := 0; i < len(rws); {
		j := i + 1
		for j < len(rws) && rws[j].Why == rws[i].Why {
			j++
		}
		var changes []string
		for _, rw := range rws[i:j] {
			changes = append(changes, rw.change())
		}
		fmt.Fprintf(&out, "\nrewritten for B: %s: %s: %s", name, strings.Join(changes, "; "), rws[i].Why)
		i = j
	}
	return out.String()
}

// hazardWarnings are the lines of the hazards that warn (a refusing one is its connector's
// message), one per text: the same warning of many connectors (B's plugins not checked) is one
// line naming them.
func hazardWarnings(entries []*Entry) string {
	var texts []string
	names := map[string][]string{}
	for _, e := range entries {
		for _, h := range e.Hazards {
			if h.Refuse {
				continue
			}
			text := h.Check + ": " + h.String()
			if _, seen := names[text]; !seen {
				texts = append(texts, text)
			}
			if n := names[text]; len(n) == 0 || n[len(n)-1] != e.Name {
				names[text] = append(n, e.Name)
			}
		}
	}
	var out strings.Builder
	for _, text := range texts {
		n := names[text]
		who := strings.Join(n, ", ")
		if len(n) > 5 {
			who = fmt.Sprintf("%s and %d more", strings.Join(n[:5], ", "), len(n)-5)
		}
		fmt.Fprintf(&out, "\nwarning: %s: %s", who, text)
	}
	return out.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a message on one table line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// redactURL hides a URL's password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable URL]"
	}
	return u.Redacted()
}
