package offsetstore

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// errIntegerRange is returned for an integral literal outside int64: Connect would read it as a
// BigInteger and write its low 64 bits (9223372036854775808 becomes -9223372036854775808), so
// the written offset would silently differ from the requested one.
var errIntegerRange = errors.New("integer outside the signed 64-bit range Connect stores as Long")

// errDoubleRange is returned for a literal beyond float64: Connect would write the string
// "Infinity" instead of a number.
var errDoubleRange = errors.New("number outside the range of a Java double")

// NormalizeNumber returns n as Connect's JsonConverter round trip writes it. Jackson reads a
// literal without '.', 'e' or 'E' as an integer (Connect keeps it as Long) and writes its
// decimal text ("-0" becomes "0"); any other literal becomes a Java double, read through a
// BigDecimal as Connect's JsonDeserializer does ("-0.0" becomes "0.0"), written with
// Double.toString ("30.0", "1e2" -> "100.0", "1e10" -> "1.0E10", "0.0001" -> "1.0E-4").
// Leading zeros are dropped ("007" -> "7"), as Connect's reader allows them. An integral
// literal outside int64, a literal beyond float64 and text that is not a number are errors:
// Connect would write something other than what was asked for.
//
// The double form follows the JDK 19+ Double.toString (shortest digits that round-trip). The
// reference oracle runs JDK 17, whose older algorithm sometimes prints a longer neighbour
// (1e23 -> "9.999999999999999E22" on 17, "1.0E23" on 19+); see javadouble_test.go.
func NormalizeNumber(n jsonvalue.Number) (jsonvalue.Number, error) {
	s := string(n)
	integral, ok := scanJSONNumber(s)
	if !ok {
		return "", fmt.Errorf("normalize number %q: not a JSON number", s)
	}
	if integral {
		digits := strings.TrimPrefix(s, "-")
		if len(digits) < 19 && (digits[0] != '0' || digits == "0") && s != "-0" {
			// Up to 18 digits always fits int64; without a leading zero and '+' the
			// literal is already canonical: skip the parse and the allocation.
			return n, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("normalize number %q: %w", s, errIntegerRange)
		}
		return jsonvalue.Number(strconv.FormatInt(v, 10)), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return "", fmt.Errorf("normalize number %q: %w", s, errDoubleRange)
	}
	if f == 0 {
		// Connect's REST layer reads the literal as a double, and its JsonDeserializer reads the
		// double's text back as a BigDecimal (USE_BIG_DECIMAL_FOR_FLOATS), which has no negative
		// zero: "-0.0", and "-1e-400" (a double -0.0), come back as 0.0.
		f = 0
	}
	return jsonvalue.Number(AppendJavaDouble(nil, f)), nil
}

// scanJSONNumber reports whether s is exactly one JSON number and whether it is integral in
// Jackson's sense (no fraction and no exponent). Leading zeros are allowed because Connect's
// reader enables ALLOW_LEADING_ZEROS_FOR_NUMBERS ("007" reads as 7).
func scanJSONNumber(s string) (integral, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return false, false
	}
	integral = true
	if i < len(s) && s[i] == '.' {
		integral = false
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		integral = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false, false
		}
	}
	return integral, i == len(s)
}

// AppendJavaDouble appends f as Java's Double.toString (JDK 19+, Raffaello Giulietti's
// algorithm) prints it: the shortest decimal that rounds back to f, except that a one-digit
// result is replaced by the closest two-digit one when that also rounds back (so
// Double.MIN_VALUE is "4.9E-324", not "5.0E-324"). Plain notation for 1e-3 <= |f| < 1e7 with at
// least one fractional digit ("100.0", "0.001"), otherwise "d.dddE<exp>" ("1.0E10",
// "1.234E-5"; no '+').
func AppendJavaDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	if math.Signbit(f) {
		dst = append(dst, '-')
		f = -f
	}
	if f == 0 {
		return append(dst, "0.0"...)
	}
	var buf [32]byte
	digits, exp := shortestDigits(buf[:0], f, -1)
	if len(digits) == 1 {
		var buf2 [32]byte
		two, exp2 := shortestDigits(buf2[:0], f, 1)
		if two[1] != '0' {
			if back, err := strconv.ParseFloat(string(two[:1])+"."+string(two[1:])+"e"+strconv.Itoa(exp2), 64); err == nil && back == f {
				digits = append(digits[:0], two...)
				exp = exp2
			}
		}
	}
	// digits d1 d2 ... dn stand for d1.d2...dn x 10^exp.
	if exp >= -3 && exp < 7 {
		if exp < 0 {
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -exp-1)...)
			return append(dst, digits...)
		}
		if len(digits) <= exp+1 {
			dst = append(dst, digits...)
			dst = append(dst, strings.Repeat("0", exp+1-len(digits))...)
			return append(dst, ".0"...)
		}
		dst = append(dst, digits[:exp+1]...)
		dst = append(dst, '.')
		return append(dst, digits[exp+1:]...)
	}
	dst = append(dst, digits[0], '.')
	if len(digits) == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// shortestDigits appends the significant digits of positive f in 'e' format with prec digits
// after the first (-1: shortest round-trip) and returns them with the decimal exponent.
func shortestDigits(dst []byte, f float64, prec int) ([]byte, int) {
	var buf [40]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', prec, 64)
	mark := 0
	for mark < len(e) && e[mark] != 'e' {
		mark++
	}
	for _, c := range e[:mark] {
		if c != '.' {
			dst = append(dst, c)
		}
	}
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	return dst, exp
}
