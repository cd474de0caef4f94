package events

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A structured event whose envelope parses but whose data does not fails with the event's id
// and source; no message quotes the request's bytes (here the secret), whatever the problem.
func TestStructuredFailureKeepsIdentityAndQuotesNothing(t *testing.T) {
	const secret = "Zq8secret"
	head := `{"specversion":"1.0","id":"r1","source":"/s","type":"` + TypeCreateRequest + `"`
	tests := []struct {
		name    string
		value   string
		reason  DecodeReason
		id      string // "" when the envelope does not parse
		message string
	}{
		{name: "missing comma in data", value: head + `,"data":{"name":"c","config":{"p":"` + secret + `" "q":"1"}}}`,
			reason: ReasonInvalidData, id: "r1", message: "event data is not valid JSON at byte 39 of the data: invalid character after object key:value pair"},
		{name: "bare word in data", value: head + `,"data":{"name":"c","config":{"p":` + secret + `}}}`,
			reason: ReasonInvalidData, id: "r1", message: "event data is not valid JSON at byte 27 of the data: invalid character looking for beginning of value"},
		{name: "trailing comma in data, data first", value: `{"data":{"p":"` + secret + `",},` + head[1:] + `}`,
			reason: ReasonInvalidData, id: "r1", message: "event data is not valid JSON"},
		{name: "control character in a data string", value: head + `,"data":{"p":"` + secret + "\n" + `"}}`,
			reason: ReasonInvalidData, id: "r1", message: "invalid character in string literal"},
		{name: "number out of range in data", value: head + `,"data":{"p":1e99999` + secret + `}}`,
			reason: ReasonInvalidData, id: "r1", message: "event data is not valid JSON"},
		{name: "data object with a text content type", value: head + `,"datacontenttype":"text/plain","data":{"p":"` + secret + `"}}`,
			reason: ReasonInvalidData, id: "r1", message: `event data is a JSON object, which datacontenttype "text/plain" cannot hold`},
		{name: "data_base64 not base64", value: head + `,"data_base64":"!` + secret + `!"}`,
			reason: ReasonInvalidData, id: "r1", message: "event data_base64 is not valid base64"},
		{name: "id a number", value: `{"specversion":"1.0","id":5,"source":"/s","type":"t","data":{"p":"` + secret + `"}}`,
			reason: ReasonNotCloudEvent, message: `structured CloudEvent is malformed: attribute "id" must be a string, got number`},
		{name: "subject an array", value: head + `,"subject":["` + secret + `"],"data":{}}`,
			reason: ReasonNotCloudEvent, message: `attribute "subject" must be a string, got array`},
		{name: "extension an object", value: head + `,"ext":{"a":"` + secret + `"},"data":{}}`,
			reason: ReasonNotCloudEvent, message: `extension "ext" must be a string, number or boolean, got object`},
		{name: "time not a timestamp", value: head + `,"time":"` + secret + `","data":{}}`,
			reason: ReasonNotCloudEvent, message: "an attribute or extension has a value of the wrong type or format"},
		{name: "unbalanced data", value: head + `,"data":{"p":"` + secret + `"}}}`,
			reason: ReasonNotCloudEvent, message: "structured CloudEvent is malformed: not valid JSON"},
		{name: "unterminated", value: head + `,"data":{"p":"` + secret,
			reason: ReasonNotCloudEvent, message: "structured CloudEvent is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest(record(tt.value, "content-type", "application/cloudevents+json"), 0)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "error %v", err)
			require.Equal(t, tt.reason, de.Reason, de.Message)
			require.Contains(t, de.Message, tt.message)
			require.NotContains(t, de.Message, "Zq8")
			require.Equal(t, tt.id, de.ID)
			if tt.id != "" {
				require.Equal(t, "/s", de.Source)
			}
		})
	}
}

// Binary-mode parse errors do not quote the offending byte either.
func TestParseErrorsQuoteNoBytes(t *testing.T) {
	_, err := ParseCreateRequest([]byte(`{"name":"c","config":{"p":Zq8}}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), `config value for "p" is not valid JSON at byte`)
	require.Contains(t, err.Error(), "invalid character looking for beginning of value")
	require.NotContains(t, err.Error(), "Z")
}
