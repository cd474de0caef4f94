package events

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

func intPtr(n int) *int { return &n }

func succeededResult() *Result {
	return &Result{
		RequestID:     "7d3c0f9e-1c1b-4f43-9f52-3f1f6b1d2a10",
		RequestSource: "/offsetagent/cli",
		Name:          "mm2-source",
		Stages: []StageReport{
			{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.002},
			{Stage: "validate_offsets", Outcome: OutcomeOK, DurationSeconds: 0.001},
			{Stage: "wipe_offsets", Outcome: OutcomeOK, DurationSeconds: 0.015},
			{Stage: "write_offsets", Outcome: OutcomeOK, DurationSeconds: 0.021},
			{Stage: "write_config", Outcome: OutcomeOK, DurationSeconds: 0.011},
		},
		Config: Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"},
			{Key: "source.cluster.sasl.jaas.config", Value: "secret stuff"},
			{Key: "name", Value: "mm2-source"},
		},
		Type:                   "source",
		InitialState:           "STOPPED",
		InitialOffsetsResponse: "The offsets for this connector have been altered successfully",
		OffsetsWritten:         intPtr(2),
		OffsetsWiped:           intPtr(1),
		PreviousOffsets: &ConnectorOffsets{Offsets: []ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "cluster", Value: "primary"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "topic", Value: "orders.eu"}},
			Offset:    jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("9007199254740993")}},
		}}},
	}
}

func failedResult() *Result {
	return &Result{
		RequestID:     "req-2",
		RequestSource: "/ci",
		Name:          "jdbc-sink",
		Stages: []StageReport{
			{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.003},
			{Stage: "validate_offsets", Outcome: OutcomeFailed, DurationSeconds: 0.0005},
			{Stage: "wipe_offsets", Outcome: OutcomeSkipped},
			{Stage: "write_offsets", Outcome: OutcomeSkipped},
			{Stage: "write_config", Outcome: OutcomeSkipped},
		},
		FailedStep: "validate_offsets",
		ErrorCode:  400,
		Message:    "Partitions / offsets need to be provided for an alter offsets request",
		Cleanup:    &Cleanup{Summary: "nothing to undo"},
	}
}

func TestResultGolden(t *testing.T) {
	tests := []struct {
		name       string
		golden     string
		typ        string
		res        *Result
		dataschema string
	}{
		{name: "succeeded", golden: "result-succeeded.json", typ: TypeCreateSucceeded, res: succeededResult(), dataschema: SchemaURI(TypeCreateSucceeded)},
		{name: "failed", golden: "result-failed.json", typ: TypeCreateFailed, res: failedResult()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := ResultMessage("results", tt.typ, tt.res, tt.dataschema)
			require.NoError(t, err)
			require.Equal(t, tt.res.Name, string(msg.Key))
			wantHeaders := []kafka.Header{
				{Key: "ce_specversion", Value: []byte("1.0")},
				{Key: "ce_id", Value: []byte(ResultID(tt.res.RequestSource, tt.res.RequestID, tt.typ))},
				{Key: "ce_source", Value: []byte(ResultSource)},
				{Key: "ce_type", Value: []byte(tt.typ)},
				{Key: "content-type", Value: []byte("application/json")},
				{Key: "ce_subject", Value: []byte(tt.res.Name)},
			}
			if tt.dataschema != "" {
				wantHeaders = append(wantHeaders, kafka.Header{Key: "ce_dataschema", Value: []byte(tt.dataschema)})
			}
			require.Equal(t, wantHeaders, msg.Headers)

			stored := checkGolden(t, tt.golden, msg)
			typ, got, err := DecodeResult(&stored)
			require.NoError(t, err)
			require.Equal(t, tt.typ, typ)
			want := *tt.res
			want.Config = want.Config.Redacted()
			require.Equal(t, &want, got)
		})
	}
}

func TestResultMessageDetails(t *testing.T) {
	res := succeededResult()
	a, err := ResultMessage("results", TypeCreateSucceeded, res, "")
	require.NoError(t, err)
	b, err := ResultMessage("results", TypeCreateSucceeded, res, "")
	require.NoError(t, err)
	require.Equal(t, a, b, "a re-published result is the same record")
	require.Equal(t, "secret stuff", res.Config[1].Value, "the caller's result is not modified")
	require.NotContains(t, string(a.Value), "secret stuff")

	tests := []struct {
		name        string
		source, id  string
		typ         string
		sameAsFirst bool
	}{
		{name: "same inputs", source: "/s", id: "1", typ: TypeCreateFailed, sameAsFirst: true},
		{name: "other type", source: "/s", id: "1", typ: TypeCreateSucceeded},
		{name: "other id", source: "/s", id: "2", typ: TypeCreateFailed},
		{name: "other source", source: "/t", id: "1", typ: TypeCreateFailed},
		{name: "shifted separator", source: "/s1", id: "", typ: TypeCreateFailed},
	}
	first := ResultID("/s", "1", TypeCreateFailed)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.sameAsFirst, ResultID(tt.source, tt.id, tt.typ) == first)
		})
	}

	_, err = ResultMessage("results", TypeCreateRequest, res, "")
	require.ErrorContains(t, err, "is not a result type")
	_, err = ResultMessage("results", TypeCreateFailed, nil, "")
	require.ErrorContains(t, err, "no result")

	empty, err := ResultMessage("results", TypeCreateFailed, &Result{RequestSource: "results/0/17"}, "")
	require.NoError(t, err)
	require.Nil(t, empty.Key)
	require.Contains(t, string(empty.Value), `"stages":[]`)
}

func TestDecodeResultStructuredAndErrors(t *testing.T) {
	msg, err := ResultMessage("results", TypeCreateFailed, failedResult(), "")
	require.NoError(t, err)
	// The same event re-encoded in structured mode decodes to the same result.
	var structured kafka.Message
	require.NoError(t, WriteMessage(binding.WithForceStructured(context.Background()), NewMessage(&msg), &structured))
	typ, res, err := DecodeResult(&structured)
	require.NoError(t, err)
	require.Equal(t, TypeCreateFailed, typ)
	require.Equal(t, failedResult(), res)

	req, err := RequestMessage("requests", []byte(`{"name":"c"}`), RequestOptions{ID: "x", Time: time.Unix(0, 0)})
	require.NoError(t, err)
	_, _, err = DecodeResult(&req)
	require.ErrorContains(t, err, "is not a result type")
	_, _, err = DecodeResult(record(`{}`))
	require.ErrorContains(t, err, "record is not a CloudEvent")
}

func TestRequestGolden(t *testing.T) {
	body := readTestdata(t, "create-request.json")
	tests := []struct {
		name   string
		golden string
		opts   RequestOptions
	}{
		{name: "binary", golden: "request-binary.json", opts: RequestOptions{Mode: ModeBinary, ID: "7d3c0f9e-1c1b-4f43-9f52-3f1f6b1d2a10", Time: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}},
		{name: "structured dry run", golden: "request-structured.json", opts: RequestOptions{Mode: ModeStructured, ID: "0b8e3a52-5f07-4c52-8a5e-0d3f1b0c9e21", Source: "/ci/pipeline", DryRun: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := RequestMessage("offsetagent.requests", body, tt.opts)
			require.NoError(t, err)
			stored := checkGolden(t, tt.golden, msg)
			req, err := DecodeRequest(&stored, 0)
			require.NoError(t, err)
			require.Equal(t, tt.opts.ID, req.ID)
			require.Equal(t, tt.opts.DryRun, req.DryRun)
			require.Equal(t, wantCreateRequest(), req.Data)
		})
	}
}

func TestRequestMessageOddBodies(t *testing.T) {
	tests := []struct {
		name   string
		mode   Mode
		body   string
		reason DecodeReason
	}{
		{name: "binary non-JSON body", mode: ModeBinary, body: "oops", reason: ReasonInvalidData},
		{name: "structured non-JSON body goes in data_base64", mode: ModeStructured, body: "oops", reason: ReasonInvalidData},
		{name: "structured empty body", mode: ModeStructured, body: "", reason: ReasonInvalidData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := RequestMessage("r", []byte(tt.body), RequestOptions{Mode: tt.mode})
			require.NoError(t, err)
			require.Nil(t, msg.Key, "no name, no key")
			_, err = DecodeRequest(&msg, 0)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tt.reason, de.Reason, de.Message)
		})
	}
	_, err := RequestMessage("r", nil, RequestOptions{Mode: "avro"})
	require.ErrorContains(t, err, `mode "avro" is neither "binary" nor "structured"`)
}

// resultMessageBinding is ResultMessage built the CloudEvents SDK's way: the event, validated,
// written in binary mode by WriteMessage. ResultMessage writes the same record without it.
func resultMessageBinding(topic, typ string, res *Result, dataschema string) (kafka.Message, error) {
	data := *res
	data.Config = res.Config.Redacted()
	if data.Stages == nil {
		data.Stages = []StageReport{}
	}
	body, err := json.Marshal(&data)
	if err != nil {
		return kafka.Message{}, err
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
		return kafka.Message{}, err
	}
	out := kafka.Message{Topic: topic}
	if err := WriteMessage(binding.WithForceBinary(context.Background()), binding.ToMessage(&ev), &out); err != nil {
		return kafka.Message{}, err
	}
	if res.Name != "" {
		out.Key = []byte(res.Name)
	}
	return out, nil
}

// ResultMessage writes the record the CloudEvents binding writes for the result event, header
// for header and byte for byte, and refuses what the binding refuses.
func TestResultMessageMatchesBinding(t *testing.T) {
	tests := []struct {
		name       string
		typ        string
		res        *Result
		dataschema string
	}{
		{name: "succeeded with schema", typ: TypeCreateSucceeded, res: succeededResult(), dataschema: SchemaURI(TypeCreateSucceeded)},
		{name: "failed without schema", typ: TypeCreateFailed, res: failedResult()},
		{name: "planned", typ: TypeCreatePlanned, res: succeededResult(), dataschema: SchemaURI(TypeCreatePlanned)},
		{name: "no name", typ: TypeCreateFailed, res: &Result{RequestID: "r", RequestSource: "requests/0/17"}},
		{name: "name with spaces and unicode", typ: TypeCreateFailed, res: &Result{RequestID: "r", RequestSource: "/s", Name: " café connector "}},
		{name: "relative schema", typ: TypeCreateFailed, res: failedResult(), dataschema: "schema/result.json"},
		{name: "schema that is no URI", typ: TypeCreateFailed, res: failedResult(), dataschema: "http://a b/%zz"},
		{name: "schema with spaces around", typ: TypeCreateFailed, res: failedResult(), dataschema: "  " + SchemaURI(TypeCreateFailed) + " "},
		{name: "blank name", typ: TypeCreateFailed, res: &Result{RequestID: "r", RequestSource: "/s", Name: "  "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := resultMessageBinding("results", tt.typ, tt.res, tt.dataschema)
			got, err := ResultMessage("results", tt.typ, tt.res, tt.dataschema)
			if wantErr != nil {
				require.Error(t, err, "the binding refuses it: %v", wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// A result record costs its JSON, its id and a few headers, whose varying values and the key
// share one allocation: every request writes one. An append to one header's value does not
// write into the next.
func TestResultMessageAllocations(t *testing.T) {
	res := &Result{RequestID: "r-1", RequestSource: "/bench", Name: "conn-1", Type: "source",
		Stages: []StageReport{{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.0004}}}
	allocs := alloctest.Least(100, func() {
		if _, err := ResultMessage("results", TypeCreateSucceeded, res, SchemaURI(TypeCreateSucceeded)); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 10.0, "allocations per result record")
	msg, err := ResultMessage("results", TypeCreateSucceeded, res, SchemaURI(TypeCreateSucceeded))
	require.NoError(t, err)
	typ := string(msg.Headers[3].Value)
	_ = append(msg.Headers[1].Value, "xxxxxxxx"...)
	require.Equal(t, typ, string(msg.Headers[3].Value))
	require.Equal(t, "conn-1", string(msg.Key))
}
