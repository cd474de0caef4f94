package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/offsetstore"
)

var allTypes = []string{TypeCreateRequest, TypeCreateSucceeded, TypeCreateFailed, TypeCreatePlanned}

var resultTypes = []string{TypeCreateSucceeded, TypeCreateFailed, TypeCreatePlanned}

// compileSchemas compiles the embedded schema of every event type. The compiler checks each
// document against the draft 2020-12 meta-schema, and the schemas are added as resources under
// their $id so that nothing is fetched.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, typ := range allTypes {
		b, ok := Schema(typ)
		require.True(t, ok, "no schema for %s", typ)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err, "schema of %s", typ)
		require.NoError(t, c.AddResource(SchemaURI(typ), doc))
	}
	out := map[string]*jsonschema.Schema{}
	for _, typ := range allTypes {
		s, err := c.Compile(SchemaURI(typ))
		require.NoError(t, err, "compile schema of %s", typ)
		out[typ] = s
	}
	return out
}

// validate checks data against the schema of typ.
func validate(t *testing.T, schemas map[string]*jsonschema.Schema, typ string, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err, "data is not JSON: %s", data)
	return schemas[typ].Validate(inst)
}

// goldenEvent returns the type and data of the event in a golden record of testdata, in
// either mode.
func goldenEvent(t *testing.T, name string) (string, []byte) {
	t.Helper()
	var g goldenRecord
	require.NoError(t, json.Unmarshal(readTestdata(t, name), &g))
	header := func(key string) string {
		for _, h := range g.Headers {
			if h.Key == key {
				return h.Value
			}
		}
		return ""
	}
	if strings.HasPrefix(header("content-type"), "application/cloudevents+json") {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(g.Value), &ev), "structured event in %s", name)
		return ev.Type, ev.Data
	}
	return header("ce_type"), []byte(g.Value)
}

func TestSchemaLookup(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		uri  string
	}{
		{name: "request", typ: TypeCreateRequest, uri: "https://offsetagent.dev/schema/create-request.json"},
		{name: "succeeded", typ: TypeCreateSucceeded, uri: "https://offsetagent.dev/schema/result-succeeded.json"},
		{name: "failed", typ: TypeCreateFailed, uri: "https://offsetagent.dev/schema/result-failed.json"},
		{name: "planned", typ: TypeCreatePlanned, uri: "https://offsetagent.dev/schema/result-planned.json"},
		{name: "unknown type", typ: "offsetagent.connector.delete.request"},
		{name: "empty type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.uri, SchemaURI(tt.typ))
			b, ok := Schema(tt.typ)
			require.Equal(t, tt.uri != "", ok)
			if !ok {
				require.Nil(t, b)
				return
			}
			var doc struct {
				Schema string `json:"$schema"`
				ID     string `json:"$id"`
			}
			require.NoError(t, json.Unmarshal(b, &doc))
			require.Equal(t, tt.uri, doc.ID, "the dataschema attribute is the schema's $id")
			require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc.Schema)
		})
	}
	a, _ := Schema(TypeCreateFailed)
	a[0] = 'x'
	b, _ := Schema(TypeCreateFailed)
	require.Equal(t, byte('{'), b[0], "Schema returns a copy")
}

func TestGoldenEventsMatchSchemas(t *testing.T) {
	schemas := compileSchemas(t)
	tests := []struct {
		name   string
		golden string
		typ    string
	}{
		{name: "request body", golden: "create-request.json", typ: TypeCreateRequest},
		{name: "binary request", golden: "request-binary.json", typ: TypeCreateRequest},
		{name: "structured request", golden: "request-structured.json", typ: TypeCreateRequest},
		{name: "succeeded", golden: "result-succeeded.json", typ: TypeCreateSucceeded},
		{name: "failed", golden: "result-failed.json", typ: TypeCreateFailed},
		{name: "planned", golden: "result-planned.json", typ: TypeCreatePlanned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data []byte
			if tt.golden == "create-request.json" {
				data = readTestdata(t, tt.golden)
			} else {
				var typ string
				typ, data = goldenEvent(t, tt.golden)
				require.Equal(t, tt.typ, typ)
			}
			require.NoError(t, validate(t, schemas, tt.typ, data))
		})
	}
}

// edit decodes a golden event's data, lets change modify it and encodes it again.
func edit(t *testing.T, golden string, change func(map[string]any)) []byte {
	t.Helper()
	_, data := goldenEvent(t, golden)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	change(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestSchemasRefuse(t *testing.T) {
	schemas := compileSchemas(t)
	request := readTestdata(t, "create-request.json")
	withRequestField := func(key string, value any) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(request, &m))
		m[key] = value
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name  string
		typ   string
		data  []byte
		valid bool
		// want is a fragment of the validator's error naming the offending place.
		want string
	}{
		{name: "succeeded result without request_id", typ: TypeCreateSucceeded,
			data: edit(t, "result-succeeded.json", func(m map[string]any) { delete(m, "request_id") }), want: "request_id"},
		{name: "failed result without request_id", typ: TypeCreateFailed,
			data: edit(t, "result-failed.json", func(m map[string]any) { delete(m, "request_id") }), want: "request_id"},
		{name: "failed result with error_code 418", typ: TypeCreateFailed,
			data: edit(t, "result-failed.json", func(m map[string]any) { m["error_code"] = 418 }), want: "/error_code"},
		{name: "failed result with error_code 409", typ: TypeCreateFailed,
			data: edit(t, "result-failed.json", func(m map[string]any) { m["error_code"] = 409 }), valid: true},
		{name: "failed result with an unknown stage", typ: TypeCreateFailed,
			data: edit(t, "result-failed.json", func(m map[string]any) { m["failed_step"] = "write_group" }), want: "/failed_step"},
		{name: "failed result without cleanup", typ: TypeCreateFailed,
			data: edit(t, "result-failed.json", func(m map[string]any) { delete(m, "cleanup") }), want: "cleanup"},
		{name: "succeeded result with a failed-only field", typ: TypeCreateSucceeded,
			data: edit(t, "result-succeeded.json", func(m map[string]any) { m["error_code"] = 500 }), want: "error_code"},
		{name: "succeeded result with a lower-case state", typ: TypeCreateSucceeded,
			data: edit(t, "result-succeeded.json", func(m map[string]any) { m["initial_state"] = "stopped" }), want: "/initial_state"},
		{name: "planned result without plan", typ: TypeCreatePlanned,
			data: edit(t, "result-planned.json", func(m map[string]any) { delete(m, "plan") }), want: "plan"},
		{name: "request with an unknown top-level field", typ: TypeCreateRequest,
			data: withRequestField("tasks.max", 4), want: "tasks.max"},
		{name: "request without name", typ: TypeCreateRequest,
			data: []byte(`{"config": {}}`), want: "name"},
		{name: "request with a nested config value", typ: TypeCreateRequest,
			data: withRequestField("config", map[string]any{"topics": []string{"a"}}), want: "/config/topics"},
		{name: "request with an unknown initial_state", typ: TypeCreateRequest,
			data: withRequestField("initial_state", "STARTED"), want: "/initial_state"},
		{name: "request with initial_state in mixed case", typ: TypeCreateRequest,
			data: withRequestField("initial_state", "Paused"), valid: true},
		{name: "request with null initial_state", typ: TypeCreateRequest,
			data: withRequestField("initial_state", nil), valid: true},
		{name: "request with offsets in the PATCH body shape", typ: TypeCreateRequest,
			data: withRequestField("initial_offsets", map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"f": "a"}, "offset": nil}}}), valid: true},
		{name: "request with an unknown field in the PATCH body shape", typ: TypeCreateRequest,
			data: withRequestField("initial_offsets", map[string]any{"offsets": []any{}, "reset": true}), want: "/initial_offsets"},
		{name: "request with an offset entry field Connect does not know", typ: TypeCreateRequest,
			data: withRequestField("initial_offsets", []any{map[string]any{"partition": map[string]any{}, "offset": map[string]any{}, "topic": "t"}}), want: "/initial_offsets"},
		{name: "request for offsets only", typ: TypeCreateRequest,
			data: withRequestField("create", CreateOffsetsOnly), valid: true},
		{name: "request with null create", typ: TypeCreateRequest,
			data: withRequestField("create", nil), valid: true},
		{name: "request with an unknown create", typ: TypeCreateRequest,
			data: withRequestField("create", "config-only"), want: "/create"},
		{name: "offsets-only succeeded result", typ: TypeCreateSucceeded,
			data: edit(t, "result-succeeded.json", func(m map[string]any) {
				m["created"], m["next"] = CreateOffsetsOnly, "create connector mm2-source with this config"
			}), valid: true},
		{name: "succeeded result with an unknown created", typ: TypeCreateSucceeded,
			data: edit(t, "result-succeeded.json", func(m map[string]any) { m["created"] = "config" }), want: "/created"},
		{name: "request with a string offset", typ: TypeCreateRequest,
			data: withRequestField("initial_offsets", []any{map[string]any{"partition": map[string]any{}, "offset": "42"}}), want: "/initial_offsets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(t, schemas, tt.typ, tt.data)
			if tt.valid {
				require.NoError(t, err)
				return
			}
			var ve *jsonschema.ValidationError
			require.ErrorAs(t, err, &ve, "%s must be refused", tt.data)
			require.Contains(t, ve.Error(), tt.want)
		})
	}
}

func plannedResult() *Result {
	const offsetsTopic, configTopic, partitions = "connect-offsets", "connect-configs", 25
	key := `["mm2-source",{"cluster":"primary","partition":0,"topic":"orders.eu"}]`
	str := func(s string) *string { return &s }
	plan := &Plan{
		Tombstones: []PlannedRecord{{Topic: offsetsTopic, Partition: offsetstore.PartitionFor([]byte(key), partitions), Key: key}},
		Records: []PlannedRecord{
			{Topic: offsetsTopic, Partition: offsetstore.PartitionFor([]byte(key), partitions), Key: key, Value: str(`{"offset":1042}`)},
		},
		ConfigRecords: []PlannedRecord{
			{Topic: configTopic, Key: "target-state-mm2-source", Value: str(`{"state":"PAUSED","state.v2":"STOPPED"}`)},
			{Topic: configTopic, Key: "connector-mm2-source", Value: str(`{"properties":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","source.cluster.sasl.jaas.config":"[hidden]","name":"mm2-source"}}`)},
		},
	}
	return &Result{
		RequestID:     "0b8e3a52-5f07-4c52-8a5e-0d3f1b0c9e21",
		RequestSource: "/ci/pipeline",
		Name:          "mm2-source",
		Stages: []StageReport{
			{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.002},
			{Stage: "validate_offsets", Outcome: OutcomeOK, DurationSeconds: 0.001},
			{Stage: "wipe_offsets", Outcome: OutcomeSkipped},
			{Stage: "write_offsets", Outcome: OutcomeSkipped},
			{Stage: "write_config", Outcome: OutcomeSkipped},
		},
		Config: Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"},
			{Key: "source.cluster.sasl.jaas.config", Value: "secret stuff"},
			{Key: "name", Value: "mm2-source"},
		},
		Type:                   "source",
		InitialState:           "STOPPED",
		InitialOffsetsResponse: "The offsets for this connector have been altered successfully",
		OffsetsWritten:         intPtr(0),
		OffsetsWiped:           intPtr(0),
		Plan:                   plan,
	}
}

// TestPlannedResultGolden writes testdata/result-planned.json the way TestResultGolden writes
// the other results, with the dataschema the agent sets.
func TestPlannedResultGolden(t *testing.T) {
	res := plannedResult()
	msg, err := ResultMessage("results", TypeCreatePlanned, res, SchemaURI(TypeCreatePlanned))
	require.NoError(t, err)
	stored := checkGolden(t, "result-planned.json", msg)
	typ, got, err := DecodeResult(&stored)
	require.NoError(t, err)
	require.Equal(t, TypeCreatePlanned, typ)
	res.Config = res.Config.Redacted()
	require.Equal(t, res, got)
}

func TestResultMessageDataschema(t *testing.T) {
	for _, typ := range resultTypes {
		t.Run(typ, func(t *testing.T) {
			msg, err := ResultMessage("results", typ, failedResult(), SchemaURI(typ))
			require.NoError(t, err)
			require.Equal(t, []string{SchemaURI(typ)}, headerValues(msg, "ce_dataschema"))

			ev, _, derr := recordEvent(&msg, true)
			require.Nil(t, derr)
			require.Equal(t, SchemaURI(typ), ev.DataSchema())

			none, err := ResultMessage("results", typ, failedResult(), "")
			require.NoError(t, err)
			require.Empty(t, headerValues(none, "ce_dataschema"))
		})
	}
}

func headerValues(msg kafka.Message, key string) []string {
	var out []string
	for _, h := range msg.Headers {
		if h.Key == key {
			out = append(out, string(h.Value))
		}
	}
	return out
}

// TestResultSchemasCoverResult keeps the schemas and the Result struct in step: every JSON
// field of Result is a property of some result schema, every property is a field, and the
// parts the three schemas share are the same text in each.
func TestResultSchemasCoverResult(t *testing.T) {
	type doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]json.RawMessage `json:"$defs"`
	}
	docs := map[string]doc{}
	for _, typ := range resultTypes {
		b, ok := Schema(typ)
		require.True(t, ok)
		var d doc
		require.NoError(t, json.Unmarshal(b, &d))
		docs[typ] = d
	}

	fields := map[string]bool{}
	rt := reflect.TypeFor[Result]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	covered := map[string]bool{}
	for typ, d := range docs {
		for p := range d.Properties {
			require.True(t, fields[p], "schema of %s has property %q that Result does not have", typ, p)
			covered[p] = true
		}
	}
	for f := range fields {
		require.True(t, covered[f], "Result field %q is in no result schema", f)
	}

	first := docs[TypeCreateSucceeded]
	for _, typ := range resultTypes[1:] {
		for _, p := range []string{"request_id", "request_source", "name", "stages", "previous_offsets"} {
			require.JSONEq(t, string(first.Properties[p]), string(docs[typ].Properties[p]), "property %s of %s", p, typ)
		}
		for _, d := range []string{"stage", "connectorOffsets", "connectorOffset"} {
			require.JSONEq(t, string(first.Defs[d]), string(docs[typ].Defs[d]), "$defs/%s of %s", d, typ)
		}
	}
	for _, p := range []string{"config", "type", "initial_state", "initial_offsets_response", "offsets_written", "offsets_wiped"} {
		require.JSONEq(t, string(first.Properties[p]), string(docs[TypeCreatePlanned].Properties[p]), "property %s of planned", p)
	}
}
