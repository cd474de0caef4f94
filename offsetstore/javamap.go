package offsetstore

import (
	"cmp"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// The constants of java.util.HashMap (OpenJDK 8 through 25 share them).
const (
	javaDefaultCapacity  = 16
	javaMaximumCapacity  = 1 << 30
	javaTreeifyThreshold = 8
	javaMinTreeifyCap    = 64
	// smallMapKeys bounds the maps ordered with stack buffers only; larger maps allocate.
	smallMapKeys = 16
)

// JavaHashMapOrder returns m's members in the iteration order of a java.util.HashMap built with
// new HashMap<>() and put() in m's order, which is what Connect's JsonConverter produces when it
// reads a JSON object back (docs/connect-internals.md, "Offsets topic records"). Connect
// writes offsets-topic keys in that order and tasks look their offsets up by exact key bytes,
// so the order decides whether a task ever finds an offset we write.
//
// A repeated key keeps its first position and takes its last value, as put() does. Nested
// objects (in values and arrays) are reordered the same way, because the converter turns every
// JSON object into a new HashMap<>(). m is not modified; the result may share nested arrays
// and objects with m, and is m itself when m is already in that order (as any map of at most
// one key is), which spares the hot path an allocation: callers must not modify the result.
// A nil m gives nil. Keys crafted to collide (nine or more in one bucket of a table of
// 64 or more) turn a bucket into a tree bin with its own order; that is reproduced too.
func JavaHashMapOrder(m jsonvalue.Map) jsonvalue.Map {
	return javaHashMapOrder(nil, m, -1)
}

// JavaHashMapOrderInto is JavaHashMapOrder that builds a reordered map of up to 16 keys in
// dst's array when it is large enough, sparing an allocation per map in encoding loops. The
// result may share dst's array (or be m itself) and is valid until dst is used again.
func JavaHashMapOrderInto(dst, m jsonvalue.Map) jsonvalue.Map {
	return javaHashMapOrder(dst, m, -1)
}

// JavaHashMapOrderCap is JavaHashMapOrder for a map built with new HashMap<>(initialCapacity)
// (JDBC's TimestampIncrementingOffset uses new HashMap<>(3), i.e. a table of 4): the table
// starts at the smallest power of two >= initialCapacity (HashMap.tableSizeFor) and grows as
// put() fills it. A negative initialCapacity, which Java rejects, is treated as 0. Nested
// objects are reordered with the default constructor, as the JsonConverter builds them.
func JavaHashMapOrderCap(m jsonvalue.Map, initialCapacity int) jsonvalue.Map {
	return javaHashMapOrder(nil, m, max(initialCapacity, 0))
}

func javaHashMapOrder(dst, m jsonvalue.Map, initialCapacity int) jsonvalue.Map {
	if m == nil {
		return nil
	}
	var buf [smallMapKeys]jsonvalue.Field
	ents, dup := uniqueMembers(m, buf[:0])
	var hbuf [smallMapKeys]uint32
	hashes := hbuf[:0]
	for i := range ents {
		hashes = append(hashes, javaSpreadHash(ents[i].Key))
	}
	capacity, tree := simulateJavaPuts(hashes, initialCapacity)
	mask := uint32(capacity - 1)
	if !dup && !tree && inBucketOrder(hashes, mask) && nestedInOrder(m) {
		return m
	}

	var out jsonvalue.Map
	if len(ents) <= smallMapKeys && cap(dst) >= len(ents) {
		out = dst[:len(ents)]
	} else {
		out = make(jsonvalue.Map, len(ents))
	}
	if tree {
		keys := make([]string, len(ents))
		for i, f := range ents {
			keys[i] = f.Key
		}
		for i, j := range javaHashMapTreeOrder(keys, initialCapacity) {
			out[i] = jsonvalue.Field{Key: ents[j].Key, Value: javaNormalizeNested(ents[j].Value)}
		}
		return out
	}
	for i, f := range ents {
		out[i] = jsonvalue.Field{Key: f.Key, Value: javaNormalizeNested(f.Value)}
	}
	// Iteration walks the buckets in index order and each bucket's list in insertion order:
	// appends go to the tail and a resize splits a list without reordering it. So a stable
	// sort by final bucket reproduces the order.
	if len(out) <= smallMapKeys {
		for i := 1; i < len(out); i++ {
			for j := i; j > 0 && hashes[j]&mask < hashes[j-1]&mask; j-- {
				out[j], out[j-1] = out[j-1], out[j]
				hashes[j], hashes[j-1] = hashes[j-1], hashes[j]
			}
		}
		return out
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ba, bb := hashes[a]&mask, hashes[b]&mask
		switch {
		case ba < bb:
			return -1
		case ba > bb:
			return 1
		}
		return 0
	})
	sorted := make(jsonvalue.Map, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// uniqueMembers appends m's members to dst with put() semantics: a repeated key keeps its
// first position and takes its last value. It reports whether m had repeated keys.
func uniqueMembers(m jsonvalue.Map, dst []jsonvalue.Field) ([]jsonvalue.Field, bool) {
	dup := false
	if len(m) <= smallMapKeys {
		for _, f := range m {
			found := false
			for i := range dst {
				if dst[i].Key == f.Key {
					dst[i].Value = f.Value
					found, dup = true, true
					break
				}
			}
			if !found {
				dst = append(dst, f)
			}
		}
		return dst, dup
	}
	pos := make(map[string]int, len(m))
	for _, f := range m {
		if i, ok := pos[f.Key]; ok {
			dst[i].Value = f.Value
			dup = true
			continue
		}
		pos[f.Key] = len(dst)
		dst = append(dst, f)
	}
	return dst, dup
}

// inBucketOrder reports whether hashes are already sorted by their bucket under mask.
func inBucketOrder(hashes []uint32, mask uint32) bool {
	for i := 1; i < len(hashes); i++ {
		if hashes[i]&mask < hashes[i-1]&mask {
			return false
		}
	}
	return true
}

// nestedInOrder reports whether every object nested in m's values is already in Java HashMap
// order, so that m needs no copy.
func nestedInOrder(m jsonvalue.Map) bool {
	for _, f := range m {
		switch f.Value.(type) {
		case jsonvalue.Map, []any:
			if !sameValue(javaNormalizeNested(f.Value), f.Value) {
				return false
			}
		}
	}
	return true
}

// sameValue reports whether a, the normalised form of b, is b itself: the same scalar, or a
// Map or array sharing b's backing array.
func sameValue(a, b any) bool {
	switch at := a.(type) {
	case jsonvalue.Map:
		bt, ok := b.(jsonvalue.Map)
		return ok && len(at) == len(bt) && (len(at) == 0 || &at[0] == &bt[0])
	case []any:
		bt, ok := b.([]any)
		return ok && len(at) == len(bt) && (len(at) == 0 || &at[0] == &bt[0])
	default:
		return true // javaNormalizeNested returns scalars as they are
	}
}

// javaNormalizeNested reorders the objects inside a value as the JsonConverter rebuilds them.
// A value that needs no reordering is returned as it is.
func javaNormalizeNested(v any) any {
	switch t := v.(type) {
	case jsonvalue.Map:
		return JavaHashMapOrder(t)
	case []any:
		var out []any
		for i, e := range t {
			n := javaNormalizeNested(e)
			if out == nil && !sameValue(n, e) {
				out = make([]any, len(t))
				copy(out, t[:i])
			}
			if out != nil {
				out[i] = n
			}
		}
		if out == nil {
			return t
		}
		return out
	default:
		return v
	}
}

// javaTable is the part of a java.util.HashMap's state that decides its capacity.
type javaTable struct {
	capacity  int // table length; 0 before the first put
	threshold int // resize when size exceeds it; before the first put, the initial capacity
}

// newJavaTable mirrors the constructors: initialCapacity < 0 means new HashMap<>().
func newJavaTable(initialCapacity int) javaTable {
	if initialCapacity < 0 {
		return javaTable{}
	}
	return javaTable{threshold: javaTableSizeFor(initialCapacity)}
}

// javaTableSizeFor is HashMap.tableSizeFor: the smallest power of two >= c, at least 1.
func javaTableSizeFor(c int) int {
	n := 1
	for n < c && n < javaMaximumCapacity {
		n <<= 1
	}
	return n
}

// resize follows HashMap.resize: below 16 the threshold is recomputed as 0.75*capacity (in
// float, truncated), from 16 on it doubles with the table.
func (t *javaTable) resize() {
	oldCap, oldThr := t.capacity, t.threshold
	newCap, newThr := 0, 0
	switch {
	case oldCap > 0:
		if oldCap >= javaMaximumCapacity {
			t.threshold = math.MaxInt32
			return
		}
		newCap = oldCap << 1
		if newCap < javaMaximumCapacity && oldCap >= javaDefaultCapacity {
			newThr = oldThr << 1
		}
	case oldThr > 0:
		newCap = oldThr
	default:
		newCap, newThr = javaDefaultCapacity, javaDefaultCapacity*3/4
	}
	if newThr == 0 {
		ft := float32(newCap) * 0.75
		if newCap < javaMaximumCapacity && ft < float32(javaMaximumCapacity) {
			newThr = int(ft)
		} else {
			newThr = math.MaxInt32
		}
	}
	t.capacity, t.threshold = newCap, newThr
}

// simulateJavaPuts replays put() of distinct keys with the given spread hashes and returns the
// final table length and whether a bucket became a tree bin. Besides the size threshold,
// HashMap also resizes when a bucket reaches nine entries while the table is shorter than 64
// (treeifyBin), so a map with many colliding keys ends up with a longer table than its size
// alone implies.
func simulateJavaPuts(hashes []uint32, initialCapacity int) (int, bool) {
	t := newJavaTable(initialCapacity)
	if len(hashes) == 0 {
		t.resize()
		return t.capacity, false
	}
	if len(hashes) <= javaTreeifyThreshold {
		// No bucket can reach nine entries: only the size threshold matters.
		t.resize()
		for size := 1; size <= len(hashes); size++ {
			if size > t.threshold {
				t.resize()
			}
		}
		return t.capacity, false
	}
	// A bucket holds exactly the keys put so far whose hash falls in it at the current table
	// length, so its size can be counted afresh after any resize. Small maps count by scanning
	// (no allocation); large ones keep a map of counts, rebuilt on resize.
	var counts map[uint32]int
	if len(hashes) > 64 {
		counts = map[uint32]int{}
	}
	binCount := func(n int, b uint32) int {
		if counts != nil {
			return counts[b]
		}
		c := 0
		for _, h := range hashes[:n] {
			if h&uint32(t.capacity-1) == b {
				c++
			}
		}
		return c
	}
	resize := func(n int) {
		t.resize()
		if counts != nil {
			clear(counts)
			for _, h := range hashes[:n] {
				counts[h&uint32(t.capacity-1)]++
			}
		}
	}
	tree := false
	t.resize()
	for i, h := range hashes {
		b := h & uint32(t.capacity-1)
		before := binCount(i, b)
		if counts != nil {
			counts[b]++
		}
		if before >= javaTreeifyThreshold {
			if t.capacity < javaMinTreeifyCap {
				resize(i + 1)
			} else {
				tree = true
			}
		}
		if i+1 > t.threshold {
			resize(i + 1)
		}
	}
	return t.capacity, tree
}

// javaSpreadHash is HashMap.hash(key): String.hashCode with its high half folded into the low.
func javaSpreadHash(s string) uint32 {
	h := uint32(javaStringHash(s))
	return h ^ h>>16
}

// javaStringHash is Java's String.hashCode, which runs over UTF-16 code units: a character
// outside the BMP counts as its surrogate pair. Invalid UTF-8 counts as U+FFFD, as Java's
// UTF-8 decoder reads it.
func javaStringHash(s string) int32 {
	var h uint32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + uint32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + uint32(0xD800+(r>>10))
			h = 31*h + uint32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + uint32(r)
	}
	return int32(h)
}

// JavaTopicPartitionOrder orders a group's offsets as Connect lists a sink connector's
// (GET /connectors/{name}/offsets): the admin client gathers them in a HashMap keyed by
// TopicPartition, whose hashCode is 31*(31+partition) + topic.hashCode(), and Connect walks
// that map. Iteration is by final bucket; within a bucket it is insertion order, which
// follows the broker's answer and is not known here: such ties keep the topic-and-partition
// order o comes in (a tree bin, eight or more in one bucket, is likewise not reproduced).
func JavaTopicPartitionOrder(o []GroupOffset) {
	if len(o) < 2 {
		return
	}
	hashes := make([]uint32, len(o))
	for i, g := range o {
		h := uint32(31*(31+g.Partition) + javaStringHash(g.Topic))
		hashes[i] = h ^ h>>16
	}
	capacity, _ := simulateJavaPuts(hashes, -1)
	mask := uint32(capacity - 1)
	idx := make([]int, len(o))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(hashes[a]&mask, hashes[b]&mask) })
	out := make([]GroupOffset, len(o))
	for i, j := range idx {
		out[i] = o[j]
	}
	copy(o, out)
}
