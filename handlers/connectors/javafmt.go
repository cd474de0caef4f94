package connectors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/offsetagent/offsetagent/offsetstore"
)

// This file renders decoded JSON values the way Java prints the objects Jackson and Connect's
// JsonConverter make of them, because Connect's messages embed them with String.valueOf and
// Map.toString: integers as Integer/Long/BigInteger, other numbers as Double, objects as maps.

// isIntegral reports whether a JSON number literal has neither fraction nor exponent: Jackson reads
// only those as integers, "1.0" and "1e2" are doubles.
func isIntegral(n offsetstore.Number) bool {
	for i := 0; i < len(n); i++ {
		if c := n[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// bigInt returns an integral literal's value.
func bigInt(n offsetstore.Number) (*big.Int, bool) {
	return new(big.Int).SetString(string(n), 10)
}

// int64Of returns an integral literal's value when it fits a Java long.
func int64Of(n offsetstore.Number) (int64, bool) {
	if !isIntegral(n) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

// float64Of returns the double Jackson parses a literal into; out-of-range literals become
// infinities, as Double.parseDouble makes them.
func float64Of(n offsetstore.Number) float64 {
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

// javaDouble formats f as Java's Double.toString: plain decimal with at least one fractional digit for
// 1e-3 <= |f| < 1e7, else d.dddE<exp>. Digits are the shortest that round-trip, as JDK 19+ prints them;
// older JDKs print a longer form for a few values (JDK 17: 2e23 -> 1.9999999999999998E23) and
// Double.MIN_VALUE prints as 4.9E-324 everywhere, here as 5.0E-324. Only messages depend on it.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x
	mant, expText, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if f >= 1e-3 && f < 1e7 {
		var intPart, frac string
		if exp >= 0 {
			for len(digits) < exp+1 {
				digits += "0"
			}
			intPart, frac = digits[:exp+1], digits[exp+1:]
		} else {
			intPart, frac = "0", strings.Repeat("0", -exp-1)+digits
		}
		if frac == "" {
			frac = "0"
		}
		return sign + intPart + "." + frac
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
}

// javaString prints v as String.valueOf prints the Java object Connect holds for it. hashOrder
// selects how maps print: false for the LinkedHashMap Jackson builds from a REST body (input order),
// true for the HashMap Connect's JsonConverter builds when it normalises offsets (Java HashMap order).
func javaString(v any, hashOrder bool) string {
	var b strings.Builder
	writeJava(&b, v, hashOrder)
	return b.String()
}

func writeJava(b *strings.Builder, v any, hashOrder bool) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case string:
		b.WriteString(t)
	case offsetstore.Number:
		if isIntegral(t) {
			if n, ok := bigInt(t); ok {
				b.WriteString(n.String())
				return
			}
		}
		b.WriteString(javaDouble(float64Of(t)))
	case offsetstore.Map:
		if hashOrder {
			t = offsetstore.JavaHashMapOrder(t)
		}
		b.WriteByte('{')
		for i, f := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Key)
			b.WriteByte('=')
			writeJava(b, f.Value, hashOrder)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJava(b, e, hashOrder)
		}
		b.WriteByte(']')
	default:
		b.WriteString(offsetstore.KindOf(v))
	}
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
func canonicalKey(m offsetstore.Map) string {
	var buf [256]byte
	return string(appendCanonicalKey(buf[:0], m))
}

// appendCanonicalKey appends canonicalKey(m) to b.
func appendCanonicalKey(b []byte, m offsetstore.Map) []byte {
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
	case offsetstore.Number:
		if n, ok := int64Of(t); ok {
			return strconv.AppendInt(append(b, 'i'), n, 10)
		}
		if n, ok := bigInt(t); ok && isIntegral(t) {
			return n.Append(append(b, 'I'), 10)
		}
		// Double.equals compares the bit patterns of the doubles.
		return strconv.AppendUint(append(b, 'd'), math.Float64bits(float64Of(t)), 16)
	case offsetstore.Map:
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
func sortedKeys(keys []string, m offsetstore.Map) []string {
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

// jsonText renders a decoded value as compact JSON in its own key order, for our own messages.
func jsonText(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case string:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(t)       // a string always encodes
		b.Truncate(b.Len() - 1) // Encode appends a newline
	case offsetstore.Number:
		b.WriteString(string(t))
	case offsetstore.Map:
		if t == nil {
			b.WriteString("null")
			return
		}
		b.WriteByte('{')
		for i, f := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, f.Key)
			b.WriteByte(':')
			writeJSON(b, f.Value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	}
}
