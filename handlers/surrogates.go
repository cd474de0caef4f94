package handlers

import (
	"fmt"
	"strings"
)

// refuseLoneSurrogates fails a request whose fields (events.CreateRequest.LoneSurrogates) hold
// a lone UTF-16 surrogate escape: validate_config for the name, config and initial state
// (offsets false), validate_offsets for initial_offsets (offsets true). Connect's Jackson would
// accept the escape, but no UTF-8 record can carry it: Go writes U+FFFD instead, a different
// name or value than the one asked for.
func refuseLoneSurrogates(fields []string, offsets bool) error {
	var named []string
	for _, f := range fields {
		if strings.HasPrefix(f, "initial_offsets") == offsets {
			named = append(named, f)
		}
	}
	if len(named) == 0 {
		return nil
	}
	return badRequest(fmt.Sprintf("The request has a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair) in %s: "+
		"it cannot be stored as UTF-8 and would be written as U+FFFD; send the whole surrogate pair or the character itself",
		strings.Join(named, ", ")))
}
