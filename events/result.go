package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"

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
	body, err := marshalResult(&data)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("encode result for connector %q: %w", res.Name, err)
	}
	// The binary-mode headers are written here as the CloudEvents binding would write the
	// event (WriteMessage, binding.WithForceBinary: the attributes in headerRank order, all
	// strings), without building it: a result is the one record the agent writes for every
	// request, and the SDK's event and binding cost about 90 allocations each.
	// TestResultMessageMatchesBinding holds the two together.
	// As the SDK sets them: the subject and the dataschema trimmed, a dataschema that is not
	// an absolute URI refused.
	var schema string
	if ds := strings.TrimSpace(dataschema); ds != "" {
		if last := lastDataschema.Load(); last != nil && last.in == ds {
			schema = last.out // an agent names the same schema in every result
		} else {
			u, err := url.Parse(ds)
			if err == nil && !u.IsAbs() {
				err = errors.New("not an absolute URI")
			}
			if err != nil {
				return kafka.Message{}, fmt.Errorf("build result event for connector %q: dataschema %q: %w", res.Name, dataschema, err)
			}
			schema = u.String()
			lastDataschema.Store(&parsedDataschema{in: ds, out: schema})
		}
	}
	// The header values that vary and the key share one allocation, each capped at its
	// length (an append to one never writes into the next).
	id, subject := ResultID(res.RequestSource, res.RequestID, typ), strings.TrimSpace(res.Name)
	vals := make([]byte, 0, len(id)+len(typ)+len(subject)+len(res.Name)+len(schema))
	cut := func(s string) []byte {
		start := len(vals)
		vals = append(vals, s...)
		return vals[start:len(vals):len(vals)]
	}
	headers := make([]kafka.Header, 0, 7)
	headers = append(headers,
		kafka.Header{Key: HeaderPrefix + "specversion", Value: specVersionV1},
		kafka.Header{Key: HeaderPrefix + "id", Value: cut(id)},
		kafka.Header{Key: HeaderPrefix + "source", Value: resultSourceBytes},
		kafka.Header{Key: HeaderPrefix + "type", Value: cut(typ)},
		kafka.Header{Key: HeaderContentType, Value: applicationJSON},
	)
	out := kafka.Message{Topic: topic, Value: body}
	if subject != "" {
		headers = append(headers, kafka.Header{Key: HeaderPrefix + "subject", Value: cut(subject)})
	}
	if res.Name != "" {
		out.Key = cut(res.Name)
	}
	if schema != "" {
		headers = append(headers, kafka.Header{Key: HeaderPrefix + "dataschema", Value: cut(schema)})
	}
	out.Headers = headers
	return out, nil
}

// parsedDataschema is a result's dataschema (trimmed) and the URI it was parsed into.
type parsedDataschema struct{ in, out string }

// lastDataschema is the last dataschema ResultMessage parsed, valid: the next result names
// the same one.
var lastDataschema atomic.Pointer[parsedDataschema]

// The constant header values of a result record. A record's header values are not changed
// by its writers: kafka-go and kafkaio copy them into the batch.
var (
	specVersionV1     = []byte(event.CloudEventsVersionV1)
	resultSourceBytes = []byte(ResultSource)
	applicationJSON   = []byte(event.ApplicationJSON)
)

// resultNamespace is the namespace of result ids (ResultID).
var resultNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("urn:offsetagent:result"))

// ResultID is the ce_id of a result: a name-based (SHA-1) UUID of the request source, the
// request id and the result type. NUL separates them so that ("a", "bc") and ("ab", "c")
// give different ids.
func ResultID(requestSource, requestID, typ string) string {
	return uuid.NewSHA1(resultNamespace, []byte(requestSource+"\x00"+requestID+"\x00"+typ)).String()
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
