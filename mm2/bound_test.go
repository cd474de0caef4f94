package mm2

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplayBoundAgainstSimulatedMirror mirrors random source partitions the way MM2 does
// (upstream offsets with gaps for transaction markers and compaction, consecutive downstream
// offsets, offset syncs by OffsetSyncWriter's rules plus flush-time ones), translates random
// committed offsets with a random sync at or below them as OffsetSyncStore may, and checks the
// bound: never below the real replay, exact when a sync sits at g, and no false skip.
func TestReplayBoundAgainstSimulatedMirror(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		lagMax := int64(1 + rng.IntN(20))
		n := 1 + rng.IntN(300)
		upstream := make([]int64, n) // upstream[i] lands at downstream offset i
		u := int64(rng.IntN(50))
		for i := range upstream {
			upstream[i] = u
			u++
			if rng.IntN(10) == 0 {
				u += int64(1 + rng.IntN(3)) // a gap: markers, compaction, filtering
			}
		}
		tp := TopicPartition{"t", 0}
		s := &syncStore{syncs: map[TopicPartition][]OffsetSync{}}
		var syncs []OffsetSync
		lastD := int64(-1)
		for i, up := range upstream {
			d := int64(i)
			first := i == 0
			skipped := i > 0 && up-upstream[i-1] != 1
			if first || d-(lastD+1) >= lagMax || skipped || rng.IntN(15) == 0 {
				sy := OffsetSync{"t", 0, up, d}
				syncs = append(syncs, sy)
				s.apply(record{Key: mustKey(t, sy), Value: mustValue(t, sy)})
				lastD = d
			}
		}
		// pos(g): where the first record at or after g landed (n when none has yet).
		pos := func(g int64) int64 {
			for i, up := range upstream {
				if up >= g {
					return int64(i)
				}
			}
			return int64(n)
		}
		for range 20 {
			g := upstream[0] + int64(rng.IntN(int(upstream[n-1]-upstream[0]+2)))
			var below []OffsetSync
			for _, sy := range syncs {
				if sy.UpstreamOffset <= g {
					below = append(below, sy)
				}
			}
			if len(below) == 0 {
				continue
			}
			sy := below[rng.IntN(len(below))]
			d := sy.Offset + 1
			if sy.UpstreamOffset == g {
				d = sy.Offset
			}
			real := pos(g) - d
			require.GreaterOrEqual(t, real, int64(0), "iteration %d: the simulated MM2 overshot", iter)
			b := s.replayBound(tp, g, d)
			require.True(t, b.known)
			require.False(t, b.skips, "iteration %d: g %d d %d: false skip on %+v", iter, g, d, b.sync)
			require.GreaterOrEqual(t, b.replay, real, "iteration %d: g %d d %d pos %d", iter, g, d, pos(g))
			for _, x := range syncs {
				if x.UpstreamOffset == g {
					require.Equal(t, real, b.replay, "iteration %d: a sync at g makes the bound exact", iter)
				}
			}
			// Starting one past the record at g, with a sync there, skips it.
			for _, x := range syncs {
				if x.UpstreamOffset >= g {
					require.True(t, s.replayBound(tp, g, x.Offset+1).skips, "iteration %d", iter)
					break
				}
			}
		}
	}
}
