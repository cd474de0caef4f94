package connectors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// entries decodes a KIP-875 offsets array as the request decoder does: a null or missing partition
// or offset becomes a nil Map.
func entries(t *testing.T, js string) []events.OffsetEntry {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	v, err := jsonvalue.DecodeValue(dec)
	require.NoError(t, err)
	var out []events.OffsetEntry
	for _, el := range v.([]any) {
		m := el.(jsonvalue.Map)
		var e events.OffsetEntry
		if p, _ := m.Get("partition"); p != nil {
			e.Partition = p.(jsonvalue.Map)
		}
		if o, _ := m.Get("offset"); o != nil {
			e.Offset = o.(jsonvalue.Map)
		}
		out = append(out, e)
	}
	return out
}

// validationCase is one row of a class's table test; an empty msg means valid.
type validationCase struct {
	name    string
	config  map[string]string
	offsets string
	code    int
	msg     string
}

// requireValidation runs cases against class's Validate, after the generic source checks as the
// caller runs them.
func requireValidation(t *testing.T, class string, cases []validationCase) {
	t.Helper()
	c, ok := Builtin().Lookup(class)
	require.True(t, ok, class)
	require.NotNil(t, c.Validate)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			offs := entries(t, tc.offsets)
			require.NoError(t, ValidateSource(offs))
			err := c.Validate(tc.config, Dedupe(offs))
			requireErr(t, err, tc.code, tc.msg)
		})
	}
}

// requireErr asserts err is nil (msg "") or an *Error with code and msg.
func requireErr(t *testing.T, err error, code int, msg string) {
	t.Helper()
	if msg == "" {
		require.NoError(t, err)
		return
	}
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, msg, e.Message)
	require.Equal(t, code, e.Code)
}
