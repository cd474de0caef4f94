package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// What a person reads of a migration is drawn here, from the typed values the library
// returns: the summary table of a report, the plans of a dry run, the summary of a cutover's
// verification and of a Strimzi verification. The library writes its reports as JSON only.

// writePlans writes the plan of every entry that has one as a JSON line: {"name",
// "target_name", "plan"}.
func writePlans(w io.Writer, r *apply.Report) error {
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

// writeTable writes the summary table: connector, name on B, type, offsets, outcome, failing
// step, message; then the warnings, the settings rewritten for B and what completes the
// migration.
func writeTable(w io.Writer, r *apply.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONNECTOR\tNAME ON B\tTYPE\tOFFSETS\tOUTCOME\tFAILED STEP\tMESSAGE")
	counts := map[apply.Outcome]int{}
	for _, e := range r.Connectors {
		counts[e.Outcome]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.Name, e.TargetName, dash(e.Type), e.Offsets, e.Outcome,
			dash(e.FailedStep), dash(oneLine(e.Message.Spell(flagWords), 100)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	line := fmt.Sprintf("%d connectors: %d succeeded, %d planned, %d failed, %d skipped", len(r.Connectors),
		counts[apply.OutcomeSucceeded], counts[apply.OutcomePlanned], counts[apply.OutcomeFailed], counts[apply.OutcomeSkipped])
	if n := counts[apply.OutcomePending]; n > 0 {
		line += fmt.Sprintf(", %d pending (B's agent may still create them: run again before acting on A)", n)
	}
	for _, e := range r.Connectors {
		for _, warn := range e.Warnings {
			line += fmt.Sprintf("\nwarning: %s: %s", e.Name, warn.Spell(flagWords))
		}
		if e.Body != nil {
			line += rewriteLines(e.Name, e.Rewrites)
		}
	}
	line += hazardWarnings(r.Connectors)
	if !r.Next.IsZero() {
		line += "\n" + r.Next.Spell(flagWords)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// rewriteLines are the lines of a connector's rewrites, one per reason: the settings changed
// for the same reason (the keys of one transform) share a line.
func rewriteLines(name string, rws []plan.Edit) string {
	var out strings.Builder
	for i := 0; i < len(rws); {
		j := i + 1
		for j < len(rws) && rws[j].Why == rws[i].Why {
			j++
		}
		var changes []string
		for _, rw := range rws[i:j] {
			changes = append(changes, rw.Change())
		}
		fmt.Fprintf(&out, "\nrewritten for B: %s: %s: %s", name, strings.Join(changes, "; "), rws[i].Why)
		i = j
	}
	return out.String()
}

// hazardWarnings are the lines of the hazards that warn (a refusing one is its connector's
// message), one per text: the same warning of many connectors (B's plugins not checked) is one
// line naming them.
func hazardWarnings(entries []*apply.Entry) string {
	var texts []string
	names := map[string][]string{}
	for _, e := range entries {
		for _, h := range e.Hazards {
			if h.Refuse {
				continue
			}
			text := h.Check + ": " + h.Spell(flagWords)
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

// verdicts are the cutover's verdicts in the order its summaries count them.
var verdicts = []cutover.Verdict{cutover.VerdictVerified, cutover.VerdictWaiting, cutover.VerdictMismatch, cutover.VerdictUnordered, cutover.VerdictReplay}

// countsText is the partitions per verdict: "9 verified, 2 waiting, ...".
func countsText(counts map[cutover.Verdict]int) string {
	parts := make([]string, len(verdicts))
	for i, v := range verdicts {
		parts[i] = fmt.Sprintf("%d %s", counts[v], v)
	}
	return strings.Join(parts, ", ")
}

// maxListed bounds the mismatches (and, apart, the replays) writeSummary lists, to keep it on
// one screen.
const maxListed = 15

// writeSummary writes the cutover in a few lines: the partitions per verdict, the mismatches
// and the replays (the first maxListed of each), and the connectors still waiting.
func writeSummary(w io.Writer, c *cutover.Cutover) error {
	c.Count()
	var b strings.Builder
	conns, total := 0, 0
	for _, cc := range c.Connectors {
		if len(cc.Partitions) > 0 {
			conns++
		}
		total += len(cc.Partitions)
	}
	fmt.Fprintf(&b, "cutover of migration %s: %d partitions of %d connectors: %s\n", c.MigrationID, total, conns, countsText(c.Counts))
	if c.Error != "" {
		fmt.Fprintf(&b, "the verification could not read B: %s\n", oneLine(c.Error, 200))
	}
	for _, v := range []cutover.Verdict{cutover.VerdictMismatch, cutover.VerdictReplay} {
		listed := 0
		for _, cc := range c.Connectors {
			for _, p := range cc.Partitions {
				if p.Verdict != v {
					continue
				}
				if listed++; listed <= maxListed {
					fmt.Fprintf(&b, "%s: %s %s: %s\n", v, cc.TargetName, jsonvalue.SortedText(p.Partition), oneLine(p.Detail.Spell(flagWords), 160))
				}
			}
		}
		if listed > maxListed {
			fmt.Fprintf(&b, "... and %d more %s partitions (see the cutover report)\n", listed-maxListed, v)
		}
	}
	if n := c.Counts[cutover.VerdictWaiting]; n > 0 {
		waiting := []string{}
		for _, cc := range c.Connectors {
			if slices.ContainsFunc(cc.Partitions, func(p *cutover.Partition) bool { return p.Verdict == cutover.VerdictWaiting }) {
				waiting = append(waiting, cc.TargetName)
			}
		}
		fmt.Fprintf(&b, "waiting: B has committed nothing new yet for %d partitions (%s): run migrate verify REPORT again once they have traffic\n",
			n, oneLine(strings.Join(waiting, ", "), 120))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVerified writes a Strimzi verification as a table and a summary line, and reports
// whether every connector passed.
func writeVerified(w io.Writer, vs []strimzi.Verified) (bool, error) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONNECTOR\tOK\tDETAIL")
	ok := 0
	for _, v := range vs {
		mark := "no"
		if v.OK {
			mark, ok = "yes", ok+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, mark, oneLine(v.Message, 120))
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}
	_, err := fmt.Fprintf(w, "%d connectors: %d run with the offsets placed, %d do not\n", len(vs), ok, len(vs)-ok)
	return ok == len(vs), err
}
