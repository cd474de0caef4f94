package handlers

import (
	"hash/maphash"
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/chunks"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A bulk request's source offsets usually share one shape: every partition has the same keys in
// the same order, values are strings and integers, no partition repeats. For such a request of a
// class whose rules judge each entry on its own (connectors.Class.PerEntry), fastSourceRecords
// validates and encodes in one pass over the entries, in parallel ranges: the generic KIP-875
// checks reduce to the shape check, the class's Validate runs on one entry at a time (it
// allocates nothing for a valid entry), the Java HashMap key order is computed once per key
// sequence instead of once per map, and duplicates are found on the encoded keys. Anything else
// (a null, a float, a boolean, another key sequence, a duplicate, an invalid entry) makes it
// give up, and the general path (sourceRecords) runs and words any error: the fast path never
// answers an error itself, so both give the same answer (TestSourceFastPathMatchesGeneral).

// fastPathMin is the least number of offsets worth the fast path's setup.
const fastPathMin = 64

// fastSourceRecords is sourceRecords for requests of the common shape; ok is false when the
// request is not one (entries are then untouched).
func fastSourceRecords(name string, class *connectors.Class, props map[string]string, entries []events.OffsetEntry) (recs []offsetstore.Record, ok bool) {
	if class == nil || !class.PerEntry || len(entries) == 0 || entries[0].Partition == nil {
		return nil, false
	}
	pkeys := keysOf(entries[0].Partition)
	if len(pkeys) == 0 {
		return nil, false
	}
	ranges := chunks.Split(len(entries), encodeParallelMin)
	recs = make([]offsetstore.Record, len(entries)) // one per entry: no null offsets here
	hashes := make([]uint64, len(entries))
	fails := make([]bool, len(ranges))
	seed := maphash.MakeSeed()
	chunks.Run(ranges, func(i int, r chunks.Range) {
		enc := newFastEncoder(name, class, pkeys)
		one := make([]events.OffsetEntry, 1)
		for k := r.Lo; k < r.Hi; k++ {
			e := entries[k]
			if e.Offset == nil || !flat(e.Partition) || !flat(e.Offset) || !sameKeys(e.Partition, pkeys) {
				fails[i] = true
				return
			}
			if class.Validate != nil {
				one[0] = e
				if class.Validate(props, one) != nil {
					fails[i] = true
					return
				}
			}
			rec, ok := enc.encode(e)
			if !ok {
				fails[i] = true
				return
			}
			hashes[k] = maphash.Bytes(seed, rec.Key)
			recs[k] = rec
		}
	})
	if slices.Contains(fails, true) {
		return nil, false
	}
	// A repeated partition takes the general path (Dedupe's "last one wins"). With one key
	// sequence and canonical values, equal partitions have equal key bytes; two keys with one
	// hash take the general path too, repeated or not.
	seen := make(map[uint64]struct{}, len(recs))
	for _, h := range hashes {
		if _, dup := seen[h]; dup {
			return nil, false
		}
		seen[h] = struct{}{}
	}
	// Encoded: the decoded entries may go, as EncodeOffsets lets them go.
	clear(entries)
	return recs, true
}

// fastEncoder encodes one range's records with the key orders computed once: the partition's
// for the request's one key sequence, the offset's for the last offset key sequence seen.
type fastEncoder struct {
	name  string
	arena []byte
	// pperm[i] is the position in the request's partitions of the i-th key written.
	pperm []int
	okeys []string
	operm []int
	buf   jsonvalue.Map
}

func newFastEncoder(name string, class *connectors.Class, pkeys []string) *fastEncoder {
	enc := &fastEncoder{name: name}
	sample := make(jsonvalue.Map, len(pkeys))
	for i, k := range pkeys {
		sample[i] = jsonvalue.Field{Key: k, Value: ""}
	}
	if class.PartitionOrder != nil {
		enc.pperm = permutation(sample, class.PartitionOrder(sample))
	} else {
		enc.pperm = permutation(sample, offsetstore.JavaHashMapOrder(sample))
	}
	return enc
}

// encode returns e's record, as EncodeOffsets writes it.
func (enc *fastEncoder) encode(e events.OffsetEntry) (offsetstore.Record, bool) {
	if enc.pperm == nil {
		return offsetstore.Record{}, false
	}
	if !sameKeys(e.Offset, enc.okeys) {
		enc.okeys = keysOf(e.Offset)
		enc.operm = nil
		if enc.okeys != nil {
			enc.operm = permutation(e.Offset, offsetstore.JavaHashMapOrder(e.Offset))
		}
	}
	if enc.operm == nil {
		return offsetstore.Record{}, false
	}
	if cap(enc.arena)-len(enc.arena) < 4<<10 {
		enc.arena = make([]byte, 0, 256<<10)
	}
	start := len(enc.arena)
	enc.arena = offsetstore.AppendKey(enc.arena, enc.name, enc.reorder(e.Partition, enc.pperm))
	mid := len(enc.arena)
	enc.arena = offsetstore.AppendMapJSON(enc.arena, enc.reorder(e.Offset, enc.operm))
	end := len(enc.arena)
	return offsetstore.Record{Key: enc.arena[start:mid:mid], Value: enc.arena[mid:end:end], Partition: -1}, true
}

func (enc *fastEncoder) reorder(m jsonvalue.Map, perm []int) jsonvalue.Map {
	enc.buf = enc.buf[:0]
	for _, i := range perm {
		enc.buf = append(enc.buf, m[i])
	}
	return enc.buf
}

// permutation returns, for each member of ordered, its position in m; nil when ordered is not
// a reordering of m's distinct keys.
func permutation(m, ordered jsonvalue.Map) []int {
	if len(ordered) != len(m) {
		return nil
	}
	perm := make([]int, len(ordered))
	for i, f := range ordered {
		j := slices.IndexFunc(m, func(g jsonvalue.Field) bool { return g.Key == f.Key })
		if j < 0 {
			return nil
		}
		perm[i] = j
	}
	return perm
}

// keysOf returns m's keys, or nil when m is empty or repeats a key.
func keysOf(m jsonvalue.Map) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, len(m))
	for i, f := range m {
		if slices.Contains(keys[:i], f.Key) {
			return nil
		}
		keys[i] = f.Key
	}
	return keys
}

// sameKeys reports whether m has exactly keys, in that order.
func sameKeys(m jsonvalue.Map, keys []string) bool {
	if len(m) != len(keys) || keys == nil {
		return false
	}
	for i, f := range m {
		if f.Key != keys[i] {
			return false
		}
	}
	return true
}

// flat reports whether every value of m is a string or an integer written as Java prints a
// long (no sign but '-', no leading zero, at most 18 digits, so it fits): values that pass
// OffsetUtils.validateFormat and are written back as they came.
func flat(m jsonvalue.Map) bool {
	for _, f := range m {
		switch v := f.Value.(type) {
		case string:
		case jsonvalue.Number:
			if !canonicalLong(string(v)) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func canonicalLong(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false // -0 is printed 0
		}
	}
	if len(s) == 0 || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// encodeParallelMin is the least number of offsets worth a goroutine of their own.
const encodeParallelMin = 8192
