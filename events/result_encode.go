package events

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// A result is the one record the agent writes for every request, and encoding/json's
// reflection over Result was the largest single cost of writing it. marshalResult writes the
// same bytes by hand: the fields in Result's order with their omitempty rules, every string
// as encoding/json writes it (jsonvalue.AppendStringHTML), a float as encoding/json formats one. The
// rare nested values (a failure's cleanup, the previous offsets, a plan, the full counts) are
// still written by encoding/json. TestMarshalResultMatchesEncodingJSON holds the two together.

// marshalResult returns res encoded as json.Marshal(res) encodes it.
func marshalResult(res *Result) ([]byte, error) {
	size := 256 + len(res.Name) + len(res.Message) + len(res.InitialOffsetsResponse) + 64*len(res.Stages)
	for _, e := range res.Config {
		size += len(e.Key) + len(e.Value) + 6
	}
	b := make([]byte, 0, size)
	b = append(b, `{"request_id":`...)
	b = jsonvalue.AppendStringHTML(b, res.RequestID)
	b = append(b, `,"request_source":`...)
	b = jsonvalue.AppendStringHTML(b, res.RequestSource)
	b = append(b, `,"name":`...)
	b = jsonvalue.AppendStringHTML(b, res.Name)
	b = append(b, `,"stages":`...)
	if res.Stages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range res.Stages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"stage":`...)
			b = jsonvalue.AppendStringHTML(b, s.Stage)
			b = append(b, `,"outcome":`...)
			b = jsonvalue.AppendStringHTML(b, string(s.Outcome))
			b = append(b, `,"duration_seconds":`...)
			var ok bool
			if b, ok = appendJSONFloat(b, s.DurationSeconds); !ok {
				return json.Marshal(res) // encoding/json's error for a NaN or an infinity
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(res.Config) > 0 {
		cfg, err := res.Config.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, `,"config":`...)
		b = append(b, cfg...)
	}
	b = appendOptString(b, `,"type":`, res.Type)
	b = appendOptString(b, `,"initial_state":`, res.InitialState)
	b = appendOptString(b, `,"initial_offsets_response":`, res.InitialOffsetsResponse)
	b = appendOptString(b, `,"created":`, res.Created)
	b = appendOptString(b, `,"next":`, res.Next)
	if res.OffsetsWritten != nil {
		b = append(b, `,"offsets_written":`...)
		b = strconv.AppendInt(b, int64(*res.OffsetsWritten), 10)
	}
	if res.OffsetsWiped != nil {
		b = append(b, `,"offsets_wiped":`...)
		b = strconv.AppendInt(b, int64(*res.OffsetsWiped), 10)
	}
	b = appendOptString(b, `,"failed_step":`, res.FailedStep)
	if res.ErrorCode != 0 {
		b = append(b, `,"error_code":`...)
		b = strconv.AppendInt(b, int64(res.ErrorCode), 10)
	}
	b = appendOptString(b, `,"message":`, res.Message)
	var err error
	if res.Cleanup != nil {
		if b, err = appendMarshaled(b, `,"cleanup":`, res.Cleanup); err != nil {
			return nil, err
		}
	}
	if res.PreviousOffsets != nil {
		if b, err = appendMarshaled(b, `,"previous_offsets":`, res.PreviousOffsets); err != nil {
			return nil, err
		}
	}
	if res.Plan != nil {
		if b, err = appendMarshaled(b, `,"plan":`, res.Plan); err != nil {
			return nil, err
		}
	}
	if res.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	if res.FullCounts != nil {
		if b, err = appendMarshaled(b, `,"full_counts":`, res.FullCounts); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendOptString appends an omitempty string field: nothing when s is empty.
func appendOptString(b []byte, field, s string) []byte {
	if s == "" {
		return b
	}
	return jsonvalue.AppendStringHTML(append(b, field...), s)
}

// appendMarshaled appends a field whose value encoding/json writes.
func appendMarshaled(b []byte, field string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(append(b, field...), enc...), nil
}

// appendJSONFloat appends f as encoding/json writes a float64 (the shortest text that reads
// back as f, in exponent form below 1e-6 and from 1e21 on); false for a NaN or an infinity,
// which JSON cannot hold.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
