package handlers

import (
	"math/bits"
	"slices"
)

// repeatedHash reports whether the hashes of parts hold some value twice. The single pass
// asks it of its keys' 64-bit seeded hashes (a repeated partition takes the general path). Sorting 100,000
// hashes took ~8 ms of a bulk request's CPU, after the parallel ranges; this is a radix pass
// instead: the hashes are counted and scattered into buckets by their top bits (about 8 per
// bucket: the counts, 64 KiB for 100,000 hashes, stay in the cache, which one bucket per hash
// did not, in a fresh agent), then each bucket is compared within itself. Equal hashes share
// a bucket, so every repeat is found. The hashes are seeded: no input can crowd a bucket
// except by chance, and a crowded one is sorted. The hashes are those of parts, all together
// (the single pass's ranges each keep theirs: they are not copied together first); parts are
// left as they were.
func repeatedHash(parts ...[]uint64) bool {
	n := 0
	for _, hs := range parts {
		n += len(hs)
	}
	if n < 64 {
		s := slices.Concat(parts...)
		slices.Sort(s)
		return sortedRepeat(s)
	}
	width := bits.Len(uint(n)) - 3 // 2^width buckets: n/16 to n/8
	shift := 64 - width
	// ends[b+1] counts bucket b's hashes, then (summed) is where bucket b ends.
	ends := make([]uint32, 1<<width+1)
	for _, hs := range parts {
		for _, h := range hs {
			ends[h>>shift+1]++
		}
	}
	for b := 1; b < len(ends); b++ {
		ends[b] += ends[b-1]
	}
	// Scattered with ends[b] as bucket b's next free place: afterwards ends[b] is where bucket b
	// ends (and bucket b starts where bucket b-1 ends, ends[b-1] after the scatter).
	out := make([]uint64, n)
	for _, hs := range parts {
		for _, h := range hs {
			b := h >> shift
			out[ends[b]] = h
			ends[b]++
		}
	}
	start := uint32(0)
	for _, end := range ends[:1<<width] {
		bucket := out[start:end]
		start = end
		switch {
		case len(bucket) < 2:
		case len(bucket) <= 8:
			for i, h := range bucket[:len(bucket)-1] {
				if slices.Contains(bucket[i+1:], h) {
					return true
				}
			}
		default:
			slices.Sort(bucket)
			if sortedRepeat(bucket) {
				return true
			}
		}
	}
	return false
}

// sortedRepeat reports whether the sorted s holds some value twice.
func sortedRepeat(s []uint64) bool {
	for k := 1; k < len(s); k++ {
		if s[k] == s[k-1] {
			return true
		}
	}
	return false
}
