package jsonvalue

import "encoding/json"

// The lexical scanner: the structure of JSON text (strings, brackets, commas) without checking
// the grammar inside values, for callers that word what is wrong with text that may be
// malformed (package events' structured CloudEvents, its lone surrogates) or that skip a value
// they do not need (package offsetstore's key reader) without decoding it.

// Member is one member of a JSON object found by ScanMembers: its key, the kind of its value
// (the value's first byte) and where the member and its value lie in the input.
type Member struct {
	Key        string
	Kind       byte
	KeyStart   int // the key's opening quote
	Start, End int // the value
}

// ScanMembers finds the members of a top-level JSON object by its lexical structure alone:
// strings, brackets and commas. It does not check the grammar inside values, so an object
// whose data is malformed (a missing comma, an unquoted word) still yields its members, in
// order. ok is false when the object's own structure is broken (unbalanced brackets, an
// unterminated string, bytes after it).
func ScanMembers(v []byte) (members []Member, ok bool) {
	i := SkipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return nil, false
	}
	i = SkipSpace(v, i+1)
	if i < len(v) && v[i] == '}' {
		return nil, SkipSpace(v, i+1) == len(v)
	}
	for {
		if i >= len(v) || v[i] != '"' {
			return nil, false
		}
		keyStart := i
		keyEnd, ok := SkipString(v, i)
		if !ok {
			return nil, false
		}
		var key string
		if json.Unmarshal(v[keyStart:keyEnd], &key) != nil {
			return nil, false
		}
		i = SkipSpace(v, keyEnd)
		if i >= len(v) || v[i] != ':' {
			return nil, false
		}
		start := SkipSpace(v, i+1)
		end, ok := SkipValue(v, start)
		if !ok || end == start {
			return nil, false
		}
		members = append(members, Member{Key: key, Kind: v[start], KeyStart: keyStart, Start: start, End: end})
		i = SkipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		switch v[i] {
		case ',':
			i = SkipSpace(v, i+1)
		case '}':
			if SkipSpace(v, i+1) != len(v) {
				return nil, false
			}
			return members, true
		default:
			return nil, false
		}
	}
}

// SkipString returns the index after the string whose opening quote is at i.
func SkipString(v []byte, i int) (int, bool) {
	for i++; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// SkipValue returns the index after the value at i: a string, a bracketed value (brackets
// counted, strings skipped, nothing else checked) or a run of other bytes up to a comma, a
// closing bracket or white space.
func SkipValue(v []byte, i int) (int, bool) {
	if i >= len(v) {
		return 0, false
	}
	switch v[i] {
	case '"':
		return SkipString(v, i)
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				end, ok := SkipString(v, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	for ; i < len(v); i++ {
		switch v[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i, true
		}
	}
	return i, true
}
