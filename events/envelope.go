package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/cloudevents/sdk-go/v2/event"
)

// structuredFailure words why a structured-mode event could not be read, without quoting any
// of its bytes: sdk-go's errors echo the neighbourhood of the problem, config values and
// passwords included. When the event parses with its data left out, the envelope is sound and
// the data is at fault: the error then carries the event's id and source, as in binary mode,
// so that the failed result names the request and a publisher waiting for it finds it.
func structuredFailure(value []byte, err error) *DecodeError {
	members, ok := scanMembers(value)
	if !ok {
		return decodeErr(ReasonNotCloudEvent, err, "structured CloudEvent is malformed: %s", problem(err))
	}
	var env bytes.Buffer
	env.WriteByte('{')
	var data, data64 *member
	for i := range members {
		m := &members[i]
		switch m.key {
		case "data":
			data = m
			continue
		case "data_base64":
			data64 = m
			continue
		}
		if env.Len() > 1 {
			env.WriteByte(',')
		}
		env.Write(value[m.keyStart:m.end])
	}
	env.WriteByte('}')
	ev := event.New()
	if (data == nil && data64 == nil) || json.Unmarshal(env.Bytes(), &ev) != nil || ev.SpecVersion() != event.CloudEventsVersionV1 || ev.Validate() != nil {
		return decodeErr(ReasonNotCloudEvent, err, "structured CloudEvent is malformed: %s", envelopeProblem(value, members, err))
	}
	var derr *DecodeError
	switch {
	case data64 != nil && data64.kind == '"' && !validBase64(value[data64.start:data64.end]):
		derr = decodeErr(ReasonInvalidData, err, "event data_base64 is not valid base64")
	case data64 != nil && data64.kind != '"' && data64.kind != 'n':
		derr = decodeErr(ReasonInvalidData, err, "event data_base64 must be a string, got %s", kindName(data64.kind))
	case data != nil:
		raw := value[data.start:data.end]
		var syn *json.SyntaxError
		var rm json.RawMessage // Unmarshal checks the whole value first; RawMessage only copies it
		if cerr := json.Unmarshal(raw, &rm); errors.As(cerr, &syn) {
			derr = decodeErr(ReasonInvalidData, err, "event data is not valid JSON at byte %d of the data: %s", syn.Offset, syntaxText(syn))
		} else {
			derr = decodeErr(ReasonInvalidData, err,
				"event data is a JSON %s, which datacontenttype %q cannot hold; send the request body as application/json", kindName(data.kind), ev.DataContentType())
		}
	default:
		derr = decodeErr(ReasonInvalidData, err, "event data is malformed: %s", problem(err))
	}
	derr.ID, derr.Source = ev.ID(), ev.Source()
	return derr
}

// envelopeProblem names what is wrong with an envelope that does not parse, as far as its
// members tell: a context attribute that is not a string, or an extension that is an object
// or array. Otherwise it falls back to problem.
func envelopeProblem(value []byte, members []member, err error) string {
	for _, m := range members {
		switch m.key {
		case "data", "data_base64":
			continue
		case "specversion", "id", "source", "type", "subject", "datacontenttype", "dataschema", "time":
			if m.kind != '"' && m.kind != 'n' {
				return fmt.Sprintf("attribute %q must be a string, got %s", m.key, kindName(m.kind))
			}
		default:
			if m.kind == '{' || m.kind == '[' {
				return fmt.Sprintf("extension %q must be a string, number or boolean, got %s", m.key, kindName(m.kind))
			}
		}
	}
	return problem(err)
}

// problem describes a parse error without the request's bytes: a JSON syntax error by its
// offset and kind, anything else (sdk-go's reader quotes its input) generically.
func problem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("not valid JSON at byte %d: %s", syn.Offset, syntaxText(syn))
	}
	return "an attribute or extension has a value of the wrong type or format"
}

// quotedChar is the character encoding/json quotes in a syntax error ("invalid character 'x'
// after ..."): a byte of the request, which may be part of a password.
var quotedChar = regexp.MustCompile(`character '(?:\\.|[^'\\])+'`)

// syntaxText is a syntax error's message without the character it quotes.
func syntaxText(err *json.SyntaxError) string {
	return quotedChar.ReplaceAllString(err.Error(), "character")
}

func validBase64(quoted []byte) bool {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// kindName names the JSON kind a value starting with b has.
func kindName(b byte) string {
	switch b {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// member is one member of a JSON object found by scanMembers: its key, the kind of its value
// (the value's first byte) and where the member and its value lie in the input.
type member struct {
	key        string
	kind       byte
	keyStart   int // the key's opening quote
	start, end int // the value
}

// scanMembers finds the members of a top-level JSON object by its lexical structure alone:
// strings, brackets and commas. It does not check the grammar inside values, so an object
// whose data is malformed (a missing comma, an unquoted word) still yields its members, in
// order. ok is false when the object's own structure is broken (unbalanced brackets, an
// unterminated string, bytes after it).
func scanMembers(v []byte) (members []member, ok bool) {
	i := skipWS(v, 0)
	if i >= len(v) || v[i] != '{' {
		return nil, false
	}
	i = skipWS(v, i+1)
	if i < len(v) && v[i] == '}' {
		return nil, skipWS(v, i+1) == len(v)
	}
	for {
		if i >= len(v) || v[i] != '"' {
			return nil, false
		}
		keyStart := i
		keyEnd, ok := skipString(v, i)
		if !ok {
			return nil, false
		}
		var key string
		if json.Unmarshal(v[keyStart:keyEnd], &key) != nil {
			return nil, false
		}
		i = skipWS(v, keyEnd)
		if i >= len(v) || v[i] != ':' {
			return nil, false
		}
		start := skipWS(v, i+1)
		end, ok := skipValue(v, start)
		if !ok || end == start {
			return nil, false
		}
		members = append(members, member{key: key, kind: v[start], keyStart: keyStart, start: start, end: end})
		i = skipWS(v, end)
		if i >= len(v) {
			return nil, false
		}
		switch v[i] {
		case ',':
			i = skipWS(v, i+1)
		case '}':
			if skipWS(v, i+1) != len(v) {
				return nil, false
			}
			return members, true
		default:
			return nil, false
		}
	}
}

func skipWS(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\r' || v[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string whose opening quote is at i.
func skipString(v []byte, i int) (int, bool) {
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

// skipValue returns the index after the value at i: a string, a bracketed value (brackets
// counted, strings skipped, nothing else checked) or a run of other bytes up to a comma, a
// closing bracket or white space.
func skipValue(v []byte, i int) (int, bool) {
	if i >= len(v) {
		return 0, false
	}
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				end, ok := skipString(v, i)
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
