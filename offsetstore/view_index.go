package offsetstore

import "math/bits"

// keyIndex maps the 64-bit hash of a key's bytes to its slot in the view (keys of equal hash
// are told apart by their bytes, which the caller compares). It is one flat open-addressing
// table with linear probing, each entry 8 bytes: the hash's high 32 bits and the slot + 1 (0
// is empty). A load applies records in no order of keys, so every lookup is a cache miss;
// this table costs one per lookup, where a Go map per connector cost several (the map, its
// directory, its group; the profile of a million-key load spent most of its time there).
//
// An entry's home is its hash's high bits, so that growing the table (reinserting in table
// order) writes the new table mostly in order too.
type keyIndex struct {
	entries []uint64
	count   int
	shift   uint // 32 - log2(len(entries))
}

const minIndexBits = 10

func (x *keyIndex) home(fp uint32) int { return int(fp >> x.shift) }

func (x *keyIndex) mask() int { return len(x.entries) - 1 }

// probe walks the entries of hash h from its home: it calls match for each entry of the same
// high bits (with the entry's slot) until match returns true, and returns the position of the
// matching entry, or of the empty entry that ends the run with found false.
func (x *keyIndex) probe(h uint64, match func(slot int32) bool) (pos int, found bool) {
	if len(x.entries) == 0 {
		x.resize(minIndexBits)
	}
	fp := uint32(h >> 32)
	mask := x.mask()
	for i := x.home(fp); ; i = (i + 1) & mask {
		e := x.entries[i]
		if e == 0 {
			return i, false
		}
		if uint32(e>>32) == fp && match(int32(uint32(e))-1) {
			return i, true
		}
	}
}

// peek returns the home entry of h: reading ahead brings it to the cache.
func (x *keyIndex) peek(h uint64) uint64 {
	if len(x.entries) == 0 {
		return 0
	}
	return x.entries[x.home(uint32(h>>32))]
}

// insertAt puts slot at pos, the empty position probe returned for h, growing the table when
// it gets three quarters full.
func (x *keyIndex) insertAt(pos int, h uint64, slot int32) {
	x.entries[pos] = h>>32<<32 | uint64(uint32(slot+1))
	x.count++
	if x.count*4 > len(x.entries)*3 {
		x.resize(bits.Len(uint(len(x.entries))))
	}
}

// set makes the entry at pos (found by probe) point to slot.
func (x *keyIndex) set(pos int, slot int32) {
	x.entries[pos] = x.entries[pos]>>32<<32 | uint64(uint32(slot+1))
}

// deleteAt removes the entry at pos, shifting back the entries after it that are not at their
// home, so that no probe run is broken (no tombstones to clean up later).
func (x *keyIndex) deleteAt(pos int) {
	mask := x.mask()
	i := pos
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := x.entries[j]
		if e == 0 {
			break
		}
		// The entry at j may move back to i unless its home lies cyclically in (i, j].
		h := x.home(uint32(e >> 32))
		if (i < j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
			x.entries[i] = e
			i = j
		}
	}
	x.entries[i] = 0
	x.count--
}

// reserve grows the table to hold n entries at most three quarters full.
func (x *keyIndex) reserve(n int) {
	if n*4 > len(x.entries)*3 {
		x.resize(bits.Len(uint(n * 4 / 3)))
	}
}

// resize rebuilds the table with 1<<b entries (at least room for count).
func (x *keyIndex) resize(b int) {
	b = max(b, minIndexBits)
	for 1<<b*3 < x.count*4 {
		b++
	}
	old := x.entries
	x.entries = make([]uint64, 1<<b)
	x.shift = uint(32 - b)
	mask := x.mask()
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := x.home(uint32(e >> 32))
		for x.entries[i] != 0 {
			i = (i + 1) & mask
		}
		x.entries[i] = e
	}
}
