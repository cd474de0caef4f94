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

// rawEncoder reads and encodes one range of entries.
type rawEncoder struct {
	class *connectors.Class
	props map[string]string
	check connectors.FlatCheck // the class's CheckFlat for props (and the keys), if it has one
	// checkFor is the class's CheckFlatKeys for props, if it has one: check is made from it for
	// each offset key sequence.
	checkFor func(pkeys, okeys []string) connectors.FlatCheck
	pkeys    []string
	pperm    []int
	prefix   []byte

	okeys []string
	operm []int
	arena []byte
	// out, when not nil, takes each record (rawSourceBatches) as soon as it is made: the
	// arena is then scratch for one record.
	out   *batchOut
	boxes boxCache
	// pm, om and one are the scratch entry handed to the class's Validate.
	pm, om jsonvalue.Map
	one    []events.OffsetEntry
}

// run reads the entries of text (entries separated by commas, nothing else) into records
// appended to recs; failed is true when text is not of the fast path's shape.
func (enc *rawEncoder) run(recs []offsetstore.Record, text string) (_ []offsetstore.Record, failed bool) {
	r := rawReader{s: text}
	enc.one = make([]events.OffsetEntry, 1)
	var pf, of []rawField
	for {
		if !r.entry(&pf, &of) {
			return nil, true
		}
		rec, ok := enc.encode(pf, of)
		if !ok {
			return nil, true
		}
		if enc.out != nil {
			enc.out.add(rec)
		} else {
			recs = append(recs, rec)
		}
		r.ws()
		if r.i == len(r.s) {
			return recs, false
		}
		if !r.eat(',') {
			return nil, true
		}
	}
}

// encode validates one entry and returns its record, as EncodeOffsets writes it.
func (enc *rawEncoder) encode(pf, of []rawField) (offsetstore.Record, bool) {
	if len(pf) != len(enc.pkeys) {
		return offsetstore.Record{}, false
	}
	for i, f := range pf {
		if f.Key != enc.pkeys[i] {
			return offsetstore.Record{}, false
		}
	}
	if !enc.sameOffsetKeys(of) {
		enc.okeys = enc.okeys[:0]
		enc.operm = nil
		for _, f := range of {
			if slices.Contains(enc.okeys, f.Key) {
				return offsetstore.Record{}, false
			}
			enc.okeys = append(enc.okeys, f.Key)
		}
		sample := make(jsonvalue.Map, len(of))
		for i, f := range of {
			sample[i] = jsonvalue.Field{Key: f.Key, Value: ""}
		}
		enc.operm = permutation(sample, offsetstore.JavaHashMapOrder(sample))
		if enc.checkFor != nil {
			enc.check = enc.checkFor(enc.pkeys, enc.okeys)
		}
	}
	if enc.operm == nil {
		return offsetstore.Record{}, false
	}
	if enc.class.Validate != nil && (enc.check == nil || !enc.check(pf, of)) {
		// The class cannot tell from the flat members, or refuses them: Validate judges the
		// boxed entry (and a refusal makes the request take the general path).
		enc.pm = enc.boxes.fill(enc.pm[:0], pf)
		enc.om = enc.boxes.fill(enc.om[:0], of)
		enc.one[0] = events.OffsetEntry{Partition: enc.pm, Offset: enc.om}
		err := enc.class.Validate(enc.props, enc.one)
		enc.one[0] = events.OffsetEntry{}
		if err != nil {
			return offsetstore.Record{}, false
		}
	}
	switch {
	case enc.out != nil:
		enc.arena = enc.arena[:0] // the record is copied into its batch before the next
	case cap(enc.arena)-len(enc.arena) < 4<<10:
		enc.arena = make([]byte, 0, 256<<10)
	}
	a := enc.arena
	start := len(a)
	a = append(a, enc.prefix...)
	a = appendFlat(a, pf, enc.pperm)
	a = append(a, ']')
	mid := len(a)
	a = appendFlat(a, of, enc.operm)
	end := len(a)
	enc.arena = a
	return offsetstore.Record{Key: a[start:mid:mid], Value: a[mid:end:end], Partition: -1}, true
}

func (enc *rawEncoder) sameOffsetKeys(of []rawField) bool {
	if len(of) != len(enc.okeys) || enc.okeys == nil {
		return false
	}
	for i, f := range of {
		if f.Key != enc.okeys[i] {
			return false
		}
	}
	return true
}

// appendFlat writes the members of fs in the order of perm, as offsetstore writes a map of
// such values.
func appendFlat(dst []byte, fs []rawField, perm []int) []byte {
	dst = append(dst, '{')
	for n, i := range perm {
		if n > 0 {
			dst = append(dst, ',')
		}
		f := fs[i]
		dst = append(dst, '"')
		dst = append(dst, f.Key...)
		dst = append(dst, '"', ':')
		if f.Long {
			dst = append(dst, f.Text...)
		} else {
			dst = append(dst, '"')
			dst = append(dst, f.Text...)
			dst = append(dst, '"')
		}
	}
	return append(dst, '}')
}

// boxCache shares the boxes of repeated short values (a cluster alias, a topic, a partition
// number): boxing a string into an interface allocates.
type boxCache [256]struct {
	text string
	num  bool
	box  any
}

// fill appends fs to m as jsonvalue members.
func (c *boxCache) fill(m jsonvalue.Map, fs []rawField) jsonvalue.Map {
	for _, f := range fs {
		m = append(m, jsonvalue.Field{Key: f.Key, Value: c.box(f.Text, f.Long)})
	}
	return m
}

func (c *boxCache) box(s string, num bool) any {
	if len(s) > 32 {
		return boxOf(s, num)
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	e := &c[(h^h>>8)&0xff]
	if e.box != nil && e.num == num && e.text == s {
		return e.box
	}
	e.text, e.num, e.box = s, num, boxOf(s, num)
	return e.box
}

func boxOf(s string, num bool) any {
	if num {
		return jsonvalue.Number(s)
	}
	return s
}
