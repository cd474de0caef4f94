package handlers

import (
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

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
