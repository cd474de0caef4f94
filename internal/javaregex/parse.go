package javaregex

import (
	"fmt"
	"unicode/utf8"
)

// The parser reads Java's syntax (java.util.regex.Pattern, JDK 11 to 21) into a small tree
// whose every node has one meaning, Java's: literal characters and classes become explicit sets
// of code points (set.go), anchors say which of Java's anchor nodes they are, and every node
// says where in the pattern it was read. What it cannot give Java's meaning with certainty it
// refuses (Unsupported); what Java refuses too it calls invalid, with Java's own description
// where it is known.
//
// It reads for one of two purposes. To evaluate (Compile), every construct must have a meaning
// the engines can be given. To read (AfterPrefix), only the structure matters: where each
// construct begins and ends, which anchors, lookbehinds and boundaries there are; so a
// construct whose structure is certain but whose meaning is not evaluated (a Unicode property,
// \b, \R, a back reference under CASE_INSENSITIVE, UNICODE_CASE) is read, as a node that says
// no more than its kind and where it is (nBoundary, nOpaque, or a class that stands for no
// set). What changes the reading itself (the COMMENTS flag, the spellings inside classes whose
// reading differs between Java versions, an empty \Q\E) is refused for both.

type nodeKind int

const (
	nEmpty    nodeKind = iota
	nSet               // one code point of set
	nConcat            // subs in order
	nAlt               // one of subs
	nCapture           // capturing group index around subs[0]
	nGroup             // non-capturing group around subs[0]
	nRepeat            // subs[0] min..max times (max -1: no bound)
	nLook              // lookahead or lookbehind (behind), negative or not, of subs[0]
	nAtomic            // (?>X)
	nBackref           // \N or \k<name>: group index
	nBegin             // \A, \G, and ^ without MULTILINE
	nEnd               // \z
	nDollar            // $ without MULTILINE, \Z (unix: UNIX_LINES)
	nCaretML           // ^ with MULTILINE
	nDollarML          // $ with MULTILINE
	// Read only when reading for structure (parser.reading), never evaluated:
	nBoundary // \b (negative: \B; grapheme: \b{g})
	nOpaque   // a construct that consumes input: \R, \X, \N{...}
)

type node struct {
	kind nodeKind
	// at and end are where the node was read: characters [at, end) of the pattern.
	at, end          int
	set              runeSet
	subs             []*node
	min, max         int
	lazy, possessive bool
	index            int
	behind, negative bool
	unix             bool
	grapheme         bool // nBoundary: \b{g}
}

// flags are Java's match flags that the parser follows; the others are refused where they
// would change a meaning.
type flags struct {
	ci, unix, multiline, dotall, unicodeCase bool
}

type parser struct {
	src []rune
	// reading: read the structure only; constructs whose meaning is not evaluated are read
	// (unevaluable) rather than refused.
	reading bool
	pos     int
	flags   flags
	groups  int          // capturing groups opened so far
	closed  map[int]bool // capturing groups closed so far
	names   map[string]int
	// behind is the depth of lookbehinds the parser is in.
	behind int
	// backtrack: the tree needs a backtracking engine (lookaround, atomic groups, possessive
	// quantifiers, back references, and anchors that look at a neighbour).
	backtrack bool
	// openQuote is where a \Q without its \E begins (it quotes to the end), -1 for none.
	openQuote int
}

// failure is what the parser panics with; parse recovers it.
type failure struct{ err *Error }

func (p *parser) fail(at int, unsupported bool, format string, args ...any) {
	panic(failure{&Error{Expr: string(p.src), Offset: at, Msg: fmt.Sprintf(format, args...), Unsupported: unsupported}})
}

func (p *parser) invalid(at int, format string, args ...any) { p.fail(at, false, format, args...) }

func (p *parser) unsupported(at int, format string, args ...any) { p.fail(at, true, format, args...) }

// unevaluable refuses a construct whose structure is certain but whose meaning is not
// evaluated; when reading for structure, it is read on.
func (p *parser) unevaluable(at int, format string, args ...any) {
	if !p.reading {
		p.unsupported(at, format, args...)
	}
}

// parse reads expr to evaluate it.
func parse(expr string) (*node, *parser, error) { return parseFor(expr, false) }

// parseFor reads expr, to evaluate it or (reading) for its structure only.
func parseFor(expr string, reading bool) (n *node, p *parser, err error) {
	if !utf8.ValidString(expr) {
		return nil, nil, &Error{Expr: expr, Msg: "not valid UTF-8", Unsupported: true}
	}
	p = &parser{src: []rune(expr), reading: reading, closed: map[int]bool{}, names: map[string]int{}, openQuote: -1}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			n, err = nil, f.err
		}
	}()
	n = p.alternation()
	if p.more() { // only a ')' stops the top level early
		p.invalid(p.pos, "Unmatched closing ')'")
	}
	return n, p, nil
}

func (p *parser) more() bool { return p.pos < len(p.src) }

// peekAt is the rune at pos+i, or -1 past the end.
func (p *parser) peekAt(i int) rune {
	if p.pos+i < len(p.src) {
		return p.src[p.pos+i]
	}
	return -1
}

func (p *parser) peek() rune { return p.peekAt(0) }

func (p *parser) next() rune {
	r := p.peek()
	p.pos++
	return r
}

// spanned sets where n was read: from at to the parser's position.
func (p *parser) spanned(n *node, at int) *node {
	n.at, n.end = at, p.pos
	return n
}

func (p *parser) alternation() *node {
	start := p.pos
	alts := []*node{p.sequence()}
	for p.peek() == '|' {
		p.pos++
		alts = append(alts, p.sequence())
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return p.spanned(&node{kind: nAlt, subs: alts}, start)
}

func (p *parser) sequence() *node {
	seqStart := p.pos
	var items []*node
	for p.more() {
		start := p.pos
		var atom *node
		switch c := p.peek(); {
		case c == '|' || c == ')':
			return p.concat(items, seqStart)
		case c == '*' || c == '+' || c == '?':
			p.invalid(start, "Dangling meta character '%c'", c)
		case c == '{':
			p.invalid(start, "Illegal repetition")
		case c == '\\' && p.peekAt(1) == 'Q':
			// \Q...\E quotes literally; a quantifier after it takes its last character.
			quoted := p.quote()
			if len(quoted) == 0 {
				p.unsupported(start, "an empty \\Q\\E quote")
			}
			for _, r := range quoted[:len(quoted)-1] {
				items = append(items, p.spanned(p.literal(r), start))
			}
			atom = p.spanned(p.literal(quoted[len(quoted)-1]), start)
		default:
			atom = p.atom()
			if atom == nil { // a flags group, (?i)
				continue
			}
			p.spanned(atom, start)
		}
		items = append(items, p.quantifier(atom, start))
	}
	return p.concat(items, seqStart)
}

func (p *parser) concat(items []*node, at int) *node {
	switch len(items) {
	case 0:
		return p.spanned(&node{kind: nEmpty}, at)
	case 1:
		return items[0]
	}
	return p.spanned(&node{kind: nConcat, subs: items}, at)
}

// quote reads \Q...\E (or to the end of the pattern) from the backslash on.
func (p *parser) quote() []rune {
	at := p.pos
	p.pos += 2
	var out []rune
	for p.more() {
		if p.peek() == '\\' && p.peekAt(1) == 'E' {
			p.pos += 2
			return out
		}
		out = append(out, p.next())
	}
	p.openQuote = at
	return out
}

// lineTerminators are Java's (Pattern, "Line terminators"), \r\n aside.
var lineTerminators = of(runeRange{'\n', '\n'}, runeRange{'\r', '\r'}, runeRange{0x85, 0x85}, runeRange{0x2028, 0x2029})

func (p *parser) atom() *node {
	start := p.pos
	switch c := p.next(); c {
	case '(':
		return p.group(start)
	case '[':
		return &node{kind: nSet, set: p.class(start)}
	case '.':
		switch {
		case p.flags.dotall:
			return &node{kind: nSet, set: anyRune()}
		case p.flags.unix:
			return &node{kind: nSet, set: single('\n').negate()}
		default:
			return &node{kind: nSet, set: lineTerminators.negate()}
		}
	case '^':
		if p.flags.multiline {
			return p.anchor(start, &node{kind: nCaretML, unix: p.flags.unix})
		}
		return p.anchor(start, &node{kind: nBegin})
	case '$':
		if p.flags.multiline {
			return p.anchor(start, &node{kind: nDollarML, unix: p.flags.unix})
		}
		return p.anchor(start, &node{kind: nDollar, unix: p.flags.unix})
	case '\\':
		return p.escape(start)
	default:
		return p.literal(c)
	}
}

// anchor returns an anchor node; those that look at a neighbour need lookaround.
func (p *parser) anchor(at int, n *node) *node {
	if n.kind != nBegin && n.kind != nEnd {
		if p.behind > 0 {
			p.unevaluable(at, "an anchor other than \\A or \\z inside a lookbehind")
		}
		p.backtrack = true
	}
	return n
}

// literal is the node of one literal character, with CASE_INSENSITIVE as Java applies it: to
// US-ASCII letters only (UNICODE_CASE, which folds others, is refused).
func (p *parser) literal(r rune) *node {
	return &node{kind: nSet, set: p.caseSet(single(r))}
}

func (p *parser) caseSet(s runeSet) runeSet {
	if !p.flags.ci {
		return s
	}
	if p.flags.unicodeCase {
		p.unevaluable(p.pos, "UNICODE_CASE with CASE_INSENSITIVE ((?iu)): Unicode case folding")
	}
	return s.foldASCII()
}

// quantifier reads the quantifier after atom, if one follows; at is where atom began.
func (p *parser) quantifier(atom *node, at int) *node {
	start := p.pos
	min, max := 0, 0
	switch p.peek() {
	case '?':
		min, max = 0, 1
	case '*':
		min, max = 0, -1
	case '+':
		min, max = 1, -1
	case '{':
		p.pos++
		if !isDigit(p.peek()) {
			p.invalid(start, "Illegal repetition")
		}
		min = p.number()
		max = min
		if p.peek() == ',' {
			p.pos++
			max = -1
			if isDigit(p.peek()) {
				max = p.number()
			}
		}
		if p.peek() != '}' {
			p.invalid(p.pos, "Unclosed counted closure")
		}
		if max != -1 && max < min {
			p.invalid(start, "Illegal repetition range")
		}
	default:
		return atom
	}
	p.pos++
	rep := &node{kind: nRepeat, subs: []*node{atom}, min: min, max: max}
	switch p.peek() {
	case '?':
		p.pos++
		rep.lazy = true
	case '+':
		p.pos++
		rep.possessive = true
		if p.behind > 0 {
			p.unevaluable(start, "a possessive quantifier inside a lookbehind")
		}
		p.backtrack = true
	}
	if zeroWidth(atom) {
		p.unevaluable(start, "a quantifier on an assertion")
	}
	if min > repeatLimit || max > repeatLimit {
		p.unevaluable(start, "a repetition count above %d", repeatLimit)
	}
	return p.spanned(rep, at)
}

// repeatLimit bounds counted repetitions: Go's own limit, and far beyond any name.
const repeatLimit = 1000

// number reads decimal digits, saturating past repeatLimit.
func (p *parser) number() int {
	n := 0
	for isDigit(p.peek()) {
		n = min(n*10+int(p.next()-'0'), repeatLimit+1)
	}
	return n
}

func zeroWidth(n *node) bool {
	switch n.kind {
	case nLook, nBegin, nEnd, nDollar, nCaretML, nDollarML, nEmpty, nBoundary:
		return true
	}
	return false
}

func isDigit(r rune) bool       { return r >= '0' && r <= '9' }
func isASCIILetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }
func isOctal(r rune) bool       { return r >= '0' && r <= '7' }

func isHex(r rune) bool {
	return isDigit(r) || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

func hexValue(r rune) rune {
	switch {
	case isDigit(r):
		return r - '0'
	case r >= 'a':
		return r - 'a' + 10
	default:
		return r - 'A' + 10
	}
}

// group reads a group from after its '('; nil for a flags-only group, (?i).
func (p *parser) group(start int) *node {
	saved := p.flags
	defer func() { p.flags = saved }() // every group restores the flags, as Java's group0 does
	if p.peek() != '?' {
		return p.capture(start)
	}
	p.pos++
	switch c := p.next(); c {
	case ':':
		return &node{kind: nGroup, subs: []*node{p.body(start)}}
	case '=', '!':
		return p.look(start, false, c == '!')
	case '>':
		if p.behind > 0 {
			p.unevaluable(start, "an atomic group inside a lookbehind")
		}
		p.backtrack = true
		return &node{kind: nAtomic, subs: []*node{p.body(start)}}
	case '<':
		switch c2 := p.peek(); {
		case c2 == '=' || c2 == '!':
			p.pos++
			return p.look(start, true, c2 == '!')
		case isASCIILetter(c2):
			nameAt := p.pos
			var name []rune
			for isASCIILetter(p.peek()) || isDigit(p.peek()) {
				name = append(name, p.next())
			}
			if p.peek() != '>' {
				p.invalid(p.pos, "named capturing group is missing trailing '>'")
			}
			p.pos++
			if _, dup := p.names[string(name)]; dup {
				p.invalid(nameAt, "Named capturing group <%s> is already defined", string(name))
			}
			p.names[string(name)] = p.groups + 1
			return p.capture(start)
		default:
			p.invalid(p.pos, "capturing group name does not start with a Latin letter")
		}
	case -1:
		p.invalid(p.pos, "Unknown inline modifier")
	default:
		p.pos--
		p.inlineFlags()
		switch p.next() {
		case ')':
			saved = p.flags // (?i) lasts to the end of the enclosing group
			return nil
		case ':':
			return &node{kind: nGroup, subs: []*node{p.body(start)}}
		default:
			p.invalid(p.pos-1, "Unknown inline modifier")
		}
	}
	return nil
}

// inlineFlags reads "idmsux-idmsux" (Java's letters) and applies them to p.flags.
func (p *parser) inlineFlags() {
	on := true
	for {
		at := p.pos
		switch c := p.peek(); c {
		case '-':
			on = false
		case 'i':
			p.flags.ci = on
		case 'd':
			p.flags.unix = on
		case 'm':
			p.flags.multiline = on
		case 's':
			p.flags.dotall = on
		case 'u':
			p.flags.unicodeCase = on
		case 'x':
			if on {
				p.unsupported(at, "the COMMENTS flag (?x)")
			}
		case 'U':
			if on {
				p.unevaluable(at, "the UNICODE_CHARACTER_CLASS flag (?U)")
			}
		case 'c':
			if on {
				p.unevaluable(at, "the CANON_EQ flag (?c)")
			}
		default:
			return
		}
		p.pos++
	}
}

func (p *parser) body(start int) *node {
	n := p.alternation()
	if p.peek() != ')' {
		p.invalid(start, "Unclosed group")
	}
	p.pos++
	return n
}

func (p *parser) capture(start int) *node {
	if p.behind > 0 {
		p.unevaluable(start, "a capturing group inside a lookbehind")
	}
	p.groups++
	index := p.groups
	n := &node{kind: nCapture, index: index, subs: []*node{p.body(start)}}
	p.closed[index] = true
	return n
}

func (p *parser) look(start int, behind, negative bool) *node {
	if p.behind > 0 {
		p.unevaluable(start, "a lookaround inside a lookbehind")
	}
	p.backtrack = true
	if behind {
		p.behind++
	}
	body := p.body(start)
	if behind {
		p.behind--
		if maxLength(body) < 0 {
			p.unevaluable(start, "a lookbehind without a bounded length (Java versions differ on it)")
		}
	}
	return &node{kind: nLook, subs: []*node{body}, behind: behind, negative: negative}
}

// maxLength is the most code points n matches; -1 for no bound.
func maxLength(n *node) int {
	switch n.kind {
	case nSet:
		return 1
	case nConcat:
		total := 0
		for _, s := range n.subs {
			m := maxLength(s)
			if m < 0 {
				return -1
			}
			total += m
		}
		return total
	case nAlt:
		most := 0
		for _, s := range n.subs {
			m := maxLength(s)
			if m < 0 {
				return -1
			}
			most = max(most, m)
		}
		return most
	case nCapture, nGroup, nAtomic:
		return maxLength(n.subs[0])
	case nRepeat:
		m := maxLength(n.subs[0])
		if m < 0 || n.max < 0 {
			return -1
		}
		return m * n.max
	case nBackref, nOpaque:
		return -1
	}
	return 0
}

// escape reads an escape outside a class, from after its backslash.
func (p *parser) escape(start int) *node {
	if !p.more() {
		p.invalid(start, "Unexpected internal error")
	}
	switch c := p.peek(); c {
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.backref(start)
	case 'k':
		p.pos++
		if p.next() != '<' {
			p.invalid(p.pos-1, "\\k is not followed by '<' for named capturing group")
		}
		var name []rune
		for isASCIILetter(p.peek()) || isDigit(p.peek()) {
			name = append(name, p.next())
		}
		if p.next() != '>' {
			p.invalid(p.pos-1, "named capturing group is missing trailing '>'")
		}
		index, ok := p.names[string(name)]
		if !ok {
			p.invalid(start, "named capturing group <%s> does not exist", string(name))
		}
		return p.backrefNode(start, index)
	case 'A', 'G':
		p.pos++
		return p.anchor(start, &node{kind: nBegin})
	case 'z':
		p.pos++
		return p.anchor(start, &node{kind: nEnd})
	case 'Z':
		p.pos++
		return p.anchor(start, &node{kind: nDollar, unix: p.flags.unix})
	case 'b', 'B':
		p.unevaluable(start, "the word boundaries \\b and \\B (their meaning changed in Java 19)")
		return p.boundary(start)
	case 'R', 'X', 'N':
		p.unevaluable(start, "the escape \\%c", c)
		return p.opaqueEscape(start)
	}
	if s, ok := p.setEscape(start); ok {
		return &node{kind: nSet, set: s}
	}
	return p.literal(p.charEscape(start))
}

// boundary reads \b, \b{g} or \B, from the letter on (reading for structure only).
func (p *parser) boundary(start int) *node {
	n := &node{kind: nBoundary, negative: p.next() == 'B'}
	if !n.negative && p.peek() == '{' && p.peekAt(1) == 'g' {
		if p.peekAt(2) != '}' {
			p.invalid(start, "Illegal/unsupported escape sequence")
		}
		p.pos += 3
		n.grapheme = true
	}
	return n
}

// opaqueEscape reads \R, \X or \N{name}, from the letter on (reading for structure only):
// each consumes input, with a meaning that is not evaluated.
func (p *parser) opaqueEscape(start int) *node {
	if p.next() == 'N' {
		if p.next() != '{' {
			p.invalid(start, "\\N is not followed by '{'")
		}
		for p.peek() != '}' {
			if !p.more() {
				p.invalid(start, "Unclosed character name escape sequence")
			}
			p.pos++
		}
		p.pos++
	}
	return &node{kind: nOpaque}
}

// backref reads \N: Java takes the first digit, then each next one while the number stays
// within the groups opened so far.
func (p *parser) backref(start int) *node {
	index := int(p.next() - '0')
	for isDigit(p.peek()) {
		n := index*10 + int(p.peek()-'0')
		if n > p.groups {
			break
		}
		index = n
		p.pos++
	}
	return p.backrefNode(start, index)
}

func (p *parser) backrefNode(start, index int) *node {
	switch {
	case p.behind > 0:
		p.unevaluable(start, "a back reference inside a lookbehind")
	case !p.closed[index]:
		p.unevaluable(start, "a back reference to group %d, which is not closed before it", index)
	case p.flags.ci:
		p.unevaluable(start, "a back reference under CASE_INSENSITIVE")
	}
	p.backtrack = true
	return &node{kind: nBackref, index: index}
}

// Java's predefined classes (without UNICODE_CHARACTER_CLASS).
var (
	digits     = span('0', '9')
	word       = of(runeRange{'a', 'z'}, runeRange{'A', 'Z'}, runeRange{'_', '_'}, runeRange{'0', '9'})
	space      = of(runeRange{' ', ' '}, runeRange{'\t', '\r'}) // \t \n \x0B \f \r
	horizontal = of(runeRange{' ', ' '}, runeRange{'\t', '\t'}, runeRange{0xA0, 0xA0}, runeRange{0x1680, 0x1680},
		runeRange{0x180E, 0x180E}, runeRange{0x2000, 0x200A}, runeRange{0x202F, 0x202F}, runeRange{0x205F, 0x205F}, runeRange{0x3000, 0x3000})
	vertical = of(runeRange{'\n', '\r'}, runeRange{0x85, 0x85}, runeRange{0x2028, 0x2029})
	punct    = of(runeRange{'!', '/'}, runeRange{':', '@'}, runeRange{'[', '`'}, runeRange{'{', '~'})
	// posix are the POSIX classes of \p{Name} (US-ASCII only).
	posix = map[string]runeSet{
		"Lower":  span('a', 'z'),
		"Upper":  span('A', 'Z'),
		"ASCII":  span(0, 0x7F),
		"Alpha":  of(runeRange{'a', 'z'}, runeRange{'A', 'Z'}),
		"Digit":  digits,
		"Alnum":  of(runeRange{'a', 'z'}, runeRange{'A', 'Z'}, runeRange{'0', '9'}),
		"Punct":  punct,
		"Graph":  span('!', '~'),
		"Print":  span(' ', '~'),
		"Blank":  of(runeRange{' ', ' '}, runeRange{'\t', '\t'}),
		"Cntrl":  of(runeRange{0, 0x1F}, runeRange{0x7F, 0x7F}),
		"XDigit": of(runeRange{'0', '9'}, runeRange{'a', 'f'}, runeRange{'A', 'F'}),
		"Space":  space,
	}
)

// setEscape reads an escape that stands for a class (\d, \p{Alpha}, ...), if the one at p.pos
// is one.
func (p *parser) setEscape(start int) (runeSet, bool) {
	var s runeSet
	c := p.peek()
	switch c {
	case 'd', 'D':
		s = digits
	case 'w', 'W':
		s = word
	case 's', 'S':
		s = space
	case 'h', 'H':
		s = horizontal
	case 'v', 'V':
		s = vertical
	case 'p', 'P':
		p.pos++
		var name []rune
		if p.peek() != '{' { // a one-letter name, \pL
			p.unevaluable(start, "the Unicode property \\%c%c", c, p.peek())
			if !p.more() {
				p.invalid(start, "Unknown character property name")
			}
			name = []rune{p.next()}
		} else {
			p.pos++
			for p.more() && p.peek() != '}' {
				name = append(name, p.next())
			}
			if !p.more() {
				p.invalid(start, "Unclosed character family")
			}
			p.pos++
		}
		n := string(name)
		var ok bool
		if s, ok = posix[n]; !ok {
			// Read for structure only: the class stands for no set.
			s = anyRune()
			p.unevaluable(start, "the property \\p{%s}: only the POSIX classes (Lower, Upper, ASCII, Alpha, Digit, Alnum, Punct, Graph, Print, Blank, Cntrl, XDigit, Space) are evaluated", n)
		}
		if p.flags.ci && (n == "Lower" || n == "Upper") {
			p.unevaluable(start, "\\p{%s} under CASE_INSENSITIVE (Java versions differ on it)", n)
		}
		if c == 'P' {
			s = s.negate()
		}
		return s, true
	default:
		return nil, false
	}
	p.pos++
	if c >= 'A' && c <= 'Z' {
		s = s.negate()
	}
	return s, true
}

// charEscape reads an escape that stands for one character.
func (p *parser) charEscape(start int) rune {
	c := p.next()
	switch c {
	case '0':
		n := p.next()
		if !isOctal(n) {
			p.invalid(start, "Illegal octal escape sequence")
		}
		v := n - '0'
		if isOctal(p.peek()) {
			v = v*8 + p.next() - '0'
			if isOctal(p.peek()) && n <= '3' {
				v = v*8 + p.next() - '0'
			}
		}
		return v
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 'f':
		return '\f'
	case 'a':
		return 0x07
	case 'e':
		return 0x1B
	case 'c':
		if !p.more() {
			p.invalid(start, "Illegal control escape sequence")
		}
		r := p.next() ^ 64
		if !utf8.ValidRune(r) {
			p.unevaluable(start, "a control escape that is not a character")
		}
		return r
	case 'x':
		if isHex(p.peek()) && isHex(p.peekAt(1)) {
			return hexValue(p.next())*16 + hexValue(p.next())
		}
		if p.peek() == '{' && isHex(p.peekAt(1)) {
			p.pos++
			var v rune
			for isHex(p.peek()) {
				v = v<<4 + hexValue(p.next())
				if v > utf8.MaxRune {
					p.invalid(start, "Hexadecimal codepoint is too big")
				}
			}
			if p.next() != '}' {
				p.invalid(start, "Unclosed hexadecimal escape sequence")
			}
			return p.scalar(start, v)
		}
		p.invalid(start, "Illegal hexadecimal escape sequence")
	case 'u':
		v := p.hex4(start)
		if v >= 0xD800 && v <= 0xDBFF && p.peek() == '\\' && p.peekAt(1) == 'u' {
			at := p.pos
			p.pos += 2
			if lo := p.hex4(start); lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (v-0xD800)<<10 + (lo - 0xDC00)
			}
			p.pos = at
		}
		return p.scalar(start, v)
	case -1:
		p.invalid(start, "Unexpected internal error")
	}
	if c < utf8.RuneSelf && (isASCIILetter(c) || isDigit(c)) {
		p.invalid(start, "Illegal/unsupported escape sequence")
	}
	if c >= utf8.RuneSelf {
		p.unevaluable(start, "an escaped non-ASCII character")
	}
	return c // an escaped ASCII punctuation or space character stands for itself
}

func (p *parser) hex4(start int) rune {
	var v rune
	for range 4 {
		if !isHex(p.peek()) {
			p.invalid(start, "Illegal Unicode escape sequence")
		}
		v = v<<4 + hexValue(p.next())
	}
	return v
}

// scalar refuses a surrogate half: no Go string holds one.
func (p *parser) scalar(start int, v rune) rune {
	if v >= 0xD800 && v <= 0xDFFF {
		p.unevaluable(start, "a lone surrogate \\u%04X", v)
	}
	return v
}

// class reads a character class from after its '[': Java's union of items and nested classes,
// intersected with && (the lowest precedence), negated as a whole by a leading ^ (Java 9+).
func (p *parser) class(start int) runeSet {
	negate := false
	if p.peek() == '^' {
		p.pos++
		negate = true
	}
	set, items := p.operand(start, true, false)
	for p.peek() == '&' && p.peekAt(1) == '&' {
		at := p.pos
		if items == 0 {
			p.unsupported(at, "&& with nothing on its left")
		}
		p.pos += 2
		if p.peek() == '&' {
			p.unsupported(at, "&&& in a class")
		}
		var right runeSet
		right, items = p.operand(start, false, true)
		if items == 0 {
			p.unsupported(at, "&& with nothing on its right")
		}
		set = set.intersect(right)
	}
	if !p.more() {
		p.invalid(start, "Unclosed character class")
	}
	p.pos++ // ']'
	if negate {
		set = set.negate()
	}
	return set
}

// operand reads the union of items up to "&&" or the closing ']', which it leaves. first: at
// the class's start, where ']' is a literal. right: the right side of &&, where Java's parser
// keeps only part of an operand that mixes nested classes and other items, so such a mix is
// refused.
func (p *parser) operand(start int, first, right bool) (runeSet, int) {
	var set runeSet
	items, nested := 0, 0
	// prevSingle: the last item was one character, so a '-' may follow to make a range.
	prevSingle, prev := false, rune(0)
	for {
		at := p.pos
		c := p.peek()
		switch {
		case c == -1:
			p.invalid(start, "Unclosed character class")
		case (c == ']' && !(first && items == 0)) || (c == '&' && p.peekAt(1) == '&'):
			if right && nested > 0 && nested < items {
				p.unsupported(start, "a right operand of && that mixes nested classes and other items")
			}
			return set, items
		case c == ']': // first in the class: a literal
			p.pos++
			set = set.union(single(']'))
			prev, prevSingle = ']', true
		case c == '[':
			p.pos++
			set = set.union(p.class(at))
			nested++
			prevSingle = false
		case c == '-' && items > 0 && p.peekAt(1) != ']':
			if !prevSingle {
				p.unsupported(at, "a '-' after a range or a class inside a class")
			}
			p.pos++
			hi, ok := p.classChar(start)
			if !ok {
				p.invalid(at, "Illegal character range")
			}
			if hi < prev {
				p.invalid(at, "Illegal character range")
			}
			set = set.union(p.caseSet(span(prev, hi)))
			prevSingle = false
		case c == '\\' && p.peekAt(1) == 'Q':
			quoted := p.quote()
			if len(quoted) == 0 {
				p.unsupported(at, "an empty \\Q\\E quote")
			}
			for _, r := range quoted {
				set = set.union(p.caseSet(single(r)))
				prev, prevSingle = r, true
			}
		default:
			if c == '\\' {
				p.pos++
				if s, ok := p.setEscape(at); ok {
					set = set.union(s)
					prevSingle = false
					items++
					continue
				}
				p.pos--
			}
			r, _ := p.classChar(start)
			set = set.union(p.caseSet(single(r)))
			prev, prevSingle = r, true
		}
		items++
	}
}

// classChar reads one character of a class (literal or escaped); false when the escape there
// stands for a class.
func (p *parser) classChar(start int) (rune, bool) {
	at := p.pos
	c := p.next()
	switch {
	case c == -1:
		p.invalid(start, "Unclosed character class")
	case c == '[' || c == ']' || (c == '&' && p.peek() == '&'):
		p.unsupported(at, "'%c' as the end of a range", c)
	case c != '\\':
		return c, true
	}
	switch e := p.peek(); {
	case isDigit(e) && e != '0':
		p.invalid(at, "Illegal/unsupported escape sequence")
	case e == 'Q':
		p.unsupported(at, "\\Q as the end of a range")
	case e == 'b' || e == 'B' || e == 'A' || e == 'G' || e == 'Z' || e == 'z' || e == 'k' || e == 'R' || e == 'X' || e == 'N':
		p.unsupported(at, "the escape \\%c in a class", e)
	}
	if _, ok := p.setEscape(at); ok {
		return 0, false
	}
	return p.charEscape(at), true
}
