package events

import "github.com/offsetagent/offsetagent/internal/jsonvalue"

// parseFast is ParseCreateRequest for well-formed requests, on jsonvalue.Scanner: one pass,
// no tokens, each partition and offset read straight into a slab-allocated Map. It follows
// parseTokens rule for rule on every input it accepts; on anything else ok is false and the
// caller runs parseTokens, which words the error. FuzzParseCreateRequest holds the two
// together.
func parseFast(data []byte, tune scanTuning) (req CreateRequest, ok bool) {
	sc := jsonvalue.NewScanner(data)
	if len(data) >= tune.copyStringsBytes {
		// A large request's values are kept through the request's stages; copied, they do not
		// keep the whole request record alive (9.4 MiB for 100,000 MM2 offsets, whose copied
		// strings take about 2 MiB).
		sc.CopyStrings()
	}
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
				if req.InitialOffsets, req.RawOffsets, req.HasInitialOffsets, ok = scanInitialOffsets(sc, data, tune); !ok {
					return req, false
				}
			case "create":
				if req.Create, ok = scanCreate(sc); !ok {
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
func scanInitialState(sc *jsonvalue.Scanner) (string, bool) {
	if sc.NextByte() == '"' {
		return sc.ReadString()
	}
	_, isNull, ok := scanScalar(sc)
	return "", ok && isNull
}

// scanCreate is decodeCreate: a string or null.
func scanCreate(sc *jsonvalue.Scanner) (string, bool) {
	if sc.NextByte() == '"' {
		return sc.ReadString()
	}
	if sc.NextByte() != 'n' {
		return "", false
	}
	v, err := sc.Value()
	return "", err == nil && v == nil
}

// scanScalar reads a string, number, boolean or null as scalarToken words it.
func scanScalar(sc *jsonvalue.Scanner) (text string, isNull, ok bool) {
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
	case jsonvalue.Number:
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
func scanConfig(sc *jsonvalue.Scanner) (Config, bool) {
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
