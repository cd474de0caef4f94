package javaregex

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The tree is written out for one of two engines, each handed only constructs whose meaning it
// shares with Java once the tree has made everything explicit: Go's regexp (RE2) when the tree
// is regular (classes, groups, alternation, greedy or lazy repetition, \A and \z), else
// regexp2's backtracking engine (.NET syntax) for lookaround, atomic groups, possessive
// quantifiers, back references and the anchors that look at a neighbouring character. Every
// class is a list of ranges, every literal a code point; Java's capturing groups keep their
// numbers (named ones are written unnamed, as .NET would number them last).

type engine int

const (
	engineRE2 engine = iota
	engineBacktrack
)

// emit writes n for engine e, wrapped so that it matches a whole string (Matcher.matches()).
func emit(n *node, e engine) string {
	var b strings.Builder
	b.WriteString(`\A(?:`)
	emitNode(&b, n, e)
	b.WriteString(`)\z`)
	return b.String()
}

func emitNode(b *strings.Builder, n *node, e engine) {
	switch n.kind {
	case nEmpty:
		b.WriteString("(?:)")
	case nSet:
		emitSet(b, n.set, e)
	case nConcat:
		for _, s := range n.subs {
			emitNode(b, s, e)
		}
	case nAlt:
		b.WriteString("(?:")
		for i, s := range n.subs {
			if i > 0 {
				b.WriteByte('|')
			}
			emitNode(b, s, e)
		}
		b.WriteByte(')')
	case nCapture:
		b.WriteByte('(')
		emitNode(b, n.subs[0], e)
		b.WriteByte(')')
	case nGroup:
		b.WriteString("(?:")
		emitNode(b, n.subs[0], e)
		b.WriteByte(')')
	case nRepeat:
		if n.possessive {
			b.WriteString("(?>")
		}
		b.WriteString("(?:")
		emitNode(b, n.subs[0], e)
		b.WriteString("){" + strconv.Itoa(n.min) + ",")
		if n.max >= 0 {
			b.WriteString(strconv.Itoa(n.max))
		}
		b.WriteByte('}')
		if n.lazy {
			b.WriteByte('?')
		}
		if n.possessive {
			b.WriteByte(')')
		}
	case nLook:
		b.WriteString("(?")
		if n.behind {
			b.WriteByte('<')
		}
		if n.negative {
			b.WriteByte('!')
		} else {
			b.WriteByte('=')
		}
		emitNode(b, n.subs[0], e)
		b.WriteByte(')')
	case nAtomic:
		b.WriteString("(?>")
		emitNode(b, n.subs[0], e)
		b.WriteByte(')')
	case nBackref:
		fmt.Fprintf(b, `\k<%d>`, n.index)
	case nBegin:
		b.WriteString(`\A`)
	case nEnd:
		b.WriteString(`\z`)
	case nDollar:
		// Java's Dollar: at the end, or before a line terminator that ends the input (\r\n
		// counted as one, and never between its \r and \n); UnixDollar: \n only.
		if n.unix {
			b.WriteString(`(?=\n?\z)`)
		} else {
			b.WriteString("(?=\\z|[\r\u0085\u2028\u2029]\\z|(?<!\r)\n\\z|\r\n\\z)")
		}
	case nDollarML:
		if n.unix {
			b.WriteString(`(?=\z|\n)`)
		} else {
			b.WriteString("(?=\\z|[\r\u0085\u2028\u2029]|(?<!\r)\n)")
		}
	case nCaretML:
		// Java's Caret: at the start or after a line terminator (not between \r and \n), and
		// never at the end of the input.
		if n.unix {
			b.WriteString(`(?:\A|(?<=\n))(?!\z)`)
		} else {
			b.WriteString("(?:\\A|(?<=[\n\u0085\u2028\u2029])|(?<=\r)(?!\n))(?!\\z)")
		}
	default:
		panic(fmt.Sprintf("javaregex: node kind %d", n.kind))
	}
}

// emitSet writes a class of the code points a Go string can hold.
func emitSet(b *strings.Builder, s runeSet, e engine) {
	s = s.intersect(scalars)
	switch {
	case s.empty():
		if e == engineRE2 {
			b.WriteString(`[^\x00-\x{10FFFF}]`)
		} else {
			b.WriteString(`(?!)`)
		}
		return
	case s.isSingle():
		emitRune(b, s[0].lo, e)
		return
	}
	b.WriteByte('[')
	for _, r := range s {
		emitRune(b, r.lo, e)
		if r.hi != r.lo {
			b.WriteByte('-')
			emitRune(b, r.hi, e)
		}
	}
	b.WriteByte(']')
}

// emitRune writes one code point as a literal of either syntax, in or out of a class: ASCII
// letters and digits as they are, Go's \x{...} for the rest; for .NET, which has no \x{...},
// the character itself, behind a backslash when it is ASCII punctuation.
func emitRune(b *strings.Builder, r rune, e engine) {
	switch {
	case r < utf8.RuneSelf && (isASCIILetter(r) || isDigit(r)):
		b.WriteRune(r)
	case e == engineRE2:
		fmt.Fprintf(b, `\x{%X}`, r)
	case r > ' ' && r < 0x7F && r != '_': // .NET reads \_ as a word-character escape
		b.WriteByte('\\')
		b.WriteRune(r)
	default:
		b.WriteRune(r)
	}
}
