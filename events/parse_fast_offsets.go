package events

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// The fast path's initial_offsets: the array decoded in runs (in parallel when large) or kept
// as its text, skimmed, for the handlers' single pass.

// scanInitialOffsets is decodeInitialOffsets. An array of at least tune.rawOffsetsBytes is
// checked (skimOffsetEntries) but not decoded: its text is returned as raw.
func scanInitialOffsets(sc *jsonvalue.Scanner, data []byte, tune scanTuning) (entries []OffsetEntry, raw []byte, has, ok bool) {
	switch sc.NextByte() {
	case '[':
		entries, raw, ok = scanOffsetArray(sc, data, tune)
		return entries, raw, true, ok
	case '{':
	default:
		_, isNull, ok := scanScalar(sc)
		return nil, nil, false, ok && isNull
	}
	sc.Consume('{')
	if sc.Consume('}') {
		return nil, nil, true, true
	}
	for {
		key, ok := sc.ReadString()
		if !ok || key != "offsets" || !sc.Consume(':') {
			return nil, nil, false, false
		}
		if sc.NextByte() == '[' {
			if entries, raw, ok = scanOffsetArray(sc, data, tune); !ok {
				return nil, nil, false, false
			}
		} else {
			if _, isNull, ok := scanScalar(sc); !ok || !isNull {
				return nil, nil, false, false
			}
			entries, raw = nil, nil
		}
		if sc.Consume('}') {
			return entries, raw, true, true
		}
		if !sc.Consume(',') {
			return nil, nil, false, false
		}
	}
}

// scanOffsetArray reads the array of entries at the scanner: decoded, or, from
// tune.rawOffsetsBytes on, checked and returned as its text.
func scanOffsetArray(sc *jsonvalue.Scanner, data []byte, tune scanTuning) ([]OffsetEntry, []byte, bool) {
	if tune.rawOffsetsBytes > 0 && sc.NextByte() == '[' && sc.Remaining() >= tune.rawOffsetsBytes {
		start := sc.Pos()
		if tune.deferOffsets {
			// Taken to end at the data's last ']', unchecked: whoever reads the text checks
			// it (DecodeRequestDeferred).
			if end := bytes.LastIndexByte(data, ']') + 1; end-start >= tune.rawOffsetsBytes {
				sc.Seek(end)
				return nil, data[start:end:end], true
			}
		}
		if !skimOffsetArray(sc, tune) {
			return nil, nil, false
		}
		if end := sc.Pos(); end-start >= tune.rawOffsetsBytes {
			return nil, data[start:end:end], true
		}
		sc.Seek(start) // short after all: decode it
	}
	entries, ok := scanOffsetEntries(sc, tune)
	return entries, nil, ok
}

// skimOffsetArray steps over an array of entries, accepting exactly what scanOffsetEntries
// accepts, without building the entries. A large array is cut into runs checked in parallel,
// as scanOffsetEntries cuts it; when a run fails (a wrong guess, or a bad entry), the array is
// checked again from its start in one pass, which gives the answer.
func skimOffsetArray(sc *jsonvalue.Scanner, tune scanTuning) bool {
	start := sc.Pos()
	if parts := tune.parallelism; parts > 1 && sc.Remaining() >= tune.parallelBytes {
		if cuts := sc.GuessCuts(parts); len(cuts) > 0 {
			oks := make([]bool, len(cuts))
			var wg sync.WaitGroup
			from := sc.Pos() + 1 // after '['
			for i, cut := range cuts {
				sub := sc.Sub(from, cut)
				wg.Go(func() { oks[i] = skimOffsetEntries(sub, false) })
				from = cut + 1
			}
			sc.Seek(from)
			ok := skimOffsetEntries(sc, true)
			wg.Wait()
			if ok && !slices.Contains(oks, false) {
				return true
			}
			sc.Seek(start)
		}
	}
	return skimOffsetEntries(sc, true)
}

// skimOffsetEntries steps over entries separated by commas: with bracketed, an array from its
// '[' to its ']' (or, after a cut, from an entry to the ']'); without, a run of one or more
// entries that must fill the scanner (scanEntryChunks' runs).
func skimOffsetEntries(sc *jsonvalue.Scanner, bracketed bool) bool {
	if bracketed && sc.NextByte() == '[' {
		sc.Consume('[')
		if sc.Consume(']') {
			return true
		}
	}
	for {
		if !skimOffsetEntry(sc) {
			return false
		}
		if bracketed && sc.Consume(']') {
			return true
		}
		if !bracketed && sc.AtEnd() {
			return true
		}
		if !sc.Consume(',') {
			return false
		}
	}
}

// skimOffsetEntry steps over what scanOffsetEntry reads.
func skimOffsetEntry(sc *jsonvalue.Scanner) bool {
	if !sc.Consume('{') {
		return false
	}
	if sc.Consume('}') {
		return true
	}
	for {
		key, ok := sc.ReadString()
		if !ok || (key != "partition" && key != "offset") || !sc.Consume(':') {
			return false
		}
		if sc.NextByte() == '{' {
			if sc.Skip() != nil {
				return false
			}
		} else if _, isNull, ok := scanScalar(sc); !ok || !isNull {
			return false
		}
		if sc.Consume('}') {
			return true
		}
		if !sc.Consume(',') {
			return false
		}
	}
}

// ParseOffsets decodes the text of an initial_offsets array (CreateRequest.RawOffsets), as
// ParseCreateRequest decodes the array in a request.
func ParseOffsets(raw []byte) ([]OffsetEntry, error) {
	sc := jsonvalue.NewScanner(raw)
	entries, ok := scanOffsetEntries(sc, defaultTuning())
	if !ok || !sc.AtEnd() {
		return nil, errors.New("initial_offsets is not an array of offset entries")
	}
	return entries, nil
}

// Offsets returns the entries of initial_offsets, decoding them when the decoder left them as
// text (RawOffsets).
func (r *CreateRequest) Offsets() ([]OffsetEntry, error) {
	if r.RawOffsets == nil {
		return r.InitialOffsets, nil
	}
	return ParseOffsets(r.RawOffsets)
}

// entryChunk is the number of entries collected per chunk before the exact-size copy.
const entryChunk = 1024

// scanTuning sets the sizes at which parseFast changes strategy.
type scanTuning struct {
	// copyStringsBytes is the request size from which the parsed values do not share the
	// request's memory.
	copyStringsBytes int
	// parallelBytes is the size from which an initial_offsets array is parsed in parallel
	// runs: below it, a single pass costs less than starting goroutines.
	parallelBytes int
	// parallelism is the number of runs a large array is cut into.
	parallelism int
	// rawOffsetsBytes, when not 0, is the size from which an initial_offsets array is checked
	// but left as text (CreateRequest.RawOffsets).
	rawOffsetsBytes int
	// deferOffsets leaves such an array unchecked, taken to end at the data's last ']'
	// (DecodeRequestDeferred).
	deferOffsets bool
	// sdkAttributes reads every record's CloudEvent with sdk-go (sdkAttributes), never
	// binaryAttributes: the decoding binaryAttributes is held to.
	sdkAttributes bool
}

// defaultTuning is the tuning of ParseCreateRequest: at most 8 runs (more runs than CPUs only
// cost memory).
func defaultTuning() scanTuning {
	return scanTuning{copyStringsBytes: 64 << 10, parallelBytes: 256 << 10, parallelism: min(runtime.GOMAXPROCS(0), 8)}
}

// scanOffsetEntries is decodeOffsetEntries. A large array is cut into runs parsed in parallel
// (see Scanner.GuessCuts); if a guessed cut turns out not to be between two entries, the array
// is parsed again from its start in one pass.
func scanOffsetEntries(sc *jsonvalue.Scanner, tune scanTuning) ([]OffsetEntry, bool) {
	if sc.NextByte() != '[' {
		return nil, false
	}
	start := sc.Pos()
	if parts := tune.parallelism; parts > 1 && sc.Remaining() >= tune.parallelBytes {
		if cuts := sc.GuessCuts(parts); len(cuts) > 0 {
			if entries, ok := scanRuns(sc, start, cuts); ok {
				return entries, true
			}
			sc.Seek(start)
		}
	}
	return scanEntryRun(sc, true)
}

// scanRuns parses the array at start in len(cuts)+1 runs at once: every run but the last on a
// Scanner of its own, the last on sc, which ends after the array.
func scanRuns(sc *jsonvalue.Scanner, start int, cuts []int) ([]OffsetEntry, bool) {
	runs := make([][][]OffsetEntry, len(cuts)+1)
	oks := make([]bool, len(cuts))
	var wg sync.WaitGroup
	from := start + 1 // after '['
	for i, cut := range cuts {
		sub := sc.Sub(from, cut)
		wg.Go(func() {
			runs[i], oks[i] = scanEntryChunks(sub, false)
		})
		from = cut + 1
	}
	sc.Seek(from)
	last, ok := scanEntryChunks(sc, true)
	wg.Wait()
	if !ok || slices.Contains(oks, false) {
		return nil, false
	}
	runs[len(cuts)] = last
	return joinChunks(slices.Concat(runs...)), true
}

// scanEntryRun reads entries separated by commas: with bracketed, an array from its '[' to its
// ']' (or, after a cut, from the first entry to the ']'); without, a run of one or more entries
// that must fill the scanner.
func scanEntryRun(sc *jsonvalue.Scanner, bracketed bool) ([]OffsetEntry, bool) {
	chunks, ok := scanEntryChunks(sc, bracketed)
	if !ok {
		return nil, false
	}
	return joinChunks(chunks), true
}

// scanEntryChunks is scanEntryRun with the entries in chunks of up to entryChunk, to be copied
// once into a slice of the exact length (joinChunks): growing one slice by append would
// allocate about five times the final size for 100,000 entries.
func scanEntryChunks(sc *jsonvalue.Scanner, bracketed bool) ([][]OffsetEntry, bool) {
	if bracketed && sc.NextByte() == '[' {
		sc.Consume('[')
		if sc.Consume(']') {
			return nil, true
		}
	}
	var full [][]OffsetEntry
	chunk := make([]OffsetEntry, 0, 16)
	for {
		e, ok := scanOffsetEntry(sc)
		if !ok {
			return nil, false
		}
		if len(chunk) == cap(chunk) {
			full = append(full, chunk)
			chunk = make([]OffsetEntry, 0, min(2*cap(chunk), entryChunk))
		}
		chunk = append(chunk, e)
		if bracketed && sc.Consume(']') {
			break
		}
		if !bracketed && sc.AtEnd() {
			break
		}
		if !sc.Consume(',') {
			return nil, false
		}
	}
	return append(full, chunk), true
}

// joinChunks copies chunks into one slice of their total length; it is never nil.
func joinChunks(chunks [][]OffsetEntry) []OffsetEntry {
	if len(chunks) == 1 {
		return chunks[0]
	}
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	entries := make([]OffsetEntry, 0, n)
	for i, c := range chunks {
		entries = append(entries, c...)
		chunks[i] = nil
	}
	return entries
}

// scanOffsetEntry is decodeOffsetEntry.
func scanOffsetEntry(sc *jsonvalue.Scanner) (OffsetEntry, bool) {
	var e OffsetEntry
	if !sc.Consume('{') {
		return e, false
	}
	if sc.Consume('}') {
		return e, true
	}
	for {
		key, ok := sc.ReadString()
		if !ok || (key != "partition" && key != "offset") || !sc.Consume(':') {
			return e, false
		}
		m, ok := scanNullableMap(sc)
		if !ok {
			return e, false
		}
		if key == "partition" {
			e.Partition = m
		} else {
			e.Offset = m
		}
		if sc.Consume('}') {
			return e, true
		}
		if !sc.Consume(',') {
			return e, false
		}
	}
}

// scanNullableMap is decodeNullableMap.
func scanNullableMap(sc *jsonvalue.Scanner) (jsonvalue.Map, bool) {
	if sc.NextByte() == '{' {
		m, err := sc.Object()
		return m, err == nil
	}
	_, isNull, ok := scanScalar(sc)
	return nil, ok && isNull
}
