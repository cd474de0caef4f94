package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Shortened and Minimal results keep what they promise, say that they are truncated with the
// full counts, and still match their type's schema; the original is not changed.
func TestShortenedAndMinimalResults(t *testing.T) {
	schemas := compileSchemas(t)
	long := succeededResult()
	long.PreviousOffsets.Offsets = append(long.PreviousOffsets.Offsets, long.PreviousOffsets.Offsets[0], long.PreviousOffsets.Offsets[0])
	failed := failedResult()
	failed.Message = strings.Repeat("é", 2000)
	tests := []struct {
		name  string
		typ   string
		res   *Result
		short func(*Result) Result
		check func(t *testing.T, r Result)
	}{
		{name: "succeeded shortened", typ: TypeCreateSucceeded, res: long, short: func(r *Result) Result { return r.Shortened(1) },
			check: func(t *testing.T, r Result) {
				require.Len(t, r.PreviousOffsets.Offsets, 1)
				require.Equal(t, 3, r.FullCounts.PreviousOffsets)
				require.NotEmpty(t, r.Config)
			}},
		{name: "succeeded minimal", typ: TypeCreateSucceeded, res: long, short: (*Result).Minimal,
			check: func(t *testing.T, r Result) {
				require.Nil(t, r.PreviousOffsets)
				require.Nil(t, r.Config)
				require.Equal(t, 3, r.FullCounts.PreviousOffsets)
				require.Equal(t, 2, *r.OffsetsWritten)
			}},
		{name: "planned shortened", typ: TypeCreatePlanned, res: plannedResult(), short: func(r *Result) Result { return r.Shortened(0) },
			check: func(t *testing.T, r Result) {
				require.Empty(t, r.Plan.Records)
				require.Equal(t, len(plannedResult().Plan.Records), r.FullCounts.PlanRecords)
				require.NotEmpty(t, r.Plan.ConfigRecords)
			}},
		{name: "planned minimal", typ: TypeCreatePlanned, res: plannedResult(), short: (*Result).Minimal,
			check: func(t *testing.T, r Result) { require.Nil(t, r.Plan) }},
		{name: "failed minimal", typ: TypeCreateFailed, res: failed, short: (*Result).Minimal,
			check: func(t *testing.T, r Result) {
				require.LessOrEqual(t, len(r.Message), 1024)
				require.True(t, strings.HasPrefix(failed.Message, r.Message))
				require.Equal(t, "validate_offsets", r.FailedStep)
				require.Equal(t, 400, r.ErrorCode)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := json.Marshal(tt.res)
			require.NoError(t, err)
			r := tt.short(tt.res)
			require.True(t, r.Truncated)
			require.NotNil(t, r.FullCounts)
			require.Equal(t, tt.res.RequestID, r.RequestID)
			require.Equal(t, tt.res.RequestSource, r.RequestSource)
			tt.check(t, r)
			data, err := json.Marshal(&r)
			require.NoError(t, err)
			require.NoError(t, validate(t, schemas, tt.typ, data), "%s", data)
			after, err := json.Marshal(tt.res)
			require.NoError(t, err)
			require.JSONEq(t, string(before), string(after), "the original is unchanged")
		})
	}
}
