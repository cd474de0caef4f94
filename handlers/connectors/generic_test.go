package connectors

import (
	"hash/maphash"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

func i64(v int64) *int64 { return &v }

func TestValidateSink(t *testing.T) {
	tests := []struct {
		name    string
		offsets string
		want    []SinkOffset
		msg     string
	}{
		{
			name:    "numbers and strings",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":5}},{"partition":{"kafka_partition":"1","kafka_topic":"t"},"offset":{"kafka_offset":"-7"}}]`,
			want:    []SinkOffset{{Topic: "t", Partition: 0, Offset: i64(5)}, {Topic: "t", Partition: 1, Offset: i64(-7)}},
		},
		{
			name:    "null offset resets",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":2},"offset":null},{"partition":{"kafka_topic":"t","kafka_partition":3}}]`,
			want:    []SinkOffset{{Topic: "t", Partition: 2}, {Topic: "t", Partition: 3}},
		},
		{
			name:    "non-string topic is String.valueOf",
			offsets: `[{"partition":{"kafka_topic":12,"kafka_partition":"+4"},"offset":{"kafka_offset":1}}]`,
			want:    []SinkOffset{{Topic: "12", Partition: 4, Offset: i64(1)}},
		},
		{
			name:    "same topic-partition: last wins at first position",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":1}},{"partition":{"kafka_topic":"u","kafka_partition":0},"offset":null},{"partition":{"kafka_topic":"t","kafka_partition":"0"},"offset":{"kafka_offset":9}}]`,
			want:    []SinkOffset{{Topic: "t", Partition: 0, Offset: i64(9)}, {Topic: "u", Partition: 0}},
		},
		{
			name:    "null partition",
			offsets: `[{"partition":null,"offset":{"kafka_offset":1}}]`,
			msg:     "The partition for a sink connector offset cannot be null or missing",
		},
		{
			name:    "missing partition",
			offsets: `[{"offset":{"kafka_offset":1}}]`,
			msg:     "The partition for a sink connector offset cannot be null or missing",
		},
		{
			name:    "missing kafka_partition",
			offsets: `[{"partition":{"kafka_topic":"t"},"offset":null}]`,
			msg:     "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
		},
		{
			name:    "empty partition",
			offsets: `[{"partition":{},"offset":null}]`,
			msg:     "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
		},
		{
			name:    "null topic",
			offsets: `[{"partition":{"kafka_topic":null,"kafka_partition":null},"offset":null}]`,
			msg:     "Kafka topic names must be valid strings and may not be null",
		},
		{
			name:    "null partition number",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":null},"offset":null}]`,
			msg:     "Kafka partitions must be valid numbers and may not be null",
		},
		{
			name:    "partition not a number",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":"not a number"},"offset":null}]`,
			msg:     "Failed to parse the following Kafka partition value in the provided offsets: 'not a number'. Partition values for sink connectors need to be integers.",
		},
		{
			name:    "partition is a double",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1e0},"offset":null}]`,
			msg:     "Failed to parse the following Kafka partition value in the provided offsets: '1.0'. Partition values for sink connectors need to be integers.",
		},
		{
			name:    "partition beyond int",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":2147483648},"offset":null}]`,
			msg:     "Failed to parse the following Kafka partition value in the provided offsets: '2147483648'. Partition values for sink connectors need to be integers.",
		},
		{
			name:    "offset without kafka_offset",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{}}]`,
			msg:     "The offset for a sink connector should either be null or contain the key 'kafka_offset'",
		},
		{
			name:    "offset not a number",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":"not a number"}}]`,
			msg:     "Failed to parse the following Kafka offset value in the provided offsets: 'not a number'. Offset values for sink connectors need to be integers.",
		},
		{
			name:    "offset null value",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":null}}]`,
			msg:     "Failed to parse the following Kafka offset value in the provided offsets: 'null'. Offset values for sink connectors need to be integers.",
		},
		{
			name:    "offset beyond long",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":9223372036854775808}}]`,
			msg:     "Failed to parse the following Kafka offset value in the provided offsets: '9223372036854775808'. Offset values for sink connectors need to be integers.",
		},
		{
			name:    "first failure in order",
			offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":1.5}},{"partition":null}]`,
			msg:     "Failed to parse the following Kafka offset value in the provided offsets: '1.5'. Offset values for sink connectors need to be integers.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateSink(entries(t, tc.offsets))
			requireErr(t, err, 400, tc.msg)
			if tc.msg == "" {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestCheckSinkOffsets(t *testing.T) {
	require.NoError(t, CheckSinkOffsets("s", []SinkOffset{{Topic: "t", Offset: i64(0)}, {Topic: "t", Partition: 1}}))
	err := CheckSinkOffsets("s", []SinkOffset{{Topic: "t", Offset: i64(-1)}})
	requireErr(t, err, 500, "Failed to modify offsets for sink connector s")
}

func TestValidateSource(t *testing.T) {
	tests := []struct {
		name    string
		offsets string
		msg     string
	}{
		{name: "primitives and nulls", offsets: `[{"partition":{"a":"x","b":1,"c":1.5,"d":true,"e":null},"offset":{"pos":9223372036854775807}}]`},
		{name: "null partition and offset", offsets: `[{"partition":null,"offset":null}]`},
		{
			name:    "nested object in partition",
			offsets: `[{"partition":{"a":"x","b":{"c":1}},"offset":{"pos":1}}]`,
			msg:     "Offsets may only contain primitive types as values, but field b contains MAP",
		},
		{
			name:    "array in offset",
			offsets: `[{"partition":{"a":"x"},"offset":{"pos":[1]}}]`,
			msg:     "Offsets may only contain primitive types as values, but field pos contains ARRAY",
		},
		{
			name:    "integer beyond long",
			offsets: `[{"partition":{"a":"x"},"offset":{"pos":-9223372036854775809}}]`,
			msg:     "Offsets may only contain primitive types as values, but field pos contains class java.math.BigInteger",
		},
		{
			name:    "partition checked before offset",
			offsets: `[{"partition":{"a":[]},"offset":{"b":{}}}]`,
			msg:     "Offsets may only contain primitive types as values, but field a contains ARRAY",
		},
		{
			name:    "double overflow",
			offsets: `[{"partition":{"a":"x"},"offset":{"pos":1e400}}]`,
			msg:     "Offsets may only contain finite numbers, but field pos contains 1e400, which is too large for a double",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireErr(t, ValidateSource(entries(t, tc.offsets)), 400, tc.msg)
		})
	}
}

func TestDedupe(t *testing.T) {
	tests := []struct {
		name    string
		offsets string
		want    string
	}{
		{
			name:    "key order does not matter; first partition and position, last offset",
			offsets: `[{"partition":{"a":"x","b":1},"offset":{"o":1}},{"partition":{"c":"y"},"offset":{"o":2}},{"partition":{"b":1,"a":"x"},"offset":null}]`,
			want:    `[{"partition":{"a":"x","b":1},"offset":null},{"partition":{"c":"y"},"offset":{"o":2}}]`,
		},
		{
			name:    "1, 1.0 and \"1\" differ",
			offsets: `[{"partition":{"a":1},"offset":{"o":1}},{"partition":{"a":1.0},"offset":{"o":2}},{"partition":{"a":"1"},"offset":{"o":3}}]`,
			want:    `[{"partition":{"a":1},"offset":{"o":1}},{"partition":{"a":1.0},"offset":{"o":2}},{"partition":{"a":"1"},"offset":{"o":3}}]`,
		},
		{
			name:    "keys and strings do not run into each other; true is not \"t\"",
			offsets: `[{"partition":{"a":"bc"},"offset":{"o":1}},{"partition":{"ab":"c"},"offset":{"o":2}},{"partition":{"a":true},"offset":{"o":3}},{"partition":{"a":"t"},"offset":{"o":4}}]`,
			want:    `[{"partition":{"a":"bc"},"offset":{"o":1}},{"partition":{"ab":"c"},"offset":{"o":2}},{"partition":{"a":true},"offset":{"o":3}},{"partition":{"a":"t"},"offset":{"o":4}}]`,
		},
		{
			name:    "1e2 and 100.0 are the same double",
			offsets: `[{"partition":{"a":1e2},"offset":{"o":1}},{"partition":{"a":100.0},"offset":{"o":2}}]`,
			want:    `[{"partition":{"a":1e2},"offset":{"o":2}}]`,
		},
		{
			name:    "duplicates of several partitions, after distinct ones",
			offsets: `[{"partition":{"a":1},"offset":{"o":1}},{"partition":{"a":2},"offset":{"o":2}},{"partition":{"a":2},"offset":{"o":3}},{"partition":{"a":1},"offset":{"o":4}},{"partition":{"a":3},"offset":{"o":5}}]`,
			want:    `[{"partition":{"a":1},"offset":{"o":4}},{"partition":{"a":2},"offset":{"o":3}},{"partition":{"a":3},"offset":{"o":5}}]`,
		},
		{
			name:    "no duplicates",
			offsets: `[{"partition":{"a":1},"offset":{"o":1}},{"partition":{"a":2},"offset":{"o":2}}]`,
			want:    `[{"partition":{"a":1},"offset":{"o":1}},{"partition":{"a":2},"offset":{"o":2}}]`,
		},
		{
			name:    "null partitions collapse",
			offsets: `[{"partition":null,"offset":{"o":1}},{"offset":{"o":2}}]`,
			want:    `[{"partition":null,"offset":{"o":2}}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := entries(t, tc.offsets)
			require.Equal(t, entries(t, tc.want), Dedupe(in))
			require.Equal(t, entries(t, tc.offsets), in, "Dedupe changed its input")
		})
	}
	// Every partition's hash equal: the texts alone must tell partitions apart.
	collide := func(maphash.Seed, []byte) uint64 { return 7 }
	for _, tc := range tests {
		t.Run("colliding hashes/"+tc.name, func(t *testing.T) {
			require.Equal(t, entries(t, tc.want), dedupe(entries(t, tc.offsets), collide))
		})
	}
}

// Large requests are checked in parallel ranges: the failure reported is still the first in
// order, even when a later range fails too (and finishes first).
func TestValidateSourceParallelFirstFailure(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	offsets := make([]events.OffsetEntry, 4*parallelMin)
	for i := range offsets {
		offsets[i] = events.OffsetEntry{
			Partition: jsonvalue.Map{{Key: "p", Value: jsonvalue.Number(strconv.Itoa(i))}},
			Offset:    jsonvalue.Map{{Key: "o", Value: jsonvalue.Number("1")}},
		}
	}
	requireErr(t, ValidateSource(offsets), 0, "")
	offsets[3*parallelMin+5].Partition = jsonvalue.Map{{Key: "late", Value: jsonvalue.Map{}}}
	offsets[parallelMin+7].Offset = jsonvalue.Map{{Key: "early", Value: []any{}}}
	requireErr(t, ValidateSource(offsets), 400, "Offsets may only contain primitive types as values, but field early contains ARRAY")
}
