package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVMRSSSeesTouchedMemory: the view scenario's memory reading grows by what the process
// touches, and settles back once that is garbage.
func TestVMRSSSeesTouchedMemory(t *testing.T) {
	before, err := settledRSS()
	require.NoError(t, err)
	require.Positive(t, before)
	const size = 64 << 20
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i)
	}
	touched, err := vmRSS()
	require.NoError(t, err)
	require.Greater(t, touched, before+size*3/4, "touched %d MiB, RSS %d -> %d MiB", size>>20, before>>20, touched>>20)
	runtime.KeepAlive(b)
	b = nil
	after, err := settledRSS()
	require.NoError(t, err)
	require.Less(t, after, touched-size/2, "RSS after the buffer is garbage: %d MiB, with it %d MiB", after>>20, touched>>20)
}
