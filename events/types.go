package events

import (
	"time"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// CloudEvent types. Automation matches on these strings: never change them.
const (
	TypeCreateRequest   = "offsetagent.connector.create.request"
	TypeCreateSucceeded = "offsetagent.connector.create.succeeded"
	TypeCreateFailed    = "offsetagent.connector.create.failed"
	TypeCreatePlanned   = "offsetagent.connector.create.planned"
)

// ResultSource is the CloudEvents source of every result the agent publishes.
const ResultSource = "/offsetagent"

// What a request creates (the request field "create").
const (
	// CreateConnector: the connector's offsets and its config records, as POST /connectors with
	// initial_offsets would (KIP-995). The default unless the agent runs with
	// OFFSETAGENT_CONNECTORS_MANAGED_BY.
	CreateConnector = "connector"
	// CreateOffsetsOnly: the connector's offsets alone, for a connector that does not exist yet
	// and that someone else (an operator such as Strimzi, from a KafkaConnector resource) will
	// create with POST /connectors; it then starts at them.
	CreateOffsetsOnly = "offsets-only"
)

// ConfigEntry is one connector config property. Connect keeps configs as string to string;
// a JSON number or boolean in a request is coerced to its text as Jackson does, and a JSON null
// is kept (Null) so validation can reject it with Connect's message.
type ConfigEntry struct {
	Key   string
	Value string
	Null  bool
}

// Config is a connector config in the order it arrived. Connect deserialises the REST body's
// config into a LinkedHashMap and appends "name" when it is missing, so this order is the
// order of the properties in the connector record it writes.
type Config []ConfigEntry

// OffsetEntry is one KIP-875 {"partition": ..., "offset": ...} element.
type OffsetEntry struct {
	// Partition is nil when the partition is null or missing.
	Partition jsonvalue.Map
	// Offset is nil when the offset is null or missing: reset that partition.
	Offset jsonvalue.Map
}

// CreateRequest is the data of a create request: the KIP-995 POST /connectors body.
type CreateRequest struct {
	// Name is the connector name exactly as sent (validation trims it).
	Name string
	// Config is nil when the body has no config object.
	Config Config
	// InitialState is the KIP-980 initial_state as sent ("" when absent).
	InitialState string
	// Create is the request's "create" field as sent ("" when absent or null): what the
	// request creates (CreateConnector, CreateOffsetsOnly). It is offsetagent's own field, not
	// Connect's; validate_config refuses any other value.
	Create string
	// InitialOffsets holds the entries of initial_offsets, given as a bare array or as
	// {"offsets": [...]}. HasInitialOffsets tells an absent field from an empty list.
	InitialOffsets    []OffsetEntry
	HasInitialOffsets bool
	// RawOffsets, when not nil, is the text of a large initial_offsets array that DecodeRequest
	// checked (it decodes: Offsets) but did not decode, InitialOffsets being nil: a caller may
	// read it in one pass of its own. It shares the request record's memory.
	RawOffsets []byte
	// LoneSurrogates names the fields whose JSON strings held a lone UTF-16 surrogate escape
	// ("\ud800"), in document order: decoding replaced each with U+FFFD, so they must not be
	// written. Validation refuses the request, naming them.
	LoneSurrogates []string
}

// Request is a decoded request event: its CloudEvent attributes and data.
type Request struct {
	ID     string
	Source string
	Type   string
	// DryRun is the CloudEvent extension "dryrun" = true.
	DryRun bool
	// Deadline is the CloudEvent extension "deadline" (ExtensionDeadline); zero when absent.
	// Past it the agent writes nothing for the request and answers with a failed result.
	Deadline time.Time
	// GiveUp is the CloudEvent extension "giveup" (ExtensionGiveUp); zero when absent. The
	// request's writes must be over by it: past it they are rolled back, and the request fails.
	GiveUp time.Time
	Data   CreateRequest

	// pending is the data of a request whose initial_offsets text DecodeRequestDeferred left
	// unchecked (Deferred), decoded again by Check with tune.
	pending []byte
	tune    scanTuning
}

// StageOutcome is what happened to one stage of a request.
type StageOutcome string

// Stage outcomes.
const (
	OutcomeOK      StageOutcome = "ok"
	OutcomeFailed  StageOutcome = "failed"
	OutcomeSkipped StageOutcome = "skipped"
)

// StageReport is one element of a result's "stages" list.
type StageReport struct {
	Stage           string       `json:"stage"`
	Outcome         StageOutcome `json:"outcome"`
	DurationSeconds float64      `json:"duration_seconds"`
}

// ConnectorOffset is one element of the GET /connectors/{name}/offsets shape.
type ConnectorOffset struct {
	Partition jsonvalue.Map `json:"partition"`
	Offset    jsonvalue.Map `json:"offset"`
}

// ConnectorOffsets is the GET /connectors/{name}/offsets body.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// Cleanup says what a failed request undid, and what it could not.
type Cleanup struct {
	// Summary is one human sentence, e.g. "nothing to undo" or "removed 3 initial offsets".
	Summary string `json:"summary"`
	// OffsetsRemoved counts the initial offsets that were tombstoned or deleted again.
	OffsetsRemoved int `json:"offsets_removed"`
	// OffsetsRestored counts snapshot offsets written back.
	OffsetsRestored int `json:"offsets_restored"`
	// ConfigRecordsRemoved lists config-topic keys that were tombstoned.
	ConfigRecordsRemoved []string `json:"config_records_removed,omitempty"`
	// Error is set when the cleanup itself failed; Left then says what remains.
	Error string `json:"error,omitempty"`
	Left  string `json:"left,omitempty"`
}

// Result is the data of a succeeded, failed or planned result event.
type Result struct {
	RequestID     string        `json:"request_id"`
	RequestSource string        `json:"request_source"`
	Name          string        `json:"name"`
	Stages        []StageReport `json:"stages"`

	// Succeeded only.
	Config                 Config `json:"config,omitempty"`
	Type                   string `json:"type,omitempty"`
	InitialState           string `json:"initial_state,omitempty"`
	InitialOffsetsResponse string `json:"initial_offsets_response,omitempty"`
	// Created is what the request created (CreateConnector or CreateOffsetsOnly); Next, for
	// offsets only, says what must happen for the connector to start at them.
	Created        string `json:"created,omitempty"`
	Next           string `json:"next,omitempty"`
	OffsetsWritten *int   `json:"offsets_written,omitempty"`
	OffsetsWiped   *int   `json:"offsets_wiped,omitempty"`

	// Failed only.
	FailedStep string   `json:"failed_step,omitempty"`
	ErrorCode  int      `json:"error_code,omitempty"`
	Message    string   `json:"message,omitempty"`
	Cleanup    *Cleanup `json:"cleanup,omitempty"`

	// PreviousOffsets is the connector's offsets before the request wiped them.
	PreviousOffsets *ConnectorOffsets `json:"previous_offsets,omitempty"`
	// Plan is set on planned (dry-run) results.
	Plan *Plan `json:"plan,omitempty"`

	// Truncated is set when the result was shortened to fit the result topic's
	// max.message.bytes (see Shortened and Minimal); FullCounts then gives the full length of
	// every list that was cut.
	Truncated  bool        `json:"truncated,omitempty"`
	FullCounts *FullCounts `json:"full_counts,omitempty"`
}
