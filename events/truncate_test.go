package events

import (
	"encoding/json"
	"fmt"
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

// FittingKeep finds, without encoding the whole result, the most entries of the long lists
// whose encoding fits a room: Shortened at that keep grows by at most room bytes over
// Shortened(0), and one entry more would not fit.
func TestFittingKeep(t *testing.T) {
	many := plannedResult()
	for i := range 500 {
		v := fmt.Sprintf(`{"offset":%d}`, i)
		many.Plan.Records = append(many.Plan.Records, PlannedRecord{Topic: "connect-offsets", Partition: i % 25,
			Key: fmt.Sprintf(`["mm2-source",{"cluster":"primary","partition":%d,"topic":"orders.eu"}]`, i), Value: &v})
	}
	sink := plannedResult()
	sink.Plan.Tombstones, sink.Plan.Records = nil, nil
	for i := range 300 {
		sink.Plan.GroupOffsets = append(sink.Plan.GroupOffsets, PlannedGroupOffset{Topic: "orders", Partition: int32(i), Offset: int64(i) << 20})
	}
	prev := succeededResult()
	for range 200 {
		prev.PreviousOffsets.Offsets = append(prev.PreviousOffsets.Offsets, prev.PreviousOffsets.Offsets[0])
	}
	size := func(t *testing.T, r *Result, keep int) int {
		short := r.Shortened(keep)
		b, err := json.Marshal(&short)
		require.NoError(t, err)
		return len(b)
	}
	tests := []struct {
		name string
		res  *Result
		room int
	}{
		{name: "no room", res: many, room: 0},
		{name: "a few records", res: many, room: 1000},
		{name: "most records", res: many, room: 40_000},
		{name: "every record", res: many, room: 1 << 20},
		{name: "group offsets", res: sink, room: 2000},
		{name: "previous offsets", res: prev, room: 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep := tt.res.FittingKeep(tt.room)
			n := tt.res.LongestList()
			require.LessOrEqual(t, keep, n)
			base := size(t, tt.res, 0)
			// listKeys: the key an omitted empty list gets back (group_offsets).
			const listKeys = 64
			require.LessOrEqual(t, size(t, tt.res, keep)-base, tt.room+listKeys, "keep %d fits", keep)
			if keep < n {
				require.Greater(t, size(t, tt.res, keep+1)-base, tt.room, "keep %d is the most that fits", keep)
			}
		})
	}
}
