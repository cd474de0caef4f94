package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/race"
)

// outcomeOf runs a request record as the agent does with DecodeRequest (deferred false) or
// with DecodeRequestDeferred and ReadAhead (deferred true), on a store of its own. read
// reports whether ReadAhead kept records.
func outcomeOf(t *testing.T, msg []byte, deferred bool) (out *Outcome, derr error, store *fakeStore, read bool) {
	t.Helper()
	m, err := events.RequestMessage("requests", msg, events.RequestOptions{ID: "id-1", Source: "/test"})
	require.NoError(t, err)
	store = newFakeStore()
	c := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}})
	var req *events.Request
	if deferred {
		if req, derr = events.DecodeRequestDeferred(&m, 0); derr == nil {
			_, derr = c.ReadAhead(context.Background(), req)
			_, read = c.ahead.Load(req)
		}
	} else {
		req, derr = events.DecodeRequest(&m, 0)
	}
	if derr != nil {
		return nil, derr, store, false
	}
	return c.Create(context.Background(), req), nil, store, read
}

// requireSameOutcome holds the deferred decoding and ReadAhead to DecodeRequest and Create on
// one request body: the same decoding error, or the same result and the same records written.
func requireSameOutcome(t *testing.T, body []byte) (read bool) {
	t.Helper()
	want, wantErr, wantStore, _ := outcomeOf(t, body, false)
	got, err, store, read := outcomeOf(t, body, true)
	if wantErr != nil {
		var w, g *events.DecodeError
		require.ErrorAs(t, wantErr, &w)
		require.ErrorAs(t, err, &g, "DecodeRequest refuses the record with %q", wantErr)
		require.Equal(t, [4]string{string(w.Reason), w.Message, w.ID, w.Source}, [4]string{string(g.Reason), g.Message, g.ID, g.Source})
		return false
	}
	require.NoError(t, err)
	for _, o := range []*Outcome{want, got} {
		for i := range o.Result.Stages {
			o.Result.Stages[i].DurationSeconds = 0
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, wantStore.liveOffsets(), store.liveOffsets())
	require.Equal(t, wantStore.configKeys(), store.configKeys())
	return read
}

// requestWithConfig is f's request of n entries with f's config (and its class).
func requestWithConfig(t *testing.T, f fastFamily, r *rand.Rand, n int, mutate bool) []byte {
	t.Helper()
	props := familyProps(f)
	delete(props, "name")
	cfg, err := json.Marshal(props)
	require.NoError(t, err)
	body := f.request(r, n, mutate)
	return bytes.Replace(body, []byte(`"config":{}`), append([]byte(`"config":`), cfg...), 1)
}

// A request of every family, valid or with awkward values, and broken in every way the
// decoder refuses, comes to the same result (or the same decoding error) through the read
// ahead as through DecodeRequest and validate_offsets: the single pass runs before any stage
// and finds what the decoder's check found.
func TestReadAheadMatchesDecodeRequest(t *testing.T) {
	const n = 1500 // over events.RawOffsetsBytes for every family
	breaks := []struct {
		name  string
		apply func(body []byte) []byte
	}{
		{name: "as is", apply: func(b []byte) []byte { return b }},
		{name: "truncated", apply: func(b []byte) []byte { return b[:len(b)*2/3] }},
		{name: "trailing comma", apply: func(b []byte) []byte { return append(bytes.TrimSuffix(b, []byte("]}")), ",]}"...) }},
		{name: "bad escape", apply: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"partition":{"`), []byte(`"partition":{"\q`), 1)
		}},
		{name: "entry cut short", apply: func(b []byte) []byte { return bytes.Replace(b, []byte(`}},{`), []byte(`},{`), 1) }},
		{name: "leading zero", apply: func(b []byte) []byte { return bytes.Replace(b, []byte(`":1`), []byte(`":01`), 1) }},
		{name: "control character", apply: func(b []byte) []byte { return bytes.Replace(b, []byte(`":"`), []byte("\":\"\x01"), 1) }},
		{name: "duplicate keys", apply: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"partition":{`), []byte(`{"partition":{"dup":1,"dup":"2",`), 1)
		}},
		{name: "huge numbers", apply: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`]}`), []byte(`,{"partition":{"p":123456789012345678901234567890},"offset":{"o":1e400}}]}`), 1)
		}},
		{name: "bracket in a later config value", apply: func(b []byte) []byte {
			return append(bytes.TrimSuffix(b, []byte("}")), `,"initial_state":"PAUSED","config":{"connector.class":"x]"}}`...)
		}},
		{name: "name and config name differ", apply: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"config":{`), []byte(`"config":{"name":"other",`), 1)
		}},
	}
	reads, c := 0, 0
	for i, f := range fastFamilies() {
		for _, mutate := range []bool{false, true} {
			body := requestWithConfig(t, f, rand.New(rand.NewPCG(uint64(i), 3)), n, mutate)
			require.Greater(t, len(body), events.RawOffsetsBytes)
			for _, br := range breaks {
				// Under the race detector: each family as it is, and every 9th broken case.
				if c++; !race.Sample(c, 9) && br.name != "as is" {
					continue
				}
				name := f.name + "/" + br.name
				if mutate {
					name += "/awkward"
				}
				t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
					if requireSameOutcome(t, br.apply(bytes.Clone(body))) {
						reads++
					}
				})
			}
		}
	}
	minReads := 5
	if race.Enabled {
		minReads = 3 // of the sample
	}
	require.Greater(t, reads, minReads, "the single pass read ahead for valid requests")
}

// The bulk requests of every family are read ahead: their records come from the single pass.
func TestReadAheadReadsBulkRequests(t *testing.T) {
	for _, family := range []string{"mm2", "filestream", "debezium"} {
		t.Run(family, func(t *testing.T) {
			_, _, body := benchBody(family, 2000)
			require.True(t, requireSameOutcome(t, body), "read ahead")
		})
	}
}
