package javaregex

import (
	"fmt"
	"slices"
	"strings"
)

// A Java program that matches whole names against a pattern (Connect's topics.regex) reads,
// across MirrorMaker 2's default replication policy, names with a prefix: "orders" is
// "A.orders" there. The pattern that matches the prefixed names is the quoted prefix followed
// by the pattern in a non-capturing group, "A\.(?:orders-.*)", exactly when two things hold,
// and both are decided on the tree the parser reads (reading for structure: a construct whose
// meaning Compile does not evaluate, a Unicode property or \b, is read all the same):
//
//   - the pattern, in the group after the prefix, is read as it is alone: the parser reads
//     the wrapped pattern and must find the prefix's characters, then a group holding the very
//     tree of the pattern (an unterminated \Q would quote the closing parenthesis; the
//     COMMENTS flag (?x) is refused by the parser);
//   - nothing in the pattern looks before the start of the name, where the prefix now is: an
//     anchor at the start of the input (^, \A, \G, and ^ under MULTILINE) or \b or \B (when
//     the prefix ends in a word character in either of Java's readings of \b, before or after
//     Java 19: anything but ASCII punctuation, space or control) where it may be at the start
//     of the name (everything before it may match nothing), a lookbehind or \b{g} anywhere
//     (they may look further back than one character). Elsewhere an anchor or a boundary sees
//     the name's own characters, as it did. One anchor at the very start of the pattern is a
//     no-op under matches() and is dropped; anywhere else at the start it would now fail.
//
// Group numbers stay as they were (the group is non-capturing), so back references keep their
// meaning, and inline flags set in the group end with it, as they would at the end of the
// pattern.

// AfterPrefix returns the Java regex that matches, whole, prefix followed by a name that expr
// matches whole, and nothing else: Quote(prefix) + "(?:" + expr + ")", a leading anchor
// dropped. An *Error says why it cannot with certainty: with Prefix set, a construct the
// prefix would change (see above) or one not read with certainty; without, Java refuses expr.
func AfterPrefix(prefix, expr string) (string, error) {
	if prefix == "" {
		return expr, nil
	}
	refuse := func(at int, format string, args ...any) error {
		return &Error{Expr: expr, Offset: at, Msg: fmt.Sprintf(format, args...), Unsupported: true, Prefix: prefix}
	}
	n, p, err := parseFor(expr, true)
	if err != nil {
		if e, ok := err.(*Error); ok && e.Unsupported {
			e.Prefix = prefix
		}
		return "", err
	}
	inner := expr
	if lead := leading(n); lead != nil && lead.kind == nBegin {
		src := []rune(expr)
		inner = string(src[:lead.at]) + string(src[lead.end:])
		var rest []*node // what follows the anchor, which must be read as it was
		if n.kind == nConcat {
			rest = n.subs[1:]
		}
		dropped, _, err := parseFor(inner, true)
		if err != nil || !sameItems(dropped, []rune(inner), rest, src) {
			return "", refuse(lead.at, "without its leading anchor it is read otherwise")
		}
		n = dropped
	}
	src := []rune(inner)
	// \b reads a word character as [a-zA-Z0-9_] (Java 19 on) or as a letter or digit of
	// Unicode (before): a prefix that ends in any other ASCII character is no word in either.
	last := []rune(prefix)[len([]rune(prefix))-1]
	lastWord := last >= 0x80 || isASCIILetter(last) || isDigit(last) || last == '_'
	if bad := lookingBack(n, true, lastWord); bad != nil {
		at := bad.at + len([]rune(expr)) - len(src) // the offset in expr, past a dropped anchor
		text := string(src[bad.at:bad.end])
		switch {
		case bad.kind == nLook:
			return "", refuse(at, "a lookbehind would see the prefix")
		case bad.kind == nBoundary && !bad.grapheme:
			return "", refuse(at, "%s may be at the start of the name, where it would see the prefix's last character, %q, a word character", text, last)
		case bad.kind == nBoundary:
			return "", refuse(at, "%s would see the prefix's characters at the start of the name", text)
		case bad.kind == nCaretML:
			return "", refuse(at, "%s under MULTILINE matches at the start of the input, and may be at the start of the name, after the prefix", text)
		default:
			return "", refuse(at, "%s anchors at the start of the input, and may be at the start of the name, after the prefix (only a leading one is dropped)", text)
		}
	}
	quoted := Quote(prefix)
	out := quoted + "(?:" + inner + ")"
	wrapped, _, err := parseFor(out, true)
	if err != nil || !readsAsPrefixed(wrapped, []rune(out), []rune(prefix), n, src) {
		why := "in a group after the prefix it is read otherwise"
		if err != nil {
			why += fmt.Sprintf(" (%s)", err.(*Error).Msg)
		}
		if p.openQuote >= 0 {
			return "", refuse(p.openQuote, `\Q quotes to the end of the pattern (no \E), over the group's closing parenthesis: %s`, why)
		}
		return "", refuse(0, "%s", why)
	}
	return out, nil
}

// leading is the first item of the pattern's top level, nil for none.
func leading(n *node) *node {
	switch n.kind {
	case nConcat:
		return n.subs[0]
	case nEmpty:
		return nil
	}
	return n
}

// lookingBack returns the first node of n that looks before the start of the name (see
// above), nil for none. atStart: n may begin at the start of the name.
func lookingBack(n *node, atStart, lastWord bool) *node {
	switch {
	case (n.kind == nBegin || n.kind == nCaretML) && atStart:
		return n
	case n.kind == nLook && n.behind, n.kind == nBoundary && n.grapheme:
		return n
	case n.kind == nBoundary && atStart && lastWord:
		return n
	}
	for _, s := range n.subs {
		if bad := lookingBack(s, atStart, lastWord); bad != nil {
			return bad
		}
		if n.kind == nConcat {
			atStart = atStart && nullable(s)
		}
	}
	return nil
}

// nullable reports whether n may match nothing: true where it is not known (a back
// reference, \X), which makes lookingBack refuse more, never less.
func nullable(n *node) bool {
	switch n.kind {
	case nSet:
		return false
	case nConcat:
		for _, s := range n.subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case nAlt:
		for _, s := range n.subs {
			if nullable(s) {
				return true
			}
		}
		return false
	case nCapture, nGroup, nAtomic:
		return nullable(n.subs[0])
	case nRepeat:
		return n.min == 0 || nullable(n.subs[0])
	}
	return true
}

// readsAsPrefixed reports whether wrapped (read from wsrc) is the prefix's characters, each a
// literal, then a non-capturing group holding inner (read from isrc) exactly.
func readsAsPrefixed(wrapped *node, wsrc, prefix []rune, inner *node, isrc []rune) bool {
	if wrapped.kind != nConcat || len(wrapped.subs) != len(prefix)+1 {
		return false
	}
	for i, r := range prefix {
		if s := wrapped.subs[i]; s.kind != nSet || !slices.Equal(s.set, single(r)) {
			return false
		}
	}
	g := wrapped.subs[len(prefix)]
	return g.kind == nGroup && g.end == len(wsrc) && sameReading(g.subs[0], wsrc, inner, isrc)
}

// sameItems reports whether n (read from nsrc) is the sequence items (read from isrc).
func sameItems(n *node, nsrc []rune, items []*node, isrc []rune) bool {
	got := []*node{n}
	switch {
	case n.kind == nConcat:
		got = n.subs
	case n.kind == nEmpty:
		got = nil
	}
	if len(got) != len(items) {
		return false
	}
	for i := range got {
		if !sameReading(got[i], nsrc, items[i], isrc) {
			return false
		}
	}
	return true
}

// sameReading reports whether a (read from asrc) and b (read from bsrc) are the same tree:
// the same nodes, with the same meanings, read from the same text.
func sameReading(a *node, asrc []rune, b *node, bsrc []rune) bool {
	if a.kind != b.kind || !slices.Equal(a.set, b.set) || a.min != b.min || a.max != b.max || a.lazy != b.lazy ||
		a.possessive != b.possessive || a.index != b.index || a.behind != b.behind || a.negative != b.negative ||
		a.unix != b.unix || a.grapheme != b.grapheme || len(a.subs) != len(b.subs) ||
		!slices.Equal(asrc[a.at:a.end], bsrc[b.at:b.end]) {
		return false
	}
	for i := range a.subs {
		if !sameReading(a.subs[i], asrc, b.subs[i], bsrc) {
			return false
		}
	}
	return true
}

// Quote returns a Java regex that matches exactly s: each of Java's metacharacters outside a
// class (\ ^ $ . | ? * + ( ) [ ] { }) behind a backslash, which Java reads as the character
// itself; every other character stands for itself.
func Quote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\^$.|?*+()[]{}`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
