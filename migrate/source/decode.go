package source

import (
	"bytes"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// decodeOffset is jsonvalue.DecodeMap of a source offset's value (a JSON object, or null for
// none), read by jsonvalue's scanner: a migration reads every source's offsets three times (the
// listing's read, and its stop barrier's two), and DecodeMap's encoding/json decoder, its
// buffer and tokens cost each of these tiny objects ({"position":42}) a dozen allocations,
// the largest share of what a wave's barriers allocated. The scanner gives DecodeMap's values
// (the same rules, the same handling of a repeated key); what it refuses, DecodeMap decodes,
// so that the values and errors stay DecodeMap's (encoding/json replaces invalid UTF-8, which
// the scanner refuses). The Map's strings share a copy of value, made first, not value
// itself, which the Map outlives (the scanner's own copying, CopyStrings, takes a 32 KiB
// arena and a 4 KiB table for each document: made for large ones, not these).
func decodeOffset(value []byte) (jsonvalue.Map, error) {
	sc := jsonvalue.NewScanner(bytes.Clone(value))
	if v, err := sc.Value(); err == nil && sc.AtEnd() {
		switch t := v.(type) {
		case nil:
			return nil, nil
		case jsonvalue.Map:
			return t, nil
		}
	}
	return jsonvalue.DecodeMap(value)
}
