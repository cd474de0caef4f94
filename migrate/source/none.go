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

func (e *NoneSelectedError) Error() string {
	if e.Total == 0 {
		return "A has no connectors: nothing to export (check --from-brokers, --from-config-topic or --from-connect-url)"
	}
	more := ""
	if e.Total > len(e.Examples) {
		more = fmt.Sprintf(", ... (%d more)", e.Total-len(e.Examples))
	}
	return fmt.Sprintf("no connector of A matches the selection (--include, --exclude); A has %d: %s%s",
		e.Total, strings.Join(e.Examples, ", "), more)
}

// UnmatchedError is the error of an export or migration with an --include, --exclude or
// --rename that does nothing to A's connectors (Selection.Unmatched): almost always a typo,
// and a misspelt --exclude would move the very connector it names. Nothing was stopped or
// published; Options.AllowEmpty makes these warnings instead.
type UnmatchedError struct {
	// Flags names each flag that matched nothing, in flag order.
	Flags []string
	// Total is how many connectors A has; Examples are a few of their names, sorted.
	Total    int
	Examples []string
}

func (e *UnmatchedError) Error() string {
	more := ""
	if e.Total > len(e.Examples) {
		more = fmt.Sprintf(", ... (%d more)", e.Total-len(e.Examples))
	}
	return fmt.Sprintf("%s (A has %d: %s%s): check the spelling, or give --allow-empty to go on without them",
		strings.Join(e.Flags, "; "), e.Total, strings.Join(e.Examples, ", "), more)
}
