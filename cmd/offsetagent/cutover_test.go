package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A run's exit status is the worse of its parts: a failure (1) or bad flags (2) over a
// replay (4), a replay over success (0).
func TestWorseExit(t *testing.T) {
	tests := []struct {
		name       string
		a, b, want int
	}{
		{name: "both fine", a: 0, b: 0, want: 0},
		{name: "a replay over success", a: 0, b: exitReplay, want: exitReplay},
		{name: "a failed connector over a replay", a: 1, b: exitReplay, want: 1},
		{name: "a mismatch over success", a: 0, b: 1, want: 1},
		{name: "a replay, then a mismatch", a: exitReplay, b: 1, want: 1},
		{name: "bad flags over all", a: 2, b: exitReplay, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, worseExit(tt.a, tt.b))
		})
	}
}
