package apply

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

func sinkOffsetsOf(n int, bump int) []events.ConnectorOffset {
	out := make([]events.ConnectorOffset, n)
	for p := range out {
		out[p] = events.ConnectorOffset{
			Partition: jsonvalue.Map{{Key: "kafka_topic", Value: "in"}, {Key: "kafka_partition", Value: jsonvalue.Number(fmt.Sprint(p))}},
			Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(fmt.Sprint(100 + p + bump))}},
		}
	}
	return out
}

// TestSameOffsets compares two reads of a connector's offsets as their JSON, in any order.
func TestSameOffsets(t *testing.T) {
	a, b := sinkOffsetsOf(12, 0), sinkOffsetsOf(12, 0)
	b[0], b[11] = b[11], b[0]
	require.True(t, sameOffsets(a, b), "the same entries in another order")
	require.False(t, sameOffsets(a, sinkOffsetsOf(12, 1)), "an offset moved")
	require.False(t, sameOffsets(a, sinkOffsetsOf(11, 0)), "an entry fewer")
	require.True(t, sameOffsets(nil, []events.ConnectorOffset{}))
	c := sinkOffsetsOf(1, 0)
	c[0].Offset = jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number("100.0")}}
	require.False(t, sameOffsets(sinkOffsetsOf(1, 0), c), "another number literal is another offset, as Connect's key bytes differ")
	d := sinkOffsetsOf(1, 0)
	d[0].Offset = nil
	e := sinkOffsetsOf(1, 0)
	e[0].Offset = jsonvalue.Map{}
	require.False(t, sameOffsets(d, e), "a null offset is not an empty one")
	require.True(t, sameOffsets(d, d))
	// Partition and offset are told apart: their JSON is joined by a comma between two objects.
	f := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "a", Value: "1"}}, Offset: jsonvalue.Map{{Key: "b", Value: "2"}}}}
	g := []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "b", Value: "2"}}, Offset: jsonvalue.Map{{Key: "a", Value: "1"}}}}
	require.False(t, sameOffsets(f, g))
}

// TestSameOffsetsAllocations bounds what the comparison of two reads allocates, which every
// stop barrier makes twice: a string an entry, its two maps as values and a buffer, at most
// four an entry, not encoding/json's state and copies (twelve an entry: 290 for these).
func TestSameOffsetsAllocations(t *testing.T) {
	a, b := sinkOffsetsOf(12, 0), sinkOffsetsOf(12, 0)
	allocs := alloctest.Least(20, func() { _ = sameOffsets(a, b) })
	require.LessOrEqual(t, allocs, float64(4*2*12), "allocations of comparing two reads of 12 entries")
}
