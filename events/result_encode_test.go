package events

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/race"
)

// The hand-written result encoding writes what encoding/json writes, byte for byte, for every
// kind of result: succeeded, failed with its cleanup, planned, shortened, and the strings and
// durations that encoding/json escapes or formats specially.
func TestMarshalResultMatchesEncodingJSON(t *testing.T) {
	written, wiped := 10, 0
	value := "v"
	tests := []struct {
		name string
		res  Result
	}{
		{name: "zero", res: Result{}},
		{name: "empty stages", res: Result{RequestID: "r", Stages: []StageReport{}}},
		{name: "succeeded", res: Result{RequestID: "r-1", RequestSource: "/src", Name: "mm2-source",
			Stages: []StageReport{{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.000544},
				{Stage: "write_offsets", Outcome: OutcomeOK, DurationSeconds: 0.15}},
			Config: Config{{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"}, {Key: "x", Null: true}},
			Type:   "source", InitialState: "RUNNING", InitialOffsetsResponse: "The offsets were written", Created: "connector",
			Next: "start it", OffsetsWritten: &written, OffsetsWiped: &wiped,
			PreviousOffsets: &ConnectorOffsets{Offsets: []ConnectorOffset{{Partition: jsonvalue.Map{{Key: "a<b", Value: "c&d"}}, Offset: jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("12")}}}}}}},
		{name: "failed", res: Result{RequestID: "r-2", Name: "c", Stages: []StageReport{{Stage: "write_config", Outcome: OutcomeFailed, DurationSeconds: 1.5}},
			FailedStep: "write_config", ErrorCode: 500, Message: "broker said <no> & \"why\"\n",
			Cleanup: &Cleanup{Summary: "removed 3 initial offsets", OffsetsRemoved: 3, ConfigRecordsRemoved: []string{"connector-c"}, Error: "e", Left: "l"}}},
		{name: "planned and shortened", res: Result{RequestID: "r-3", Name: "p",
			Plan:      &Plan{Records: []PlannedRecord{{Topic: "t", Partition: 1, Key: "k", Value: &value}}},
			Truncated: true, FullCounts: &FullCounts{PreviousOffsets: 5, PlanRecords: 9}}},
		{name: "strings and floats encoding/json treats specially", res: Result{RequestID: "\u2028\u2029", RequestSource: "bad \xff utf-8",
			Name: "ü 日本 😀 \x00\x1f\x7f", Stages: []StageReport{
				{Stage: "a", DurationSeconds: 0}, {Stage: "b", DurationSeconds: 1e-7}, {Stage: "c", DurationSeconds: 1e-6},
				{Stage: "d", DurationSeconds: 1e21}, {Stage: "e", DurationSeconds: 123456789.125}, {Stage: "f", DurationSeconds: -2.5e-9},
				{Stage: "g", DurationSeconds: math.SmallestNonzeroFloat64}, {Stage: "h", DurationSeconds: math.MaxFloat64}}}},
		{name: "negative counts", res: Result{OffsetsWritten: new(int), ErrorCode: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(&tt.res)
			require.NoError(t, err)
			got, err := marshalResult(&tt.res)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
	_, err := marshalResult(&Result{Stages: []StageReport{{DurationSeconds: math.NaN()}}})
	require.Error(t, err, "a NaN duration fails as encoding/json fails")
}

func FuzzMarshalResult(f *testing.F) {
	f.Add("r-1", "/src", "name", "stage", 0.5, "msg", 500, "key", "value")
	f.Add("<&>", "\u2028", "\xff", "", 1e-9, "", 0, "", "")
	f.Fuzz(func(t *testing.T, id, source, name, stage string, seconds float64, message string, code int, key, value string) {
		res := Result{RequestID: id, RequestSource: source, Name: name, Stages: []StageReport{{Stage: stage, DurationSeconds: seconds}},
			Message: message, ErrorCode: code, Config: Config{{Key: key, Value: value}}}
		want, werr := json.Marshal(&res)
		got, err := marshalResult(&res)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// A succeeded result's record, for a request with a connector config of six settings, is built
// in a bounded number of allocations: its dataschema is parsed once, not for every result.
func TestSucceededResultMessageAllocations(t *testing.T) {
	written := 1
	res := &Result{RequestID: "req-1", RequestSource: "/bench", Name: "bench-1",
		Stages: []StageReport{{Stage: "validate_config", Outcome: OutcomeOK, DurationSeconds: 0.0005},
			{Stage: "validate_offsets", Outcome: OutcomeOK, DurationSeconds: 0.00001}, {Stage: "wipe_offsets", Outcome: OutcomeOK},
			{Stage: "write_offsets", Outcome: OutcomeOK, DurationSeconds: 0.0001}, {Stage: "write_config", Outcome: OutcomeOK, DurationSeconds: 0.0001}},
		Config: Config{{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"}, {Key: "source.cluster.alias", Value: "src"},
			{Key: "target.cluster.alias", Value: "dst"}, {Key: "topics", Value: ".*"}, {Key: "tasks.max", Value: "4"}, {Key: "name", Value: "bench-1"}},
		Type: "source", InitialState: "RUNNING", InitialOffsetsResponse: "The offsets were written", Created: "connector", OffsetsWritten: &written}
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop what it is given: the counts would include its misses")
	}
	allocs := alloctest.Least(100, func() {
		if _, err := ResultMessage("results", TypeCreateSucceeded, res, "https://example.com/schemas/result.json"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 15.0, "17 when the dataschema was parsed for every result")
}
