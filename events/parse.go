package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// ParseCreateRequest parses the KIP-995 POST /connectors body: an object with name, config,
// initial_state and initial_offsets. It walks the input once with jsonvalue.Scanner and
// decodes each partition and offset map straight into an jsonvalue.Map, so a request with
// 100,000 offsets is neither decoded twice nor held as map[string]any. Malformed input is read
// again with encoding/json's tokenizer, whose errors name the byte and the problem.
//
// It follows Connect's Jackson binding of CreateConnectorRequest where that matters:
//   - an unknown top-level field is an error (Connect's ObjectMapper fails on unknown
//     properties and CreateConnectorRequest does not ignore any);
//   - a repeated field takes its last value; a repeated config key keeps its first position;
//   - name and config values that are numbers or booleans become their JSON text, and a JSON
//     null name becomes "" (Connect does the same before validating);
//   - a config value that is null is kept as ConfigEntry{Null: true}.
//
// Unlike Connect, a missing name is an error here: a request without one is a malformed event,
// not a connector to validate. Invalid UTF-8 is an error because Go's decoder would silently
// replace it with U+FFFD and write a different name or offset than the one sent. A lone UTF-16
// surrogate escape is valid JSON, so it decodes (as U+FFFD) and is listed in LoneSurrogates for
// validation to refuse with Connect's status for bad input.
//
// Strings in the result may share data's memory, so data must not be modified afterwards.
func ParseCreateRequest(data []byte) (CreateRequest, error) {
	return parseCreateRequest(data, defaultTuning())
}

// parseCreateRequest is ParseCreateRequest with tune.
func parseCreateRequest(data []byte, tune scanTuning) (CreateRequest, error) {
	req, ok := parseFast(data, tune)
	if !ok {
		var err error
		if req, err = parseTokens(data); err != nil {
			return req, err
		}
	}
	if hasSurrogateEscape(data) {
		req.LoneSurrogates = loneSurrogates(data)
	}
	return req, nil
}

// parseCreateRequestDeferred is parseCreateRequest that leaves a large initial_offsets array
// unchecked (see DecodeRequestDeferred); deferred reports that it did. Whatever it cannot
// decode so, parseCreateRequest decodes: a request with surrogate escapes, and anything the
// fast decoding does not take, which includes every error.
func parseCreateRequestDeferred(data []byte, tune scanTuning) (req CreateRequest, deferred bool, err error) {
	if tune.rawOffsetsBytes > 0 && !hasSurrogateEscape(data) {
		lazy := tune
		lazy.deferOffsets = true
		// A request whose text ends up not left unchecked may still have had an array left
		// so, before a repeated initial_offsets replaced it: such a request is decoded again.
		if req, ok := parseFast(data, lazy); ok && (req.RawOffsets != nil || len(data) < tune.rawOffsetsBytes) {
			return req, req.RawOffsets != nil, nil
		}
	}
	req, err = parseCreateRequest(data, tune)
	return req, false, err
}

// parseTokens is ParseCreateRequest with encoding/json's tokenizer: slow, but the source of
// every error message. parseFast hands it every input it does not accept.
func parseTokens(data []byte) (CreateRequest, error) {
	var req CreateRequest
	if len(bytes.TrimSpace(data)) == 0 {
		return req, errors.New("request data is empty; expected a JSON object")
	}
	if !utf8.Valid(data) {
		return req, fmt.Errorf("request data is not valid UTF-8 (first bad byte at offset %d)", invalidUTF8At(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return req, jsonError("request data", err)
	}
	if tok != json.Delim('{') {
		return req, fmt.Errorf("request data must be a JSON object, got %s", tokenKind(tok))
	}
	hasName := false
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return req, jsonError("request data", err)
		}
		key, _ := kt.(string) // the decoder only yields string keys inside an object
		switch key {
		case "name":
			name, err := scalarText(dec, "name")
			if err != nil {
				return req, err
			}
			req.Name, hasName = name, true
		case "config":
			if req.Config, err = decodeConfig(dec); err != nil {
				return req, err
			}
		case "initial_state":
			if req.InitialState, err = decodeInitialState(dec); err != nil {
				return req, err
			}
		case "initial_offsets":
			if req.InitialOffsets, req.HasInitialOffsets, err = decodeInitialOffsets(dec); err != nil {
				return req, err
			}
		case "create":
			if req.Create, err = decodeCreate(dec); err != nil {
				return req, err
			}
		default:
			return req, fmt.Errorf("unknown field %q in request data; Connect accepts name, config, initial_state and initial_offsets (and offsetagent create)", key)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return req, jsonError("request data", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return req, jsonError("request data", err)
		}
		return req, errors.New("request data has more data after the JSON object")
	}
	if !hasName {
		return req, errors.New(`request data has no "name" field`)
	}
	return req, nil
}

// scalarText reads a string, number, boolean or null and returns its text the way Jackson
// binds it to a Java String: numbers keep their literal text, null becomes "".
func scalarText(dec *json.Decoder, field string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonError(field, err)
	}
	s, _, ok := scalarToken(tok)
	if !ok {
		return "", fmt.Errorf("%s must be a string, got %s", field, tokenKind(tok))
	}
	return s, nil
}

// scalarToken turns a scalar token into text; isNull reports JSON null; ok is false for the
// start of an object or array.
func scalarToken(tok json.Token) (text string, isNull, ok bool) {
	switch t := tok.(type) {
	case string:
		return t, false, true
	case json.Number:
		return string(t), false, true
	case bool:
		if t {
			return "true", false, true
		}
		return "false", false, true
	case nil:
		return "", true, true
	default:
		return "", false, false
	}
}

// decodeConfig reads the config object (or null, giving nil). An empty object gives a non-nil
// empty Config.
func decodeConfig(dec *json.Decoder) (Config, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError("config", err)
	}
	switch tok {
	case nil:
		return nil, nil
	case json.Delim('{'):
	default:
		return nil, fmt.Errorf("config must be an object of strings, got %s", tokenKind(tok))
	}
	cfg := Config{}
	index := map[string]int{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, jsonError("config", err)
		}
		key, _ := kt.(string)
		vt, err := dec.Token()
		if err != nil {
			return nil, jsonError(fmt.Sprintf("config value for %q", key), err)
		}
		text, isNull, ok := scalarToken(vt)
		if !ok {
			return nil, fmt.Errorf("config value for %q must be a string, got %s", key, tokenKind(vt))
		}
		e := ConfigEntry{Key: key, Value: text, Null: isNull}
		// Connect fills a LinkedHashMap: a repeated key keeps its first position and takes
		// the last value.
		if i, dup := index[key]; dup {
			cfg[i] = e
			continue
		}
		index[key] = len(cfg)
		cfg = append(cfg, e)
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, jsonError("config", err)
	}
	return cfg, nil
}

func decodeInitialState(dec *json.Decoder) (string, error) {
	return decodeOptionalString(dec, "initial_state", "RUNNING, PAUSED or STOPPED")
}

// decodeCreate reads offsetagent's "create" field: a string or null. Its value is judged by
// validate_config, which names the values it takes.
func decodeCreate(dec *json.Decoder) (string, error) {
	return decodeOptionalString(dec, "create", fmt.Sprintf("%q or %q", CreateConnector, CreateOffsetsOnly))
}

// decodeOptionalString reads field's value, a string or null (""); anything else is refused
// with the values the field takes.
func decodeOptionalString(dec *json.Decoder, field, values string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonError(field, err)
	}
	switch t := tok.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	default:
		return "", fmt.Errorf("%s must be a string (%s), got %s", field, values, tokenKind(tok))
	}
}

// decodeInitialOffsets reads initial_offsets: a bare array of entries (the KIP's example) or
// the PATCH /offsets body {"offsets": [...]} (the PR's wording). null is the same as absent.
func decodeInitialOffsets(dec *json.Decoder) ([]OffsetEntry, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, false, jsonError("initial_offsets", err)
	}
	switch tok {
	case nil:
		return nil, false, nil
	case json.Delim('['):
		entries, err := decodeOffsetEntries(dec, "initial_offsets")
		return entries, true, err
	case json.Delim('{'):
	default:
		return nil, false, fmt.Errorf(`initial_offsets must be an array or an object {"offsets": [...]}, got %s`, tokenKind(tok))
	}
	var entries []OffsetEntry
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false, jsonError("initial_offsets", err)
		}
		if key, _ := kt.(string); key != "offsets" {
			return nil, false, fmt.Errorf(`unknown field %q in initial_offsets; expected only "offsets"`, key)
		}
		vt, err := dec.Token()
		if err != nil {
			return nil, false, jsonError("initial_offsets.offsets", err)
		}
		switch vt {
		case nil:
			entries = nil
		case json.Delim('['):
			if entries, err = decodeOffsetEntries(dec, "initial_offsets.offsets"); err != nil {
				return nil, false, err
			}
		default:
			return nil, false, fmt.Errorf("initial_offsets.offsets must be an array, got %s", tokenKind(vt))
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, false, jsonError("initial_offsets", err)
	}
	return entries, true, nil
}

// decodeOffsetEntries reads the entries of an array whose '[' has been consumed. An empty
// array gives a non-nil empty slice.
func decodeOffsetEntries(dec *json.Decoder, path string) ([]OffsetEntry, error) {
	entries := []OffsetEntry{}
	for i := 0; dec.More(); i++ {
		e, err := decodeOffsetEntry(dec, entryPath{path, i})
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, jsonError(path, err)
	}
	return entries, nil
}

// entryPath names an entry in error messages; it is formatted only when there is an error,
// to spare a 100,000-entry request as many string allocations.
type entryPath struct {
	array string
	index int
}

func (p entryPath) String() string { return fmt.Sprintf("%s[%d]", p.array, p.index) }

func decodeOffsetEntry(dec *json.Decoder, path entryPath) (OffsetEntry, error) {
	var e OffsetEntry
	tok, err := dec.Token()
	if err != nil {
		return e, jsonError(path.String(), err)
	}
	if tok != json.Delim('{') {
		return e, fmt.Errorf(`%s must be an object {"partition": {...}, "offset": {...}}, got %s`, path, tokenKind(tok))
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return e, jsonError(path.String(), err)
		}
		key, _ := kt.(string)
		if key != "partition" && key != "offset" {
			// Connect's ConnectorOffset has exactly these two properties and Jackson
			// fails on any other.
			return e, fmt.Errorf(`unknown field %q in %s; expected "partition" and "offset"`, key, path)
		}
		m, err := decodeNullableMap(dec)
		if err != nil {
			return e, fmt.Errorf("%s.%s %w", path, key, err)
		}
		if key == "partition" {
			e.Partition = m
		} else {
			e.Offset = m
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return e, jsonError(path.String(), err)
	}
	return e, nil
}

// decodeNullableMap reads an object or null. Its errors read well after the value's path.
func decodeNullableMap(dec *json.Decoder) (jsonvalue.Map, error) {
	v, err := jsonvalue.DecodeValue(dec)
	if err != nil {
		return nil, jsonError("", err)
	}
	switch m := v.(type) {
	case nil:
		return nil, nil
	case jsonvalue.Map:
		return m, nil
	default:
		return nil, fmt.Errorf("must be an object or null, got %s", jsonvalue.KindOf(v))
	}
}

// tokenKind names the JSON kind a token starts.
func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	case json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", tok)
	}
}

// jsonError words a decoder error for the part of the request being read; with what empty it
// words it to follow a path ("initial_offsets[3].offset is not valid JSON...").
func jsonError(what string, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Not the decoder's own text: it quotes the offending byte, which may belong to a
		// password.
		return fmt.Errorf("%sis not valid JSON at byte %d: %s", subject(what), syn.Offset, syntaxText(syn))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%sis not valid JSON: it ends early", subject(what))
	case what == "":
		return fmt.Errorf("is not valid: %w", err)
	default:
		return fmt.Errorf("read %s: %w", what, err)
	}
}

func subject(what string) string {
	if what == "" {
		return ""
	}
	return what + " "
}

// invalidUTF8At returns the offset of the first byte that is not valid UTF-8, or -1.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}
