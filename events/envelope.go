package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// structuredFailure words why a structured-mode event could not be read, without quoting any
// of its bytes: sdk-go's errors echo the neighbourhood of the problem, config values and
// passwords included. When the event parses with its data left out, the envelope is sound and
// the data is at fault: the error then carries the event's id and source, as in binary mode,
// so that the failed result names the request and a publisher waiting for it finds it.
func structuredFailure(value []byte, err error) *DecodeError {
	members, ok := jsonvalue.ScanMembers(value)
	if !ok {
		return decodeErr(ReasonNotCloudEvent, err, "structured CloudEvent is malformed: %s", problem(err))
	}
	var env bytes.Buffer
	env.WriteByte('{')
	var data, data64 *jsonvalue.Member
	for i := range members {
		m := &members[i]
		switch m.Key {
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
		env.Write(value[m.KeyStart:m.End])
	}
	env.WriteByte('}')
	ev := event.New()
	if (data == nil && data64 == nil) || json.Unmarshal(env.Bytes(), &ev) != nil || ev.SpecVersion() != event.CloudEventsVersionV1 || ev.Validate() != nil {
		return decodeErr(ReasonNotCloudEvent, err, "structured CloudEvent is malformed: %s", envelopeProblem(value, members, err))
	}
	var derr *DecodeError
	switch {
	case data64 != nil && data64.Kind == '"' && !validBase64(value[data64.Start:data64.End]):
		derr = decodeErr(ReasonInvalidData, err, "event data_base64 is not valid base64")
	case data64 != nil && data64.Kind != '"' && data64.Kind != 'n':
		derr = decodeErr(ReasonInvalidData, err, "event data_base64 must be a string, got %s", kindName(data64.Kind))
	case data != nil:
		raw := value[data.Start:data.End]
		var syn *json.SyntaxError
		var rm json.RawMessage // Unmarshal checks the whole value first; RawMessage only copies it
		if cerr := json.Unmarshal(raw, &rm); errors.As(cerr, &syn) {
			derr = decodeErr(ReasonInvalidData, err, "event data is not valid JSON at byte %d of the data: %s", syn.Offset, syntaxText(syn))
		} else {
			derr = decodeErr(ReasonInvalidData, err,
				"event data is a JSON %s, which datacontenttype %q cannot hold; send the request body as application/json", kindName(data.Kind), ev.DataContentType())
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
func envelopeProblem(value []byte, members []jsonvalue.Member, err error) string {
	for _, m := range members {
		switch m.Key {
		case "data", "data_base64":
			continue
		case "specversion", "id", "source", "type", "subject", "datacontenttype", "dataschema", "time":
			if m.Kind != '"' && m.Kind != 'n' {
				return fmt.Sprintf("attribute %q must be a string, got %s", m.Key, kindName(m.Kind))
			}
		default:
			if m.Kind == '{' || m.Kind == '[' {
				return fmt.Sprintf("extension %q must be a string, number or boolean, got %s", m.Key, kindName(m.Kind))
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
