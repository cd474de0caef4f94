package source

import (
	"fmt"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// NoneSelectedError is the error of an export or migration whose selection matches no
// connector of A: an --include that matches nothing is almost always a typo, so it is not a
// success with an empty report. Nothing was stopped or published.
type NoneSelectedError struct {
	// Total is how many connectors A has; Examples are a few of their names, sorted.
	Total    int
	Examples []string
}

// noneSelectedExamples is how many of A's names the error lists.
const noneSelectedExamples = 5

func NoneSelected(all []*fleet.Connector) *NoneSelectedError {
	names := make([]string, 0, len(all))
	for _, c := range all {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return &NoneSelectedError{Total: len(names), Examples: names[:min(len(names), noneSelectedExamples)]}
}

func (e *NoneSelectedError) Error() string { return e.Spell(fleet.GoWords) }

// Spell is the error's message in w's words.
func (e *NoneSelectedError) Spell(w fleet.Words) string {
	if e.Total == 0 {
		return fleet.Textf("A has no connectors: nothing to export (check %s, %s or %s)",
			fleet.FromBrokers, fleet.FromConfigTopic, fleet.FromConnectURL).Spell(w)
	}
	more := ""
	if e.Total > len(e.Examples) {
		more = fmt.Sprintf(", ... (%d more)", e.Total-len(e.Examples))
	}
	return fleet.Textf("no connector of A matches the selection (%s, %s); A has %d: %s%s",
		fleet.Include, fleet.Exclude, e.Total, strings.Join(e.Examples, ", "), more).Spell(w)
}

// UnmatchedError is the error of an export or migration with an --include, --exclude or
// --rename that does nothing to A's connectors (Selection.Unmatched): almost always a typo,
// and a misspelt --exclude would move the very connector it names. Nothing was stopped or
// published; Options.AllowEmpty makes these warnings instead.
type UnmatchedError struct {
	// Flags names each selection setting that matched nothing, in the settings' order.
	Flags []fleet.Text
	// Total is how many connectors A has; Examples are a few of their names, sorted.
	Total    int
	Examples []string
}

func (e *UnmatchedError) Error() string { return e.Spell(fleet.GoWords) }

// Spell is the error's message in w's words.
func (e *UnmatchedError) Spell(w fleet.Words) string {
	flags := make([]string, len(e.Flags))
	for i, f := range e.Flags {
		flags[i] = f.Spell(w)
	}
	more := ""
	if e.Total > len(e.Examples) {
		more = fmt.Sprintf(", ... (%d more)", e.Total-len(e.Examples))
	}
	return fleet.Textf("%s (A has %d: %s%s): check the spelling, or give %s to go on without them",
		strings.Join(flags, "; "), e.Total, strings.Join(e.Examples, ", "), more, fleet.AllowEmpty).Spell(w)
}
