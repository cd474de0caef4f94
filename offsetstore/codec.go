package offsetstore

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// AppendJSON appends v as Jackson's default ObjectMapper (the one behind Connect's internal
// JsonConverter) writes it: compact, Map members in the Map's order, numbers through
// NormalizeNumber. v is nil, bool, string, Number, Map or []any; int, int64 and float64 are
// written as a Java long and double would be (NaN and infinities quoted, as Jackson does), and
// any other type through encoding/json.
//
// Callers validate numbers first: a Number that NormalizeNumber rejects is written as its
// literal text, which may not be what Connect would write. A nil Map is written as null.
//
// Strings follow Jackson's UTF8JsonGenerator, which differs from encoding/json: '"', '\\' and
// control characters below 0x20 are escaped (\b \t \n \f \r short, the rest as \u00XX with
// upper-case hex), '<', '>', '&', '/', DEL, U+2028 and U+2029 are not, other BMP characters are
// written as raw UTF-8, and characters outside the BMP are written as their escaped UTF-16
// surrogate pair (an emoji becomes \uD83D\uDE00): Jackson 2.x escapes each surrogate char it
// meets instead of combining the pair into four UTF-8 bytes.
func AppendJSON(dst []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		if t {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case string:
		return appendJSONString(dst, t)
	case jsonvalue.Number:
		n, err := NormalizeNumber(t)
		if err != nil {
			n = t
		}
		return append(dst, n...)
	case jsonvalue.Map:
		return appendMap(dst, t)
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case int:
		return strconv.AppendInt(dst, int64(t), 10)
	case int64:
		return strconv.AppendInt(dst, t, 10)
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			// Jackson quotes non-finite doubles (QUOTE_NON_NUMERIC_NUMBERS).
			return appendJSONString(dst, string(AppendJavaDouble(nil, t)))
		}
		return AppendJavaDouble(dst, t)
	case json.Number:
		return AppendJSON(dst, jsonvalue.Number(t))
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return append(dst, "null"...)
		}
		return append(dst, b...)
	}
}

// AppendKey appends the offsets-topic key ["<connector>",<partition>], the JsonConverter's
// encoding of the List [connector, partition]. The partition is written in its given order, so
// callers put it in Connect's order first (JavaHashMapOrder): tasks look offsets up by these
// exact bytes. A nil partition is written as null (a valid key that Connect never lists).
func AppendKey(dst []byte, connector string, partition jsonvalue.Map) []byte {
	dst = append(dst, '[')
	dst = appendJSONString(dst, connector)
	dst = append(dst, ',')
	// appendMap rather than AppendJSON: boxing the Map into an interface would allocate.
	dst = appendMap(dst, partition)
	return append(dst, ']')
}

// AppendMapJSON is AppendJSON for a map (null for nil), without boxing it into an interface,
// which would allocate.
func AppendMapJSON(dst []byte, m jsonvalue.Map) []byte { return appendMap(dst, m) }

func appendMap(dst []byte, m jsonvalue.Map) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	for i, f := range m {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Key)
		dst = append(dst, ':')
		dst = AppendJSON(dst, f.Value)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789ABCDEF"

// jsonShortEscape returns the letter of the two-character escape Jackson uses for control
// character c, or 0 when Jackson writes \u00XX.
func jsonShortEscape(c byte) byte {
	switch c {
	case '\b':
		return 'b'
	case '\t':
		return 't'
	case '\n':
		return 'n'
	case '\f':
		return 'f'
	case '\r':
		return 'r'
	}
	return 0
}

// AppendJSONString appends s as a JSON string the way Jackson writes it (AppendJSON of a
// string, without boxing it).
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r < 0x10000 && (r != utf8.RuneError || size != 1) {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				// Not UTF-8: Java could not hold this byte; its decoder reads U+FFFD.
				dst = append(dst, "\uFFFD"...)
			} else {
				r -= 0x10000
				dst = appendUnicodeEscape(dst, 0xD800+(r>>10))
				dst = appendUnicodeEscape(dst, 0xDC00+(r&0x3FF))
			}
			i += size
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case jsonShortEscape(c) != 0:
			dst = append(dst, '\\', jsonShortEscape(c))
		default:
			dst = appendUnicodeEscape(dst, rune(c))
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
