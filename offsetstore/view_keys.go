package offsetstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unsafe"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// keyConnector returns the connector name of an offsets key, [name, partition], following
// OffsetUtils.processPartitionKey: a 2-element JSON array whose first element is a string and
// whose second is an object or null. A load calls it for every new key: keys in Connect's own
// layout with a flat partition take the fast path (connectKey); any other goes through
// scanKeyConnector. The returned string may alias key.
func keyConnector(key []byte) (string, bool) {
	if name, ok := connectKey(key); ok {
		return name, true
	}
	return scanKeyConnector(key)
}

// connectKey finds the name of a key as Connect's JsonConverter writes it, with no space and
// a partition object that holds no nested object or array and no escape (every partition of
// the common connectors), reading 8 bytes at a time. When ok is false the key may still be
// one: scanKeyConnector decides. What connectKey accepts, scanKeyConnector accepts with the
// same name (FuzzKeyConnector): within such an object, the strings are the bytes between
// pairs of quotes, so the object ends at the last brace when its quotes are even.
func connectKey(key []byte) (name string, ok bool) {
	n := len(key)
	// At least 10 bytes: the last word read below ends at the object's closing brace, n-2.
	if n < 10 || key[0] != '[' || key[1] != '"' || key[n-1] != ']' {
		return "", false
	}
	// The name: up to the first quote; a backslash first is an escape, left to the scan.
	q := 2
	for ; q+8 <= n; q += 8 {
		w := binary.LittleEndian.Uint64(key[q:])
		if m := bytesEqual(w, swarQuote) | bytesEqual(w, swarSlash); m != 0 {
			q += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for q < n && key[q] != '"' && key[q] != '\\' {
		q++
	}
	if q+3 >= n || key[q] != '"' || key[q+1] != ',' {
		return "", false
	}
	inner := key[2:q]
	name = unsafe.String(unsafe.SliceData(inner), len(inner))
	switch {
	case key[q+2] == 'n':
		return name, n == q+7 && string(key[q+2:q+6]) == "null"
	case key[q+2] != '{' || key[n-2] != '}':
		return "", false
	}
	// The object's members, between its braces: no brace, bracket or backslash, even quotes.
	start, end := q+3, n-2
	quotes, other := uint64(0), uint64(0) // the quotes' flags xored: their count's parity
	i := start
	for ; i+8 <= end; i += 8 {
		w := binary.LittleEndian.Uint64(key[i:])
		quotes ^= bytesEqual(w, swarQuote)
		other |= specialBytes(w)
	}
	if rest := end - i; rest > 0 {
		// The last bytes, read as the word that ends with them (end is at least 8),
		// shifted so that only they are left (the zero bytes shifted in match nothing).
		w := binary.LittleEndian.Uint64(key[end-8:]) >> (8 * (8 - rest))
		quotes ^= bytesEqual(w, swarQuote)
		other |= specialBytes(w)
	}
	return name, other == 0 && bits.OnesCount64(quotes)%2 == 0
}

// The fast path looks at 8 bytes at a time. bytesEqual(w, c) sets the high bit of each byte of
// w equal to the byte c repeats, exactly (no carry crosses bytes, so the flags can be counted).
const (
	swarLow7  = 0x7f7f7f7f7f7f7f7f
	swarHighs = 0x8080808080808080
	swarOnes  = 0x0101010101010101
	swarQuote = '"' * swarOnes
	swarSlash = '\\' * swarOnes
)

func bytesEqual(w, c uint64) uint64 {
	x := w ^ c
	return ^((x&swarLow7 + swarLow7) | x) & swarHighs
}

// specialBytes flags the bytes of w that are '{', '}', '[', ']', '\\' or '|': the ASCII bytes
// that are 0x7b to 0x7d once their 0x20 bit is set. ('|' is there only because it is 0x7c:
// such keys take the byte scan.)
func specialBytes(w uint64) uint64 {
	l := w | 0x20*swarOnes
	low := l & swarLow7
	atLeast7b := low + (0x80-0x7b)*swarOnes // no carry crosses bytes: 0x7f + 5 < 0x100
	atLeast7e := low + (0x80-0x7e)*swarOnes
	return atLeast7b &^ atLeast7e &^ l & swarHighs
}

// scanKeyConnector is keyConnector for any key: it scans the bytes one at a time without
// decoding them, falling back to encoding/json only for a name with escapes.
func scanKeyConnector(key []byte) (string, bool) {
	i := jsonvalue.SkipSpace(key, 0)
	if i >= len(key) || key[i] != '[' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	if i >= len(key) || key[i] != '"' {
		return "", false
	}
	end, escaped := scanString(key, i)
	if end < 0 {
		return "", false
	}
	raw := key[i : end+1]
	i = jsonvalue.SkipSpace(key, end+1)
	if i >= len(key) || key[i] != ',' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	switch {
	case i < len(key) && key[i] == '{':
		// The partition's members are not validated: Connect's readers would reject a
		// malformed key anyway, and the agent never writes one.
		end, ok := jsonvalue.SkipValue(key, i)
		if !ok {
			return "", false
		}
		i = end
	case bytes.HasPrefix(key[i:], []byte("null")):
		i += len("null")
	default:
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i)
	if i >= len(key) || key[i] != ']' || jsonvalue.SkipSpace(key, i+1) != len(key) {
		return "", false
	}
	if !escaped {
		inner := raw[1 : len(raw)-1]
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", false
	}
	return name, true
}

// scanString returns the index of the closing quote of the JSON string opening at b[i], or -1,
// and whether the string has escapes.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}
