package javaregex

import (
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Regexp is a compiled Java regular expression. It is safe for concurrent use.
type Regexp struct {
	expr string
	tree *node
	// re2 is set when the pattern is regular, backtrack otherwise.
	re2       *regexp.Regexp
	backtrack *regexp2.Regexp
}

// Error says why a pattern is not evaluated.
type Error struct {
	// Expr is the pattern as given.
	Expr string
	// Offset is where in Expr (in characters) the problem is.
	Offset int
	Msg    string
	// Unsupported: Java may accept the pattern, but this package cannot evaluate it with Java's
	// meaning for certain (or, with Prefix, move it behind the prefix). Otherwise Java's
	// Pattern.compile refuses it too (PatternSyntaxException), and the Java program reading it
	// fails.
	Unsupported bool
	// Prefix is set by AfterPrefix: the prefix expr was not moved behind.
	Prefix string
}

func (e *Error) Error() string {
	what := "not a valid Java regex"
	switch {
	case e.Prefix != "":
		what = fmt.Sprintf("not moved behind the prefix %q with certainty", e.Prefix)
	case e.Unsupported:
		what = "not evaluated as Java would"
	}
	return fmt.Sprintf("%s: %s, at character %d of /%s/", what, e.Msg, e.Offset, e.Expr)
}

// ErrUndecidable is returned by Matches when no answer could be had in time (a pattern that
// backtracks without end) or the name is not valid UTF-8.
var ErrUndecidable = errors.New("no answer as Java's")

// MatchTimeout bounds one backtracking match.
const MatchTimeout = time.Second

// Compile parses expr as java.util.regex.Pattern.compile(expr) does (no flags but those written
// inline) and returns it ready to match; an error is an *Error.
func Compile(expr string) (*Regexp, error) {
	n, p, err := parse(expr)
	if err != nil {
		return nil, err
	}
	out := &Regexp{expr: expr, tree: n}
	if !p.backtrack {
		if out.re2, err = regexp.Compile(emit(n, engineRE2)); err == nil {
			return out, nil
		}
		// Too large for RE2 (its limits on repetition): the backtracking engine takes it.
	}
	bt, err := regexp2.Compile(emit(n, engineBacktrack))
	if err != nil {
		return nil, &Error{Expr: expr, Msg: "the translation is not accepted by the engine: " + err.Error(), Unsupported: true}
	}
	bt.MatchTimeout = MatchTimeout
	out.backtrack = bt
	return out, nil
}

// MustCompile is Compile for patterns known to be good; it panics otherwise.
func MustCompile(expr string) *Regexp {
	re, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return re
}

// String returns the pattern as given.
func (re *Regexp) String() string { return re.expr }

// LiteralPrefix returns the characters every name the pattern matches begins with ("" for
// none known): the literal characters at its start, through groups and zero-width assertions.
func (re *Regexp) LiteralPrefix() string {
	prefix, _ := literalPrefix(re.tree)
	return string(prefix)
}

// literalPrefix returns what every match of n begins with, and whether that is all n matches.
func literalPrefix(n *node) (prefix []rune, whole bool) {
	switch n.kind {
	case nSet:
		if n.set.isSingle() {
			return []rune{n.set[0].lo}, true
		}
		return nil, false
	case nConcat:
		for _, s := range n.subs {
			p, w := literalPrefix(s)
			prefix = append(prefix, p...)
			if !w {
				return prefix, false
			}
		}
		return prefix, true
	case nCapture, nGroup, nAtomic:
		return literalPrefix(n.subs[0])
	case nRepeat:
		if n.min == 0 {
			return nil, false
		}
		p, w := literalPrefix(n.subs[0])
		return p, w && n.min == 1 && n.max == 1
	case nAlt:
		common, _ := literalPrefix(n.subs[0])
		for _, s := range n.subs[1:] {
			p, _ := literalPrefix(s)
			i := 0
			for i < len(common) && i < len(p) && common[i] == p[i] {
				i++
			}
			common = common[:i]
		}
		return common, false
	case nEmpty, nLook, nBegin, nEnd, nDollar, nCaretML, nDollarML:
		return nil, true // nothing consumed
	}
	return nil, false
}

// Matches reports whether the whole of s matches, as Java's Pattern.matcher(s).matches() does.
// An error (ErrUndecidable) means no answer: the caller must not take it for false.
func (re *Regexp) Matches(s string) (bool, error) {
	if !utf8.ValidString(s) {
		return false, fmt.Errorf("match %q against %q: not valid UTF-8: %w", re.expr, s, ErrUndecidable)
	}
	if re.re2 != nil {
		return re.re2.MatchString(s), nil
	}
	m, err := re.backtrack.MatchString(s)
	if err != nil {
		return false, fmt.Errorf("match %q against %q: %v: %w", re.expr, s, err, ErrUndecidable)
	}
	return m, nil
}
