package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// hasSurrogateEscape reports whether data holds a \uD800-\uDFFF escape at all: the cheap test
// that spares well-formed requests the walk of loneSurrogates.
func hasSurrogateEscape(data []byte) bool {
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i+1 < len(data) && (data[i] == 'd' || data[i] == 'D') && isSurrogateSecond(data[i+1]) {
			return true
		}
	}
}

func isSurrogateSecond(c byte) bool {
	return c >= '8' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// loneSurrogates returns the fields of a create request body (already parsed, so valid JSON)
// whose strings hold a lone UTF-16 surrogate escape: a high surrogate not followed by a low
// one, or a low one on its own. JSON allows them; Go's decoder replaces each with U+FFFD, so
// the stored bytes would differ from what was asked, and Java would store a string no UTF-8
// encoder can write. Fields are named as validation reports them: "name", `config key "k"`,
// `config value of "k"`, "initial_state", "initial_offsets[3].partition.filename".
func loneSurrogates(data []byte) []string {
	w := &surrogateWalker{data: data}
	w.walk("", 0)
	return w.found
}

type surrogateWalker struct {
	data  []byte
	pos   int
	found []string
}

func (w *surrogateWalker) skipWS() {
	w.pos = jsonvalue.SkipSpace(w.data, w.pos)
}

// walk reads the value at pos; path names it (the top-level object when depth is 0).
func (w *surrogateWalker) walk(path string, depth int) {
	w.skipWS()
	if w.pos >= len(w.data) {
		return
	}
	switch w.data[w.pos] {
	case '"':
		if w.str() && path != "" {
			w.found = append(w.found, path)
		}
	case '{':
		w.pos++
		for {
			w.skipWS()
			if w.pos >= len(w.data) || w.data[w.pos] == '}' {
				w.pos++
				return
			}
			if w.data[w.pos] == ',' {
				w.pos++
				continue
			}
			start := w.pos
			lone := w.str()
			key := decodeKey(w.data[start:w.pos])
			w.skipWS()
			w.pos++ // ':'
			keyPath, valuePath := memberPaths(path, key, depth)
			if lone && keyPath != "" {
				w.found = append(w.found, keyPath)
			}
			w.walk(valuePath, depth+1)
		}
	case '[':
		w.pos++
		for i := 0; ; {
			w.skipWS()
			if w.pos >= len(w.data) || w.data[w.pos] == ']' {
				w.pos++
				return
			}
			if w.data[w.pos] == ',' {
				w.pos++
				i++
				continue
			}
			elem := ""
			if path != "" {
				elem = path + "[" + strconv.Itoa(i) + "]"
			}
			w.walk(elem, depth+1)
		}
	default:
		end, _ := jsonvalue.SkipValue(w.data, w.pos)
		w.pos = end
	}
}

// memberPaths names a member's key and value: the top-level fields by name, config entries by
// their key, everything under initial_offsets by its JSON path.
func memberPaths(parent, key string, depth int) (keyPath, valuePath string) {
	switch {
	case depth == 0:
		switch key {
		case "name", "initial_state":
			return "", key
		case "config", "initial_offsets":
			return "", key
		}
		return "", ""
	case parent == "config":
		return fmt.Sprintf("config key %q", key), fmt.Sprintf("config value of %q", key)
	case parent == "":
		return "", ""
	}
	return fmt.Sprintf("%s key %q", parent, key), parent + "." + key
}

// str skips the string at pos and reports whether it holds a lone surrogate escape.
func (w *surrogateWalker) str() (lone bool) {
	d := w.data
	i := w.pos + 1
	pendingHigh := false
	for i < len(d) && d[i] != '"' {
		if d[i] != '\\' {
			if pendingHigh {
				lone = true
				pendingHigh = false
			}
			i++
			continue
		}
		if i+1 < len(d) && d[i+1] == 'u' && i+6 <= len(d) {
			v, err := strconv.ParseUint(string(d[i+2:i+6]), 16, 16)
			if err == nil {
				switch {
				case v >= 0xD800 && v <= 0xDBFF:
					if pendingHigh {
						lone = true
					}
					pendingHigh = true
				case v >= 0xDC00 && v <= 0xDFFF:
					if !pendingHigh {
						lone = true
					}
					pendingHigh = false
				default:
					if pendingHigh {
						lone = true
					}
					pendingHigh = false
				}
			}
			i += 6
			continue
		}
		if pendingHigh {
			lone = true
			pendingHigh = false
		}
		i += 2
	}
	if pendingHigh {
		lone = true
	}
	w.pos = i + 1
	return lone
}

// decodeKey decodes a JSON string as Go does (a lone surrogate becomes U+FFFD).
func decodeKey(quoted []byte) string {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return string(quoted)
	}
	return s
}
