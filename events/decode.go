package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/segmentio/kafka-go"
)

// DefaultMaxBytes bounds a request record's value when DecodeRequest is given no limit.
const DefaultMaxBytes = 16 << 20

// DecodeReason is the bounded reason of a DecodeError, fit for a metric label.
type DecodeReason string

// Decode reasons. Every one is permanent: the same record fails the same way again, so the
// caller publishes a failed result and commits.
const (
	// ReasonNotCloudEvent: the record is neither a binary- nor a structured-mode CloudEvent,
	// or its structured JSON is malformed.
	ReasonNotCloudEvent DecodeReason = "not_cloudevent"
	// ReasonInvalidUTF8: the value or a CloudEvents header is not valid UTF-8.
	ReasonInvalidUTF8 DecodeReason = "invalid_utf8"
	// ReasonTooLarge: the value is larger than the limit.
	ReasonTooLarge DecodeReason = "too_large"
	// ReasonWrongSpecVersion: specversion is not "1.0".
	ReasonWrongSpecVersion DecodeReason = "wrong_specversion"
	// ReasonInvalidEvent: a CloudEvent attribute or the dryrun extension is missing or invalid.
	ReasonInvalidEvent DecodeReason = "invalid_event"
	// ReasonUnknownType: the event type is not TypeCreateRequest.
	ReasonUnknownType DecodeReason = "unknown_type"
	// ReasonInvalidData: the data is not JSON or not the shape of a create request.
	ReasonInvalidData DecodeReason = "invalid_data"
)

// DecodeError says why a record is not a valid create request.
type DecodeError struct {
	// Reason is bounded, for metrics and branching.
	Reason DecodeReason
	// Message is a human sentence naming the problem, for the failed result event.
	Message string
	// Err is the underlying error, if any.
	Err error
	// ID and Source are the request's CloudEvent id and source when decoding got that far,
	// so that the failed result can name the request.
	ID, Source string
}

// Error returns the message.
func (e *DecodeError) Error() string { return e.Message }

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(reason DecodeReason, err error, format string, args ...any) *DecodeError {
	// sdk-go's ValidationError ends in a newline; a message is one line.
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	return &DecodeError{Reason: reason, Message: msg, Err: err}
}

// RawOffsetsBytes is the size from which DecodeRequest checks an initial_offsets array but
// leaves it as text (CreateRequest.RawOffsets) for its consumer's own single pass.
const RawOffsetsBytes = 64 << 10

// DecodeRequest turns a consumed record into a Request. maxBytes bounds the record value
// (<= 0: DefaultMaxBytes). Errors are *DecodeError.
//
// The request must be a CloudEvents 1.0 event of type TypeCreateRequest with an id and a
// source, in binary or structured mode, whose data is JSON (datacontenttype empty,
// application/json, text/json or any +json type) holding a create request
// (ParseCreateRequest; an initial_offsets array of RawOffsetsBytes or more is checked and
// left as text in RawOffsets). The extension dryrun (true or "true", case-insensitive) sets
// DryRun; the extensions deadline and giveup (RFC 3339 timestamps) set Deadline and GiveUp.
func DecodeRequest(msg *kafka.Message, maxBytes int) (*Request, error) {
	return decodeRequest(msg, maxBytes, defaultTuning(), false)
}

// DecodeRequestDeferred is DecodeRequest for a caller that reads a large initial_offsets array
// itself, in one pass: the array's text is found (Data.RawOffsets) but not checked, and the
// request is Deferred until the caller settles it. A caller whose own strict reader took the
// whole text as a JSON array of entries calls Settle: the request is then exactly what
// DecodeRequest gives. Any other caller, or one whose reader gave up, calls Check, which
// finishes the decoding as DecodeRequest does, its errors included. Until then, nothing may
// act on the request: a record that DecodeRequest refuses must not get past decoding.
//
// The array's end is taken to be the last ']' of the data, and the rest of the data is
// decoded as DecodeRequest decodes it. A wrong guess cannot pass for a right one: the text
// would then hold the array's real closing bracket before its end, and no strict reader takes
// it as one array.
func DecodeRequestDeferred(msg *kafka.Message, maxBytes int) (*Request, error) {
	return decodeRequest(msg, maxBytes, defaultTuning(), true)
}

// Deferred reports whether the request's initial_offsets text (Data.RawOffsets) was found but
// not checked by DecodeRequestDeferred: the caller must Settle or Check the request before
// anything acts on it.
func (r *Request) Deferred() bool { return r.pending != nil }

// Settle ends a deferred decoding whose initial_offsets text the caller has read, strictly (as
// RFC 8259 and ParseOffsets read it), as one JSON array of offset entries and nothing else:
// the request's data is then exactly what DecodeRequest decodes.
func (r *Request) Settle() { r.pending = nil }

// Check ends a deferred decoding as DecodeRequest would have decoded the record: it returns
// DecodeRequest's error (a *DecodeError) for a record DecodeRequest refuses, else it sets Data
// to DecodeRequest's. It does nothing for a request that is not Deferred.
func (r *Request) Check() error {
	data, tune := r.pending, r.tune
	if data == nil {
		return nil
	}
	r.pending = nil
	d, err := parseCreateRequest(data, tune)
	if err != nil {
		e := decodeErr(ReasonInvalidData, err, "%v", err)
		e.ID, e.Source = r.ID, r.Source
		return e
	}
	r.Data = d
	return nil
}

// decodeRequest is DecodeRequest with tune; with deferred, DecodeRequestDeferred.
func decodeRequest(msg *kafka.Message, maxBytes int, tune scanTuning, deferred bool) (*Request, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(msg.Value) > maxBytes {
		return nil, decodeErr(ReasonTooLarge, nil,
			"record value is %d bytes, more than the limit of %d bytes", len(msg.Value), maxBytes)
	}
	if !utf8.Valid(msg.Value) {
		return nil, decodeErr(ReasonInvalidUTF8, nil,
			"record value is not valid UTF-8 (first bad byte at offset %d)", invalidUTF8At(msg.Value))
	}
	for _, h := range msg.Headers {
		k := strings.ToLower(h.Key)
		if (strings.HasPrefix(k, HeaderPrefix) || k == HeaderContentType) && !utf8.Valid(h.Value) {
			return nil, decodeErr(ReasonInvalidUTF8, nil, "record header %q is not valid UTF-8", h.Key)
		}
	}
	a, ok := binaryAttributes(msg)
	if !ok || tune.sdkAttributes {
		var derr *DecodeError
		if a, derr = sdkAttributes(msg); derr != nil {
			return nil, derr
		}
	}
	req := &Request{ID: a.id, Source: a.source, Type: a.typ}
	fail := func(e *DecodeError) (*Request, error) {
		e.ID, e.Source = req.ID, req.Source
		return nil, e
	}
	if err := a.invalid; err != nil {
		return fail(decodeErr(ReasonInvalidEvent, err, "CloudEvent attributes are invalid: %v", err))
	}
	if a.typ != TypeCreateRequest {
		return fail(decodeErr(ReasonUnknownType, nil,
			"event type %q is not handled; the agent accepts only %q", a.typ, TypeCreateRequest))
	}
	dry, err := dryRun(a.dryRun)
	if err != nil {
		return fail(decodeErr(ReasonInvalidEvent, err, "%v", err))
	}
	req.DryRun = dry
	if req.Deadline, err = timestamp(a.deadline, ExtensionDeadline); err != nil {
		return fail(decodeErr(ReasonInvalidEvent, err, "%v", err))
	}
	if req.GiveUp, err = timestamp(a.giveUp, ExtensionGiveUp); err != nil {
		return fail(decodeErr(ReasonInvalidEvent, err, "%v", err))
	}
	if ct := a.contentType; !isJSONContentType(ct) {
		return fail(decodeErr(ReasonInvalidData, nil,
			"datacontenttype %q is not JSON; send the request body as application/json", ct))
	}
	data := a.data
	// Structured mode can carry data_base64, which the UTF-8 check of the value did not see.
	if !a.binary && !utf8.Valid(data) {
		return fail(decodeErr(ReasonInvalidUTF8, nil,
			"event data is not valid UTF-8 (first bad byte at offset %d)", invalidUTF8At(data)))
	}
	if tune.rawOffsetsBytes == 0 {
		tune.rawOffsetsBytes = RawOffsetsBytes
	}
	if deferred {
		var left bool
		if req.Data, left, err = parseCreateRequestDeferred(data, tune); err != nil {
			return fail(decodeErr(ReasonInvalidData, err, "%v", err))
		}
		if left {
			req.pending, req.tune = data, tune
		}
		return req, nil
	}
	if req.Data, err = parseCreateRequest(data, tune); err != nil {
		return fail(decodeErr(ReasonInvalidData, err, "%v", err))
	}
	return req, nil
}

// recordEvent reads the record as a CloudEvents 1.0 event. With withData false, a binary-mode
// event (binary true) carries no data: the caller reads it from the record value.
func recordEvent(msg *kafka.Message, withData bool) (ev *event.Event, binary bool, derr *DecodeError) {
	m := NewMessage(msg)
	m.skipData = !withData
	binary = m.ReadEncoding() == binding.EncodingBinary
	sv, hasSV := m.header(HeaderPrefix + "specversion")
	switch m.ReadEncoding() {
	case binding.EncodingUnknown:
		switch {
		case format.IsFormat(strings.ToLower(m.ContentType)):
			return nil, false, decodeErr(ReasonNotCloudEvent, nil,
				"content-type %q is not a supported event format; use %s", m.ContentType, event.ApplicationCloudEventsJSON)
		case hasSV:
			return nil, false, decodeErr(ReasonWrongSpecVersion, nil,
				"ce_specversion is %q; only %q is supported", sv, event.CloudEventsVersionV1)
		default:
			return nil, false, decodeErr(ReasonNotCloudEvent, nil,
				"record is not a CloudEvent: it has neither a ce_specversion header (binary mode) nor content-type %s (structured mode)",
				event.ApplicationCloudEventsJSON)
		}
	case binding.EncodingBinary:
		if sv != event.CloudEventsVersionV1 {
			return nil, false, decodeErr(ReasonWrongSpecVersion, nil,
				"ce_specversion is %q; only %q is supported", sv, event.CloudEventsVersionV1)
		}
	case binding.EncodingStructured:
		if m.format != format.JSON {
			return nil, false, decodeErr(ReasonNotCloudEvent, nil,
				"content-type %q is not supported; send one event per record as %s", m.ContentType, event.ApplicationCloudEventsJSON)
		}
		if v := bytes.TrimLeft(m.Value, " \t\r\n"); len(v) == 0 || v[0] != '{' {
			return nil, false, decodeErr(ReasonNotCloudEvent, nil, "structured CloudEvent must be a JSON object")
		}
	}
	ev, err := binding.ToEvent(context.Background(), m)
	if err != nil {
		var verr event.ValidationError
		if errors.As(err, &verr) {
			// sdk-go reports a missing specversion and an unknown one under the same key;
			// only the text tells them apart.
			if e, ok := verr["specversion"]; ok && e.Error() == "no specversion" {
				return nil, false, decodeErr(ReasonNotCloudEvent, err, "structured CloudEvent has no specversion")
			}
			if _, ok := verr["specversion"]; ok {
				return nil, false, decodeErr(ReasonWrongSpecVersion, err,
					"structured CloudEvent has a missing or unsupported specversion (%v); only %q is supported", err, event.CloudEventsVersionV1)
			}
		}
		if m.ReadEncoding() == binding.EncodingStructured {
			return nil, false, structuredFailure(m.Value, err)
		}
		return nil, false, decodeErr(ReasonInvalidEvent, err, "CloudEvent headers are invalid: %v", err)
	}
	if ev.SpecVersion() != event.CloudEventsVersionV1 {
		return nil, false, decodeErr(ReasonWrongSpecVersion, nil,
			"specversion is %q; only %q is supported", ev.SpecVersion(), event.CloudEventsVersionV1)
	}
	return ev, binary, nil
}

// dryRun reads the dryrun extension: a boolean in structured mode, a string in binary mode.
// Anything else is an error rather than false, so that a request meant as a dry run is never
// executed for real.
func dryRun(x extension) (bool, error) {
	if !x.ok {
		return false, nil
	}
	// A header's text is looked at as a string without boxing it.
	s, text := x.s, x.v == nil
	switch t := x.v.(type) {
	case bool:
		return t, nil
	case string:
		s, text = t, true
	}
	if text {
		switch {
		case strings.EqualFold(s, "true"):
			return true, nil
		case strings.EqualFold(s, "false"):
			return false, nil
		}
	}
	if x.v == nil {
		return false, fmt.Errorf("extension dryrun is %v; it must be true or false", x.s)
	}
	return false, fmt.Errorf("extension dryrun is %v; it must be true or false", x.v)
}

// ExtensionDeadline is the CloudEvents extension attribute (type Timestamp: RFC 3339 text, a
// ce_deadline header in binary mode) after which a request must not be carried out: an agent
// that reads the request at or after its deadline writes nothing and publishes a failed result
// (handlers.PastDeadline). It is what lets a client that gave up waiting for a result report
// the request as failed and be right.
const ExtensionDeadline = "deadline"

// ExtensionGiveUp is the CloudEvents extension attribute (type Timestamp, a ce_giveup header in
// binary mode) from which the request's sender reports it failed if it has no result: the
// deadline plus the grace the sender waits for a request taken up just before it
// (`offsetagent migrate` sets deadline + --grace). The agent bounds the request's writes by it:
// a write phase that runs past it is rolled back and the request fails (handlers, 408), so
// that the sender's "failed" stays true.
const ExtensionGiveUp = "giveup"

// timestamp reads the timestamp extension x, named name (zero when absent). A value that is
// not a timestamp is an error rather than no bound, so that a request meant to expire never
// runs late.
func timestamp(x extension, name string) (time.Time, error) {
	if !x.ok {
		return time.Time{}, nil
	}
	if x.v == nil {
		// A header's text, parsed as types.ToTime parses a string, without boxing it.
		t, err := time.Parse(time.RFC3339Nano, x.s)
		if err != nil {
			return time.Time{}, fmt.Errorf("extension %s is %v; it must be an RFC 3339 timestamp: %v", name, x.s, err)
		}
		return t, nil
	}
	t, err := types.ToTime(x.v)
	if err != nil {
		return time.Time{}, fmt.Errorf("extension %s is %v; it must be an RFC 3339 timestamp: %v", name, x.v, err)
	}
	return t, nil
}

// isJSONContentType accepts "" (CloudEvents then means JSON), application/json, text/json
// and any +json media type, with or without parameters.
func isJSONContentType(ct string) bool {
	if ct == event.ApplicationJSON || strings.TrimSpace(ct) == "" {
		// What every client sends, known without parsing it (ParseMediaType allocates).
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}
