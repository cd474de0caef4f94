package handlers

import (
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A large request's initial_offsets come from the decoder as text (events.CreateRequest.
// RawOffsets), unchecked (ReadAhead, readahead.go) or checked, not decoded. rawSourceRecords
// reads strict JSON only: on unchecked text it gives up wherever the decoder's check would have
// failed (FuzzRawSourceRecords). It reads that text once, in parallel
// ranges, straight into records: no decoded maps, no boxed values kept. It takes the requests
// fastSourceRecords takes, and only the commonest of them: every entry is
// {"partition": {...}, "offset": {...}} with both maps present, every value a string without
// escapes (nor characters beyond U+FFFF) or an integer as Java prints a long, every partition with the
// first one's keys in the same order. The text is valid UTF-8: the decoder checks the whole
// record. Key orders are computed once per key sequence, and each entry is checked by the
// class's CheckFlat on its flat members (made once per key sequence where the class has
// CheckFlatKeys), or, where the class has none or it cannot tell, by its Validate one entry
// at a time (a small cache shares the boxes of repeated values). Anything else makes it give
// up; the caller then decodes the text and runs sourceRecords, which words any error. So the
// two give the same records and the same errors (TestRawSourceRecordsMatchGeneral,
// FuzzRawSourceRecords).

// sourceRecordsFromText is sourceRecords for the text of an initial_offsets array. With
// partitions > 0 (the partition count of every topic the records go to) the single pass
// encodes them straight into record batches (enc); otherwise, or when the text is not of the
// single pass's shape, they come as records.
func sourceRecordsFromText(name string, class *connectors.Class, props map[string]string, raw []byte, partitions int) (recs []offsetstore.Record, enc *offsetstore.Encoded, err error) {
	ranges := rawRanges(rawParallelBytes, runtime.GOMAXPROCS(0))
	if partitions > 0 {
		if enc, ok := rawSourceBatches(name, class, props, raw, ranges, partitions); ok {
			return nil, enc, nil
		}
	} else if recs, ok := rawSourceRecords(name, class, props, raw, ranges); ok {
		return recs, nil, nil
	}
	entries, err := events.ParseOffsets(raw)
	if err != nil {
		return nil, nil, badRequest(err.Error())
	}
	if len(entries) == 0 {
		return nil, nil, badRequest(msgNoOffsets)
	}
	recs, err = sourceRecords(name, class, props, entries)
	return recs, nil, err
}

// rawParallelBytes is the least text per range of rawSourceRecords.
const rawParallelBytes = 1 << 20

// rawRanges returns how many ranges rawSourceRecords cuts a text into: one per rangeBytes, at
// most parts.
func rawRanges(rangeBytes, parts int) func(textBytes int) int {
	return func(n int) int { return max(1, min(parts, n/max(rangeBytes, 1))) }
}

// rawSourceRecords is fastSourceRecords on the text of an initial_offsets array, read in
// ranges(len(raw)) parallel ranges; ok is false when the text is not of the shape it takes.
func rawSourceRecords(name string, class *connectors.Class, props map[string]string, raw []byte, ranges func(int) int) (recs []offsetstore.Record, ok bool) {
	pl, ok := planRaw(name, class, raw, ranges)
	if !ok {
		return nil, false
	}
	// One slice for every range's records, each range writing into a window sized from the
	// first entry's length (entries of the common shape are about as long as each other), so
	// that the ranges' records need not be copied together. A range whose window is too short
	// goes on in a slice of its own.
	ends := make([]int, len(pl.bounds)) // where each range's window ends in all
	total := 0
	for i, b := range pl.bounds {
		total += (b[1]-b[0])/pl.per + (b[1]-b[0])/pl.per/8 + 16
		ends[i] = total
	}
	all := make([]offsetstore.Record, total)
	windows := make([][]offsetstore.Record, len(pl.bounds))
	fails := make([]bool, len(pl.bounds))
	var wg sync.WaitGroup
	for i, b := range pl.bounds {
		from := 0
		if i > 0 {
			from = ends[i-1]
		}
		windows[i] = all[from:from:ends[i]]
		wg.Go(func() {
			enc := pl.encoder(class, props)
			windows[i], fails[i] = enc.run(windows[i], pl.text[b[0]:b[1]])
		})
	}
	wg.Wait()
	if slices.Contains(fails, true) {
		return nil, false
	}
	// The ranges' records are moved together to the start of all: each range's move ends
	// before the next range's window starts, unless a range outgrew its window (and went on
	// in a slice of its own); then they are copied into a new slice.
	n := 0
	inPlace := true
	for i, w := range windows {
		n += len(w)
		inPlace = inPlace && n <= ends[i]
	}
	if n == 0 {
		return nil, false
	}
	recs = all[:0]
	if !inPlace {
		recs = make([]offsetstore.Record, 0, n)
	}
	for i, w := range windows {
		recs = append(recs, w...)
		windows[i] = nil
	}
	if inPlace {
		clear(all[n:])
	}
	recs = recs[:n:n]
	// A repeated partition takes the general path (Dedupe's "last one wins"). With one key
	// sequence and canonical values, equal partitions have equal key bytes; two keys with one
	// hash take the general path too, repeated or not.
	seed := maphash.MakeSeed()
	hashes := make([]uint64, n)
	for k := range recs {
		hashes[k] = maphash.Bytes(seed, recs[k].Key)
	}
	if repeatedHash(hashes) {
		return nil, false
	}
	return recs, true
}

// rawSourceBatches is rawSourceRecords with each record, as it is made, appended to the
// record batch of its partition among partitions (murmur2, offsetstore.PartitionFor): no
// Record per offset, and each record's bytes written once before the write sends them. Each
// range encodes into batches of its own; per partition, the ranges' batches follow each other
// in request order, so the records land in each partition in the order rawSourceRecords gives
// them (TestRawSourceBatchesMatchRecords).
func rawSourceBatches(name string, class *connectors.Class, props map[string]string, raw []byte, ranges func(int) int, partitions int) (*offsetstore.Encoded, bool) {
	if partitions <= 0 {
		return nil, false
	}
	pl, ok := planRaw(name, class, raw, ranges)
	if !ok {
		return nil, false
	}
	seed := maphash.MakeSeed()
	outs := make([]*batchOut, len(pl.bounds))
	fails := make([]bool, len(pl.bounds))
	var wg sync.WaitGroup
	for i, b := range pl.bounds {
		wg.Go(func() {
			entries := (b[1]-b[0])/pl.per + 1
			out := &batchOut{
				batches:    kafkaio.NewBatchEncoder(partitions, entries*pl.recordBytes),
				partitions: partitions,
				seed:       seed,
				hashes:     make([]uint64, 0, entries+entries/8),
			}
			enc := pl.encoder(class, props)
			enc.out = out
			_, fails[i] = enc.run(nil, pl.text[b[0]:b[1]])
			outs[i] = out
		})
	}
	wg.Wait()
	if slices.Contains(fails, true) {
		return nil, false
	}
	n := 0
	for _, o := range outs {
		n += len(o.hashes)
	}
	if n == 0 {
		return nil, false
	}
	// Repeated partitions take the general path, as in rawSourceRecords.
	parts := make([][]uint64, len(outs))
	for i, o := range outs {
		parts[i], o.hashes = o.hashes, nil
	}
	if repeatedHash(parts...) {
		return nil, false
	}
	encs := make([]*offsetstore.Encoded, len(outs))
	for i, o := range outs {
		encs[i] = o.batches.Encoded()
	}
	return kafkaio.JoinEncoded(encs...), true
}

// batchOut is where a range of rawSourceBatches puts its records: each in its partition's
// batch, its key's hash kept for the duplicate check.
type batchOut struct {
	batches    *kafkaio.BatchEncoder
	partitions int
	seed       maphash.Seed
	hashes     []uint64
}

func (o *batchOut) add(r offsetstore.Record) {
	o.hashes = append(o.hashes, maphash.Bytes(o.seed, r.Key))
	o.batches.Append(offsetstore.PartitionFor(r.Key, o.partitions), r.Key, r.Value)
}

// rawPlan is what the ranges of a single pass share: the text, the ranges' bounds in it, the
// partition key sequence and order, and the first entry's text and record length (entries
// of the common shape are about as long as each other).
type rawPlan struct {
	text        string
	bounds      [][2]int
	pkeys       []string
	pperm       []int
	prefix      []byte
	per         int // the first entry's text length
	recordBytes int // about what its record takes in a record batch
}

func (pl *rawPlan) encoder(class *connectors.Class, props map[string]string) *rawEncoder {
	enc := &rawEncoder{class: class, props: props, pkeys: pl.pkeys, pperm: pl.pperm, prefix: pl.prefix}
	// What the class's check needs of props is read once per range; of the keys, once per
	// key sequence.
	if class.CheckFlatKeys != nil {
		enc.checkFor = class.CheckFlatKeys(props)
	} else if class.CheckFlat != nil {
		enc.check = class.CheckFlat(props)
	}
	return enc
}

// planRaw reads the first entry of raw and cuts the text into ranges; ok is false when the
// text is not of the shape the single pass takes.
func planRaw(name string, class *connectors.Class, raw []byte, ranges func(int) int) (pl rawPlan, ok bool) {
	if class == nil || !class.PerEntry || len(raw) == 0 {
		return pl, false
	}
	// The text is read as a string without a copy: nothing writes to raw during the pass, and
	// nothing read from it outlives the pass (records are copies).
	text := unsafe.String(&raw[0], len(raw))
	first := rawReader{s: text}
	first.ws()
	if !first.eat('[') {
		return pl, false
	}
	bodyStart := first.i
	var pf, of []rawField
	if !first.entry(&pf, &of) {
		return pl, false
	}
	pkeys := make([]string, len(pf))
	for i, f := range pf {
		if slices.Contains(pkeys[:i], f.Key) {
			return pl, false
		}
		pkeys[i] = f.Key
	}
	end := len(text)
	for end > 0 && isSpace(text[end-1]) {
		end--
	}
	if end == 0 || text[end-1] != ']' {
		return pl, false
	}
	end-- // the closing bracket

	// Ranges of whole entries, cut at guessed commas between entries: a wrong guess makes a
	// range fail to read, and the request takes the general path.
	sc := jsonvalue.NewStringScanner(text)
	cuts := sc.GuessCuts(ranges(len(text)))
	bounds := make([][2]int, 0, len(cuts)+1)
	from := bodyStart
	for _, c := range cuts {
		bounds = append(bounds, [2]int{from, c})
		from = c + 1
	}
	bounds = append(bounds, [2]int{from, end})

	pperm := partitionPerm(class, pkeys)
	if pperm == nil {
		return pl, false
	}
	prefix := keyPrefix(name)
	// The first entry's record: its key and value, and a record's own header in a batch
	// (length, attributes, deltas, key and value lengths, header count: about 8 bytes).
	ident := make([]int, len(of))
	for i := range ident {
		ident[i] = i
	}
	recordBytes := len(prefix) + len(appendFlat(nil, pf, pperm)) + 1 + len(appendFlat(nil, of, ident)) + 8
	return rawPlan{text: text, bounds: bounds, pkeys: pkeys, pperm: pperm, prefix: prefix,
		per: max(first.i-bodyStart, 16), recordBytes: recordBytes}, true
}

// partitionPerm is, for the partition key sequence keys, the position in the request of each
// key as the record's key writes them (the class's PartitionOrder, else Java HashMap order).
func partitionPerm(class *connectors.Class, keys []string) []int {
	sample := make(jsonvalue.Map, len(keys))
	for i, k := range keys {
		sample[i] = jsonvalue.Field{Key: k, Value: ""}
	}
	if class.PartitionOrder != nil {
		return permutation(sample, class.PartitionOrder(sample))
	}
	return permutation(sample, offsetstore.JavaHashMapOrder(sample))
}

// keyPrefix is the start of every record key of connector name: `["<name>",`.
func keyPrefix(name string) []byte {
	k := offsetstore.AppendKey(nil, name, jsonvalue.Map{}) // ["<name>",{}]
	return k[:len(k)-len("{}]")]
}

// rawField is one member of a flat map: its key and, for a string, its text between the quotes
// (no escapes: written back as it came), for an integer (Long) its digits.
type rawField = connectors.FlatField
