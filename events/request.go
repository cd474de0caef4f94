package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
)

// Mode is a CloudEvents Kafka binding content mode.
type Mode string

// Content modes.
const (
	// ModeBinary puts attributes in ce_ headers and the data in the value.
	ModeBinary Mode = "binary"
	// ModeStructured puts the whole event, as application/cloudevents+json, in the value.
	ModeStructured Mode = "structured"
)

// DefaultRequestSource is the source of requests built without one.
const DefaultRequestSource = "/offsetagent/cli"

// RequestOptions tunes RequestMessage. The zero value gives a binary-mode request with a
// random id from DefaultRequestSource.
type RequestOptions struct {
	// Mode is binary (default) or structured.
	Mode Mode
	// ID is the CloudEvent id; empty means a random UUID.
	ID string
	// Source is the CloudEvent source; empty means DefaultRequestSource.
	Source string
	// DryRun sets the dryrun extension.
	DryRun bool
	// Key is the record key and partitionkey extension; empty means the connector name in
	// body, when body parses.
	Key string
	// Time is the CloudEvent time; zero leaves it out.
	Time time.Time
	// Deadline sets the deadline extension (ExtensionDeadline); zero leaves it out.
	Deadline time.Time
	// GiveUp sets the giveup extension (ExtensionGiveUp); zero leaves it out.
	GiveUp time.Time
}

// RequestMessage builds a create request record carrying body as its data, for
// `offsetagent publish` and tests. body is sent as is, even when it is not a valid request,
// so that tests can exercise the agent's error paths. In structured mode a body that is not
// valid JSON goes in data_base64, since "data" could not hold it. In binary mode the record's
// value is body itself, not a copy: body must not change while the record is in use.
func RequestMessage(topic string, body []byte, opts RequestOptions) (kafka.Message, error) {
	ctx := context.Background()
	switch opts.Mode {
	case "", ModeBinary:
		ctx = binding.WithForceBinary(ctx)
	case ModeStructured:
		ctx = binding.WithForceStructured(ctx)
	default:
		return kafka.Message{}, fmt.Errorf("build request message: mode %q is neither %q nor %q", opts.Mode, ModeBinary, ModeStructured)
	}
	if opts.ID == "" {
		id, err := uuid.NewRandom()
		if err != nil {
			return kafka.Message{}, fmt.Errorf("build request message: generate id: %w", err)
		}
		opts.ID = id.String()
	}
	if opts.Source == "" {
		opts.Source = DefaultRequestSource
	}
	if opts.Key == "" {
		if req, err := ParseCreateRequest(body); err == nil {
			opts.Key = req.Name
		}
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(opts.ID)
	ev.SetSource(opts.Source)
	ev.SetType(TypeCreateRequest)
	ev.SetDataContentType(event.ApplicationJSON)
	if !opts.Time.IsZero() {
		ev.SetTime(opts.Time)
	}
	if opts.Key != "" {
		ev.SetExtension(ExtensionPartitionKey, opts.Key)
	}
	if opts.DryRun {
		ev.SetExtension("dryrun", true)
	}
	if !opts.Deadline.IsZero() {
		ev.SetExtension(ExtensionDeadline, types.Timestamp{Time: opts.Deadline.UTC()})
	}
	if !opts.GiveUp.IsZero() {
		ev.SetExtension(ExtensionGiveUp, types.Timestamp{Time: opts.GiveUp.UTC()})
	}
	if len(body) > 0 {
		ev.DataEncoded = body
		ev.DataBase64 = opts.Mode == ModeStructured && !json.Valid(body)
	}
	out := kafka.Message{Topic: topic}
	if err := WriteMessage(ctx, binding.ToMessage(&ev), &out); err != nil {
		return kafka.Message{}, fmt.Errorf("write request event %q: %w", opts.ID, err)
	}
	return out, nil
}
