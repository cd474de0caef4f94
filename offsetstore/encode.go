package offsetstore

import (
	"github.com/offsetagent/offsetagent/internal/chunks"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// OffsetEntries are the KIP-875 {"partition", "offset"} entries of a request, as
// EncodeOffsets reads them.
type OffsetEntries interface {
	Len() int
	// HasOffset reports whether entry i has a non-null offset.
	HasOffset(i int) bool
	// Take returns entry i and lets the caller's copy go, so that the decoded maps of a
	// large request can be collected while the rest is encoded.
	Take(i int) (partition, offset jsonvalue.Map)
}

// EncodeOffsets encodes the non-null offsets of entries into records for connector name, with
// partition maps in order's key order (Java HashMap order when order is nil) and offset maps in
// Java HashMap order. It consumes entries: each is cleared once encoded, so that the decoded
// maps of a large request can be collected while the rest is encoded.
//
// Keys and values are encoded back to back into shared arenas instead of two allocations per
// offset: a 100,000-offset request makes a few large allocations, not 200,000 small ones. A
// full arena is left to the records that point into it and a new one started. Large requests
// are encoded in parallel ranges, each with its own arenas, into one slice of records.
func EncodeOffsets(name string, entries OffsetEntries, order func(jsonvalue.Map) jsonvalue.Map) []Record {
	const arenaSize = 256 << 10
	ranges := chunks.Split(entries.Len(), encodeParallelMin)
	// Where each range's records start: null offsets make no record.
	starts := make([]int, len(ranges)+1)
	for i, r := range ranges {
		n := 0
		for k := r.Lo; k < r.Hi; k++ {
			if entries.HasOffset(k) {
				n++
			}
		}
		starts[i+1] = starts[i] + n
	}
	records := make([]Record, starts[len(ranges)])
	chunks.Run(ranges, func(i int, r chunks.Range) {
		recs := records[starts[i]:starts[i]:starts[i+1]]
		var arena []byte
		var pbuf, obuf [smallMap]jsonvalue.Field
		for k := r.Lo; k < r.Hi; k++ {
			partition, offset := entries.Take(k)
			if offset == nil {
				continue // a null offset resets the partition: the wipe already removed it
			}
			if free := cap(arena) - len(arena); free < 4<<10 && free < (r.Hi-k)*recordGuess {
				// Small requests get a small arena, about what their records take: a larger one
				// for ten offsets would be most of what a load of many small requests
				// allocates. A record longer than guessed grows it (append copies what it
				// holds; the records before keep theirs).
				arena = make([]byte, 0, min(arenaSize, (r.Hi-k+1)*recordGuess))
			}
			if order != nil {
				partition = order(partition)
			} else {
				partition = JavaHashMapOrderInto(pbuf[:0], partition)
			}
			start := len(arena)
			arena = AppendKey(arena, name, partition)
			mid := len(arena)
			arena = AppendMapJSON(arena, JavaHashMapOrderInto(obuf[:0], offset))
			end := len(arena)
			recs = append(recs, Record{Key: arena[start:mid:mid], Value: arena[mid:end:end], Partition: -1})
		}
	})
	return records
}

// recordGuess is a typical offsets record's key and value size in bytes, for sizing arenas.
const recordGuess = 160

// smallMap is the size of the scratch maps that spare EncodeOffsets an allocation per map.
const smallMap = 8

// encodeParallelMin is the least number of offsets worth an encoding goroutine of their own.
const encodeParallelMin = 8192
