package javaregex

import (
	"slices"
	"unicode/utf8"
)

// runeSet is a set of code points as sorted, disjoint, non-adjacent closed ranges: what a Java
// character class (or one character) matches, computed here so that the engines are handed
// explicit ranges and none of their own class syntax, case folding or Unicode tables.
type runeSet []runeRange

type runeRange struct{ lo, hi rune }

func single(r rune) runeSet      { return runeSet{{r, r}} }
func span(lo, hi rune) runeSet   { return runeSet{{lo, hi}} }
func anyRune() runeSet           { return runeSet{{0, utf8.MaxRune}} }
func (s runeSet) empty() bool    { return len(s) == 0 }
func (s runeSet) isSingle() bool { return len(s) == 1 && s[0].lo == s[0].hi }

// of builds a set from ranges in any order.
func of(rs ...runeRange) runeSet {
	var out runeSet
	for _, r := range rs {
		out = out.union(runeSet{r})
	}
	return out
}

func (s runeSet) union(t runeSet) runeSet {
	all := append(slices.Clone(s), t...)
	slices.SortFunc(all, func(a, b runeRange) int { return int(a.lo - b.lo) })
	var out runeSet
	for _, r := range all {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (s runeSet) negate() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, runeRange{next, utf8.MaxRune})
	}
	return out
}

func (s runeSet) intersect(t runeSet) runeSet {
	return s.negate().union(t.negate()).negate()
}

func (s runeSet) contains(c rune) bool {
	for _, r := range s {
		if c >= r.lo && c <= r.hi {
			return true
		}
	}
	return false
}

// foldASCII adds the other case of every ASCII letter the set holds: Java's CASE_INSENSITIVE
// without UNICODE_CASE, which folds US-ASCII only (a character matches when it, or its ASCII
// upper or lower case, is in the class).
func (s runeSet) foldASCII() runeSet {
	out := s
	for c := 'A'; c <= 'Z'; c++ {
		lower := c + 'a' - 'A'
		if s.contains(c) {
			out = out.union(single(lower))
		}
		if s.contains(lower) {
			out = out.union(single(c))
		}
	}
	return out
}

// scalars are the code points a Go string can hold (no surrogate halves).
var scalars = runeSet{{0, 0xD7FF}, {0xE000, utf8.MaxRune}}
