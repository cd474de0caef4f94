package events

import "github.com/offsetagent/offsetagent/offsetstore"

// parseFast is ParseCreateRequest for well-formed requests, on offsetstore.Scanner: one pass,
// no tokens, each partition and offset read straight into a slab-allocated Map. It follows
// parseTokens rule for rule on every input it accepts; on anything else ok is false and the
// caller runs parseTokens, which words the error. FuzzParseCreateRequest holds the two
// together.
func parseFast(data []byte) (req CreateRequest, ok bool) {
	sc := offsetstore.NewScanner(data)
	if !sc.Consume('{') {
		return req, false
	}
	hasName := false
	if !sc.Consume('}') {
		for {
			key, ok := sc.ReadString()
			if !ok || !sc.Consume(':') {
				return req, false
			}
			switch key {
			case "name":
				if req.Name, _, ok = scanScalar(sc); !ok {
					return req, false
				}
				hasName = true
			case "config":
				if req.Config, ok = scanConfig(sc); !ok {
					return req, false
				}
			case "initial_state":
				if req.InitialState, ok = scanInitialState(sc); !ok {
					return req, false
				}
			case "initial_offsets":
				if req.InitialOffsets, req.HasInitialOffsets, ok = scanInitialOffsets(sc); !ok {
					return req, false
				}
			default:
				return req, false
			}
			if sc.Consume('}') {
				break
			}
			if !sc.Consume(',') {
				return req, false
			}
		}
	}
	return req, hasName && sc.AtEnd()
}

// scanInitialState is decodeInitialState: a string or null, where name and config values may
// also be numbers and booleans.
func scanInitialState(sc *offsetstore.Scanner) (string, bool) {
	if sc.NextByte() == '"' {
		return sc.ReadString()
	}
	_, isNull, ok := scanScalar(sc)
	return "", ok && isNull
}

// scanScalar reads a string, number, boolean or null as scalarToken words it.
func scanScalar(sc *offsetstore.Scanner) (text string, isNull, ok bool) {
	switch sc.NextByte() {
	case '{', '[':
		return "", false, false
	}
	v, err := sc.Value()
	if err != nil {
		return "", false, false
	}
	switch t := v.(type) {
	case string:
		return t, false, true
	case offsetstore.Number:
		return string(t), false, true
	case bool:
		if t {
			return "true", false, true
		}
		return "false", false, true
	default: // nil: the only other value that is not an object or array
		return "", true, true
	}
}

// scanConfig is decodeConfig.
func scanConfig(sc *offsetstore.Scanner) (Config, bool) {
	if sc.NextByte() != '{' {
		_, isNull, ok := scanScalar(sc)
		return nil, ok && isNull
	}
	sc.Consume('{')
	cfg := Config{}
	if sc.Consume('}') {
		return cfg, true
	}
	var index map[string]int // built once the config is long enough for lookups to cost
	for {
		key, ok := sc.ReadString()
		if !ok || !sc.Consume(':') {
			return nil, false
		}
		text, isNull, ok := scanScalar(sc)
		if !ok {
			return nil, false
		}
		e := ConfigEntry{Key: key, Value: text, Null: isNull}
		i := -1
		if index != nil {
			if j, dup := index[key]; dup {
				i = j
			}
		} else {
			for j := range cfg {
				if cfg[j].Key == key {
					i = j
					break
				}
			}
		}
		switch {
		case i >= 0:
			cfg[i] = e // a repeated key keeps its first position and takes the last value
		default:
			cfg = append(cfg, e)
			if index != nil {
				index[key] = len(cfg) - 1
			} else if len(cfg) > 16 {
				index = make(map[string]int, 2*len(cfg))
				for j := range cfg {
					index[cfg[j].Key] = j
				}
			}
		}
		if sc.Consume('}') {
			return cfg, true
		}
		if !sc.Consume(',') {
			return nil, false
		}
	}
}

// scanInitialOffsets is decodeInitialOffsets.
func scanInitialOffsets(sc *offsetstore.Scanner) ([]OffsetEntry, bool, bool) {
	switch sc.NextByte() {
	case '[':
		entries, ok := scanOffsetEntries(sc)
		return entries, true, ok
	case '{':
	default:
		_, isNull, ok := scanScalar(sc)
		return nil, false, ok && isNull
	}
	sc.Consume('{')
	var entries []OffsetEntry
	if sc.Consume('}') {
		return nil, true, true
	}
	for {
		key, ok := sc.ReadString()
		if !ok || key != "offsets" || !sc.Consume(':') {
			return nil, false, false
		}
		if sc.NextByte() == '[' {
			if entries, ok = scanOffsetEntries(sc); !ok {
				return nil, false, false
			}
		} else {
			if _, isNull, ok := scanScalar(sc); !ok || !isNull {
				return nil, false, false
			}
			entries = nil
		}
		if sc.Consume('}') {
			return entries, true, true
		}
		if !sc.Consume(',') {
			return nil, false, false
		}
	}
}

// entryChunk is the number of entries collected per chunk before the exact-size copy.
const entryChunk = 1024

// scanOffsetEntries is decodeOffsetEntries. It collects entries in fixed-size chunks and copies
// them once into a slice of the exact length: growing one slice by append would allocate about
// five times the final size for 100,000 entries.
func scanOffsetEntries(sc *offsetstore.Scanner) ([]OffsetEntry, bool) {
	if !sc.Consume('[') {
		return nil, false
	}
	if sc.Consume(']') {
		return []OffsetEntry{}, true
	}
	var full [][]OffsetEntry
	chunk := make([]OffsetEntry, 0, 16)
	for {
		e, ok := scanOffsetEntry(sc)
		if !ok {
			return nil, false
		}
		if len(chunk) == cap(chunk) {
			full = append(full, chunk)
			chunk = make([]OffsetEntry, 0, min(2*cap(chunk), entryChunk))
		}
		chunk = append(chunk, e)
		if sc.Consume(']') {
			break
		}
		if !sc.Consume(',') {
			return nil, false
		}
	}
	if len(full) == 0 {
		return chunk, true
	}
	n := len(chunk)
	for _, c := range full {
		n += len(c)
	}
	entries := make([]OffsetEntry, 0, n)
	for _, c := range full {
		entries = append(entries, c...)
	}
	return append(entries, chunk...), true
}

// scanOffsetEntry is decodeOffsetEntry.
func scanOffsetEntry(sc *offsetstore.Scanner) (OffsetEntry, bool) {
	var e OffsetEntry
	if !sc.Consume('{') {
		return e, false
	}
	if sc.Consume('}') {
		return e, true
	}
	for {
		key, ok := sc.ReadString()
		if !ok || (key != "partition" && key != "offset") || !sc.Consume(':') {
			return e, false
		}
		m, ok := scanNullableMap(sc)
		if !ok {
			return e, false
		}
		if key == "partition" {
			e.Partition = m
		} else {
			e.Offset = m
		}
		if sc.Consume('}') {
			return e, true
		}
		if !sc.Consume(',') {
			return e, false
		}
	}
}

// scanNullableMap is decodeNullableMap.
func scanNullableMap(sc *offsetstore.Scanner) (offsetstore.Map, bool) {
	if sc.NextByte() == '{' {
		m, err := sc.Object()
		return m, err == nil
	}
	_, isNull, ok := scanScalar(sc)
	return nil, ok && isNull
}
