package offsetstore

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// This file prints decoded JSON values the way Java prints the objects Jackson and Connect's
// JsonConverter make of them (String.valueOf, AbstractMap.toString), because Connect's error
// messages embed them: integers as Integer/Long/BigInteger, other numbers as Double, objects as
// maps in insertion order (LinkedHashMap) or in Java HashMap order.

// JavaString prints v as String.valueOf prints the Java object Connect holds for it. hashOrder
// selects how maps print: false for the LinkedHashMap Jackson builds from a REST body (input order),
// true for the HashMap Connect's JsonConverter builds when it normalises offsets (Java HashMap order).
func JavaString(v any, hashOrder bool) string {
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
	case jsonvalue.Number:
		if IsIntegral(t) {
			if n, ok := bigInt(t); ok {
				b.WriteString(n.String())
				return
			}
		}
		b.Write(AppendJavaDouble(nil, Float64Of(t)))
	case jsonvalue.Map:
		if hashOrder {
			t = JavaHashMapOrder(t)
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
		b.WriteString(jsonvalue.KindOf(v))
	}
}

// IsIntegral reports whether a JSON number literal has neither fraction nor exponent: Jackson
// reads only those as integers, "1.0" and "1e2" are doubles.
func IsIntegral(n jsonvalue.Number) bool {
	for i := 0; i < len(n); i++ {
		if c := n[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

func bigInt(n jsonvalue.Number) (*big.Int, bool) {
	return new(big.Int).SetString(string(n), 10)
}

// Float64Of returns the double Jackson parses a literal into; out-of-range literals become
// infinities, as Double.parseDouble makes them.
func Float64Of(n jsonvalue.Number) float64 {
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}
