package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/segmentio/kafka-go"
)

// ResultMessage builds the binary-mode record of a result: key and ce_subject res.Name,
// ce_type typ, ce_source ResultSource, content-type application/json and, when dataschema is
// not empty, ce_dataschema. The ce_id is derived from the request's source and id and typ, so
// a result published again after a crash has the same id and consumers can deduplicate.
//
// A caller publishing the result of a record that did not decode far enough to have an id
// should put something unique to the record (e.g. topic/partition/offset) in RequestSource,
// or every such result gets the same id.
//
// The config in the data is redacted (Config.Redacted): result topics are read more widely
// than Connect's config topic.
func ResultMessage(topic, typ string, res *Result, dataschema string) (kafka.Message, error) {
	switch typ {
	case TypeCreateSucceeded, TypeCreateFailed, TypeCreatePlanned:
	default:
		return kafka.Message{}, fmt.Errorf("build result message: %q is not a result type", typ)
	}
	if res == nil {
		return kafka.Message{}, errors.New("build result message: no result")
	}
	data := *res
	data.Config = res.Config.Redacted()
	if data.Stages == nil {
		data.Stages = []StageReport{}
	}
	body, err := json.Marshal(&data)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("encode result for connector %q: %w", res.Name, err)
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(ResultID(res.RequestSource, res.RequestID, typ))
	ev.SetSource(ResultSource)
	ev.SetType(typ)
	if res.Name != "" {
		ev.SetSubject(res.Name)
	}
	if dataschema != "" {
		ev.SetDataSchema(dataschema)
	}
	ev.SetDataContentType(event.ApplicationJSON)
	ev.DataEncoded = body
	if err := ev.Validate(); err != nil {
		return kafka.Message{}, fmt.Errorf("build result event for connector %q: %w", res.Name, err)
	}
	out := kafka.Message{Topic: topic}
	if err := WriteMessage(binding.WithForceBinary(context.Background()), binding.ToMessage(&ev), &out); err != nil {
		return kafka.Message{}, fmt.Errorf("write result event for connector %q: %w", res.Name, err)
	}
	if res.Name != "" {
		out.Key = []byte(res.Name)
	}
	return out, nil
}

// ResultID is the ce_id of a result: a name-based (SHA-1) UUID of the request source, the
// request id and the result type. NUL separates them so that ("a", "bc") and ("ab", "c")
// give different ids.
func ResultID(requestSource, requestID, typ string) string {
	ns := uuid.NewSHA1(uuid.NameSpaceURL, []byte("urn:offsetagent:result"))
	return uuid.NewSHA1(ns, []byte(requestSource+"\x00"+requestID+"\x00"+typ)).String()
}

// DecodeResult reads a result record back, in either mode: its type and data.
func DecodeResult(msg *kafka.Message) (string, *Result, error) {
	ev, _, derr := recordEvent(msg, true)
	if derr != nil {
		return "", nil, fmt.Errorf("decode result: %w", derr)
	}
	if err := ev.Validate(); err != nil {
		return "", nil, fmt.Errorf("decode result: %w", err)
	}
	switch ev.Type() {
	case TypeCreateSucceeded, TypeCreateFailed, TypeCreatePlanned:
	default:
		return "", nil, fmt.Errorf("decode result: event type %q is not a result type", ev.Type())
	}
	if ct := ev.DataContentType(); !isJSONContentType(ct) {
		return "", nil, fmt.Errorf("decode result: datacontenttype %q is not JSON", ct)
	}
	var res Result
	if err := json.Unmarshal(ev.Data(), &res); err != nil {
		return "", nil, fmt.Errorf("decode result data of event %q: %w", ev.ID(), err)
	}
	return ev.Type(), &res, nil
}

// UnmarshalJSON reads {"partition": ..., "offset": ...}; either may be null or missing, and
// other fields are ignored.
func (o *ConnectorOffset) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := jsonvalue.DecodeValue(dec)
	if err != nil {
		return fmt.Errorf("decode connector offset: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("decode connector offset: more data after the JSON value")
	}
	m, ok := v.(jsonvalue.Map)
	if !ok {
		return fmt.Errorf("decode connector offset: expected an object, got %s", jsonvalue.KindOf(v))
	}
	*o = ConnectorOffset{}
	for _, f := range m {
		var target *jsonvalue.Map
		switch f.Key {
		case "partition":
			target = &o.Partition
		case "offset":
			target = &o.Offset
		default:
			continue
		}
		switch t := f.Value.(type) {
		case nil:
			*target = nil
		case jsonvalue.Map:
			*target = t
		default:
			return fmt.Errorf("decode connector offset: %s must be an object or null, got %s", f.Key, jsonvalue.KindOf(f.Value))
		}
	}
	return nil
}
