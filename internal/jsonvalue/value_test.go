package jsonvalue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// SortedText sorts an object's members by key, not those of the objects inside it, and writes
// numbers as their text: two orders of one map give one text.
func TestSortedText(t *testing.T) {
	tests := []struct {
		name string
		m    Map
		want string
	}{
		{"nil", nil, `null`},
		{"empty", Map{}, `{}`},
		{"sorted", Map{{Key: "kafka_topic", Value: "t"}, {Key: "kafka_partition", Value: Number("0")}}, `{"kafka_partition":0,"kafka_topic":"t"}`},
		{"nested kept", Map{{Key: "z", Value: Map{{Key: "b", Value: true}, {Key: "a", Value: nil}}}, {Key: "a", Value: []any{Number("1e3")}}},
			`{"a":[1e3],"z":{"b":true,"a":null}}`},
		{"unwritable", Map{{Key: "n", Value: Number("x")}}, `[{n x}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, SortedText(tt.m))
		})
	}
}
