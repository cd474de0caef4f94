package kafkaio

import (
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// A failed Write says which of its records are known not to be in the topic: those a broker
// refused before appending them, never those whose answer says nothing of the append
// (REQUEST_TIMED_OUT comes after it: kfake, as Kafka, keeps the records).
func TestWriteErrorSaysWhatIsNotWritten(t *testing.T) {
	tests := []struct {
		name  string
		n     int // records: up to SmallWrite go through Produce, more in rounds
		err   *kerr.Error
		notIn bool
		text  string
	}{
		{name: "refused", n: 1, err: kerr.TopicAuthorizationFailed, notIn: true, text: "0 of 1 records written, 1 not (refused or not sent): "},
		{name: "refused in rounds", n: SmallWrite + 1, err: kerr.InvalidRecord, notIn: true,
			text: fmt.Sprintf("0 of %d records written, %d not (refused or not sent): ", SmallWrite+1, SmallWrite+1)},
		{name: "not enough replicas", n: 2, err: kerr.NotEnoughReplicas, notIn: true, text: "0 of 2 records written, 2 not (refused or not sent): "},
		{name: "timed out", n: 1, err: kerr.RequestTimedOut, text: "0 of 1 records written, 1 unconfirmed (they may be in the topic): "},
		{name: "timed out in rounds", n: SmallWrite + 1, err: kerr.RequestTimedOut,
			text: fmt.Sprintf("0 of %d records written, %d unconfirmed (they may be in the topic): ", SmallWrite+1, SmallWrite+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, p := startProducerCluster(t, "w")
			ctx := testContext(t)
			recs := make([]Record, tt.n)
			parts := make([]int32, tt.n)
			for i := range recs {
				recs[i] = Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
				parts[i] = int32(i % 3)
			}
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "w", Err: tt.err, Count: -1})
			err := p.Write(ctx, "w", recs, parts, nil)
			var we *WriteError
			require.ErrorAs(t, err, &we)
			require.Zero(t, we.Written)
			require.Len(t, we.Failed, tt.n)
			if tt.notIn {
				require.Equal(t, we.Failed, we.NotWritten)
			} else {
				require.Empty(t, we.NotWritten)
			}
			require.Equal(t, !tt.notIn, MayHaveWritten(err))
			require.Equal(t, !tt.notIn, MayHaveWritten(fmt.Errorf("wrapped: %w", err)))
			require.Contains(t, err.Error(), tt.text)
		})
	}
	require.True(t, MayHaveWritten(fmt.Errorf("not a write error")), "an error that says nothing of the records")
	require.True(t, MayHaveWritten(&WriteError{Failed: []int{0}}), "built without NotWritten: the record may be there")
	require.True(t, MayHaveWritten(&WriteError{Written: 1, Failed: []int{1}, NotWritten: []int{1}}), "one acknowledged")
}

// A write that succeeded landed, and saying so costs nothing: the request path asks it after
// every write of a stage (the targets errors.As would fill escape, two allocations a call).
func TestMayHaveWrittenSuccessAllocations(t *testing.T) {
	require.True(t, MayHaveWritten(nil))
	require.Zero(t, alloctest.Least(100, func() { _ = MayHaveWritten(nil) }))
}

// The acknowledged items of a write are reported in the order first met, each with the
// indexes of its records in order, the failed ones left out; a write of ten records on
// seven partitions costs one allocation for all of their indexes (a map of a slice each was
// one of a request's larger costs).
func TestReportItems(t *testing.T) {
	items := make([]produceItem, 7)
	for i := range items {
		items[i] = produceItem{partition: int32(i), base: int64(100 * i)}
	}
	owner := []*produceItem{&items[3], &items[0], &items[3], nil, &items[5], &items[1], &items[2], &items[4], &items[6], &items[0]}
	errs := make([]error, len(owner))
	errs[3] = fmt.Errorf("refused")
	var got []Acked
	reportItems(make([]kafka.Message, len(owner)), errs, owner, func(a Acked) { got = append(got, a) })
	require.Equal(t, []Acked{{Partition: 3, Base: 300, Idx: []int{0, 2}}, {Partition: 0, Base: 0, Idx: []int{1, 9}},
		{Partition: 5, Base: 500, Idx: []int{4}}, {Partition: 1, Base: 100, Idx: []int{5}}, {Partition: 2, Base: 200, Idx: []int{6}},
		{Partition: 4, Base: 400, Idx: []int{7}}, {Partition: 6, Base: 600, Idx: []int{8}}}, got)
	got[0].Idx = append(got[0].Idx, 42)
	require.Equal(t, []int{1, 9}, got[1].Idx, "an append to one item's indexes writes into the next's")
	msgs := make([]kafka.Message, len(owner))
	allocs := alloctest.Least(100, func() { reportItems(msgs, nil, owner[4:], func(Acked) {}) })
	require.LessOrEqual(t, allocs, 1.0)
}

// A write that succeeded needs no refusal worded: no allocation.
func TestWriteRefusalSuccessAllocations(t *testing.T) {
	p := &Producer{}
	require.NoError(t, p.writeRefusal("t", nil))
	require.Zero(t, alloctest.Least(100, func() { _ = p.writeRefusal("t", nil) }))
}
