package jsonvalue

import (
	"strconv"
	"unsafe"
)

// scanner reads JSON from s; every method reports false on malformed input. It is shared by
// DecodeKey (lenient like Connect's reader: leadingZeros) and Scanner/ScanValue (strict RFC
// 8259, the same values and errors as DecodeValue).
//
// It is built for requests with 100,000 small objects, where allocation is the whole cost:
//   - unescaped strings are substrings of s;
//   - objects are collected on a reusable stack (scratch) and then copied, at their exact
//     length, into a shared slab of Fields, so that thousands of small Maps cost one allocation
//     (each carved Map has cap == len, so an append to one never writes into its neighbour);
//   - boxing a string or Number into an interface allocates, so the boxes of short, repeated
//     scalars (a cluster alias, a topic name, a partition number) are shared through a cache:
//     a small one once a scan has boxed a few values (a request of ten offsets repeats its
//     cluster alias and topic in each), a larger one once it has boxed enough for that to pay
//     for itself; and the Numbers 0 to 255 (partitions) are boxed once for every scan.
type scanner struct {
	s            string
	i            int
	leadingZeros bool // accept 007 as Connect's Jackson reader does (offsets-topic keys)
	tooDeep      bool // the failure was the nesting limit, not a syntax error
	scratch      []Field
	slab         []Field
	boxed        int
	recent       *recentBoxes
	cache        *boxCache
	// own: strings read are copied out of s (into arena; short ones shared through interned),
	// so that the values do not keep s alive.
	own      bool
	arena    []byte
	interned *[256]string
}

const (
	// maxSlabFields bounds a slab (32 KiB) so that one long-lived Map pins little memory.
	maxSlabFields = 1024
	// recentAfter is the number of boxed scalars after which the small box cache (recentBoxes)
	// is allocated, cacheAfter the number after which the larger one is: small keys and
	// values pay for neither, a request of a few offsets for the small one only.
	recentAfter = 4
	cacheAfter  = 64
	// cacheMaxLen bounds the strings that are looked up in the box cache.
	cacheMaxLen = 32
)

// boxCache and recentBoxes are direct-mapped caches of boxed strings and Numbers.
type (
	boxCache    [256]boxEntry
	recentBoxes [16]boxEntry
)

type boxEntry struct {
	text   string
	number bool
	box    any
}

// smallNumbers are the boxes of the Numbers 0 to 255 as written without leading zeros (the
// partitions of most offsets), shared by every scan; never changed after they are made.
var smallNumbers = func() (t [256]any) {
	for i := range t {
		t[i] = Number(strconv.Itoa(i))
	}
	return t
}()

// smallNumber returns the shared box of s when s is one of smallNumbers' texts, else nil.
func smallNumber(s string) any {
	if len(s) == 0 || len(s) > 3 || (s[0] == '0' && len(s) > 1) {
		return nil
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return nil
		}
		n = n*10 + int(c-'0')
	}
	if n >= len(smallNumbers) {
		return nil
	}
	return smallNumbers[n]
}

func (p *scanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scanner) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// value reads one value nested at depth (0 for a top-level value); like DecodeValue it refuses
// values nested deeper than maxDepth.
func (p *scanner) value(depth int) (any, bool) {
	if depth > maxDepth {
		p.tooDeep = true
		return nil, false
	}
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		return p.box(s, false), true
	case c == '{':
		m, ok := p.object(depth)
		if !ok {
			return nil, false
		}
		return m, true
	case c == '[':
		return p.array(depth)
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := p.number()
		if !ok {
			return nil, false
		}
		return p.box(p.keep(string(n)), true), true
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

// box returns s (number: as a Number) in an interface, sharing the box of an equal short value
// boxed before when a cache is on, and the box of a small Number always. Boxes are immutable,
// so sharing them is invisible.
func (p *scanner) box(s string, number bool) any {
	if number {
		if b := smallNumber(s); b != nil {
			return b
		}
	}
	if p.cache == nil {
		if p.boxed++; p.boxed < recentAfter || p.leadingZeros {
			return boxed(s, number)
		}
		if p.boxed >= cacheAfter {
			p.cache = new(boxCache)
		}
	}
	if len(s) > cacheMaxLen {
		return boxed(s, number)
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	h ^= h >> 8
	var e *boxEntry
	if p.cache != nil {
		e = &p.cache[h%uint32(len(p.cache))]
	} else {
		if p.recent == nil {
			p.recent = new(recentBoxes)
		}
		e = &p.recent[h%uint32(len(p.recent))]
	}
	if e.box != nil && e.number == number && e.text == s {
		return e.box
	}
	e.text, e.number, e.box = s, number, boxed(s, number)
	return e.box
}

// keep returns s, a substring of the scanned text, as it is or, when the scanner owns its
// strings, as a copy: short strings are shared through a small cache (keys such as "topic"
// repeat in every entry of a large request), longer ones are appended to an arena.
func (p *scanner) keep(s string) string {
	if !p.own || len(s) == 0 {
		return s
	}
	var slot *string
	if len(s) <= cacheMaxLen {
		if p.interned == nil {
			p.interned = new([256]string)
		}
		h := uint32(2166136261) // FNV-1a
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		slot = &p.interned[(h^h>>8)&0xff]
		if *slot == s {
			return *slot
		}
	}
	if cap(p.arena)-len(p.arena) < len(s) {
		p.arena = make([]byte, 0, max(arenaBytes, len(s)))
	}
	start := len(p.arena)
	p.arena = append(p.arena, s...)
	c := unsafe.String(&p.arena[start], len(s))
	if slot != nil {
		*slot = c
	}
	return c
}

// arenaBytes is the size of the arenas an owning scanner copies strings into.
const arenaBytes = 32 << 10

func boxed(s string, number bool) any {
	if number {
		return Number(s)
	}
	return s
}

// object reads an object nested at depth; its members are at depth+1.
func (p *scanner) object(depth int) (Map, bool) {
	if depth > maxDepth {
		p.tooDeep = true
		return nil, false
	}
	if !p.eat('{') {
		return nil, false
	}
	base := len(p.scratch)
	ok := p.members(depth)
	var m Map
	if ok {
		m = p.carve(p.scratch[base:])
	}
	clear(p.scratch[base:]) // drop references so the scratch stack pins nothing
	p.scratch = p.scratch[:base]
	return m, ok
}

// members reads an object's members after its '{' onto the scratch stack from its current
// length on. A repeated key keeps its first position and takes its last value.
func (p *scanner) members(depth int) bool {
	base := len(p.scratch)
	p.space()
	if p.eat('}') {
		return true
	}
	for {
		k, ok := p.memberKey()
		if !ok {
			return false
		}
		v, ok := p.value(depth + 1)
		if !ok {
			return false
		}
		dup := false
		for i := base; i < len(p.scratch); i++ {
			if p.scratch[i].Key == k {
				p.scratch[i].Value, dup = v, true
				break
			}
		}
		if !dup {
			p.scratch = append(p.scratch, Field{Key: k, Value: v})
		}
		p.space()
		if p.eat('}') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

// memberKey reads an object member's key and the ':' after it, and the whitespace around them.
func (p *scanner) memberKey() (string, bool) {
	p.space()
	k, ok := p.str()
	if !ok {
		return "", false
	}
	p.space()
	if !p.eat(':') {
		return "", false
	}
	p.space()
	return k, true
}

// carve copies fields into the slab and returns them as a Map with cap == len. An empty object
// is a non-nil Map of length 0.
func (p *scanner) carve(fields []Field) Map {
	n := len(fields)
	if n == 0 {
		return Map{}
	}
	if cap(p.slab)-len(p.slab) < n {
		// The first slab is exact, so that a single small object (an offsets-topic key) pins
		// no spare capacity; later ones double up to maxSlabFields.
		size := min(max(2*cap(p.slab), n), maxSlabFields)
		p.slab = make([]Field, 0, max(size, n))
	}
	start := len(p.slab)
	p.slab = append(p.slab, fields...)
	return Map(p.slab[start : start+n : start+n])
}

// array reads an array nested at depth; its elements are at depth+1.
func (p *scanner) array(depth int) ([]any, bool) {
	if depth > maxDepth {
		p.tooDeep = true
		return nil, false
	}
	if !p.eat('[') {
		return nil, false
	}
	arr := []any{}
	p.space()
	if p.eat(']') {
		return arr, true
	}
	for {
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.space()
		if p.eat(']') {
			return arr, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// number scans -?int(.digits)?([eE][+-]?digits)?, where int is 0 or starts with 1-9 (RFC 8259),
// or any run of digits with leadingZeros.
func (p *scanner) number() (Number, bool) {
	start := p.i
	p.eat('-')
	if !p.leadingZeros && p.eat('0') {
		// RFC 8259: a zero integer part is a lone 0.
	} else if !p.digits() {
		return "", false
	}
	if p.eat('.') && !p.digits() {
		return "", false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if !p.digits() {
			return "", false
		}
	}
	return Number(p.s[start:p.i]), true
}

func (p *scanner) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// skip steps over one value nested at depth, accepting exactly what value accepts, without
// building it: strings are checked, not kept (an escaped one is still decoded, and dropped).
func (p *scanner) skip(depth int) bool {
	if depth > maxDepth {
		p.tooDeep = true
		return false
	}
	switch c := p.peek(); {
	case c == '"':
		own := p.own
		p.own = false // nothing is kept: no copy
		_, ok := p.str()
		p.own = own
		return ok
	case c == '{':
		return p.skipMembers(depth, '{', '}', true)
	case c == '[':
		return p.skipMembers(depth, '[', ']', false)
	case c == '-' || (c >= '0' && c <= '9'):
		_, ok := p.number()
		return ok
	case p.literal("true"), p.literal("false"), p.literal("null"):
		return true
	}
	return false
}

// skipMembers steps over an object (keyed) or array nested at depth, as object and array read
// them: its members are at depth+1.
func (p *scanner) skipMembers(depth int, open, end byte, keyed bool) bool {
	if !p.eat(open) {
		return false
	}
	p.space()
	if p.eat(end) {
		return true
	}
	for {
		p.space()
		if keyed {
			own := p.own
			p.own = false // nothing is kept: no copy
			_, ok := p.memberKey()
			p.own = own
			if !ok {
				return false
			}
		}
		if !p.skip(depth + 1) {
			return false
		}
		p.space()
		if p.eat(end) {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}
