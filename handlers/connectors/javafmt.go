package connectors

import (
	"encoding/binary"
	"math"
	"math/big"
	"sort"
	"strconv"
	"unicode"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// This file renders decoded JSON values the way Java prints the objects Jackson and Connect's
// JsonConverter make of them, because Connect's messages embed them with String.valueOf and
// Map.toString: integers as Integer/Long/BigInteger, other numbers as Double, objects as maps.

// bigInt returns an integral literal's value.
func bigInt(n jsonvalue.Number) (*big.Int, bool) {
	return new(big.Int).SetString(string(n), 10)
}

// int64Of returns an integral literal's value when it fits a Java long.
func int64Of(n jsonvalue.Number) (int64, bool) {
	if !offsetstore.IsIntegral(n) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

// parseJavaInteger parses s as Integer.parseInt (bits 32) or Long.parseLong (bits 64) do: an optional
// '+' or '-', then one or more decimal digits of any script (Character.digit), no spaces.
func parseJavaInteger(s string, bits int) (int64, bool) {
	rs := []rune(s)
	if len(rs) == 0 {
		return 0, false
	}
	neg := false
	if rs[0] == '+' || rs[0] == '-' {
		neg = rs[0] == '-'
		rs = rs[1:]
		if len(rs) == 0 {
			return 0, false
		}
	}
	n := new(big.Int)
	ten := big.NewInt(10)
	for _, r := range rs {
		d, ok := decimalDigit(r)
		if !ok {
			return 0, false
		}
		n.Mul(n, ten).Add(n, big.NewInt(int64(d)))
	}
	if neg {
		n.Neg(n)
	}
	lo := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	hi := new(big.Int).Sub(lo, big.NewInt(1))
	lo.Neg(lo)
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return 0, false
	}
	return n.Int64(), true
}

// decimalDigit returns the value of a Unicode decimal digit (category Nd) as Character.digit(char, 10)
// does: Java parses UTF-16 chars, so digits outside the BMP (surrogate pairs) are not digits. Every Nd
// range of the Unicode tables is a run of whole 0-9 blocks starting at a zero, so the value is the
// offset from the range start modulo 10.
func decimalDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r > 0xFFFF || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

// canonicalKey returns a text equal for two partitions exactly when Java's Map.equals holds for the
// objects Jackson makes of them: key order does not matter; values compare by Java type and value, so
// 1 and 1.0 and "1" are three different partitions.
//
// Dedupe calls it for every entry of a request, so it builds the text in a stack buffer and
// allocates only the returned string for a typical partition.
func canonicalKey(m jsonvalue.Map) string {
	var buf [256]byte
	return string(appendCanonicalKey(buf[:0], m))
}

// appendCanonicalKey appends canonicalKey(m) to b.
func appendCanonicalKey(b []byte, m jsonvalue.Map) []byte {
	if m == nil {
		return append(b, 'n')
	}
	return appendCanonical(b, m)
}

func appendCanonical(b []byte, v any) []byte {
	// Every value starts with a type byte and strings carry their length, so the text is
	// unambiguous without quoting (strconv.AppendQuote was a quarter of Dedupe's time).
	switch t := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if t {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		return appendCanonicalString(append(b, 's'), t)
	case jsonvalue.Number:
		if n, ok := int64Of(t); ok {
			return strconv.AppendInt(append(b, 'i'), n, 10)
		}
		if n, ok := bigInt(t); ok && offsetstore.IsIntegral(t) {
			return n.Append(append(b, 'I'), 10)
		}
		// Double.equals compares the bit patterns of the doubles.
		return strconv.AppendUint(append(b, 'd'), math.Float64bits(offsetstore.Float64Of(t)), 16)
	case jsonvalue.Map:
		var kbuf [16]string
		keys := sortedKeys(kbuf[:0], t)
		b = append(b, '{')
		for _, k := range keys {
			val, _ := t.Get(k)
			b = appendCanonical(appendCanonicalString(b, k), val)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for _, e := range t {
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	}
	return b
}

// appendCanonicalString appends s's length and then its bytes.
func appendCanonicalString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// sortedKeys appends m's distinct keys to keys in sorted order (insertion sort: partitions have a
// handful of keys, and keys' stack array then spares an allocation).
func sortedKeys(keys []string, m jsonvalue.Map) []string {
	for _, f := range m {
		i := sort.SearchStrings(keys, f.Key)
		if i < len(keys) && keys[i] == f.Key {
			continue
		}
		keys = append(keys, "")
		copy(keys[i+1:], keys[i:])
		keys[i] = f.Key
	}
	return keys
}
