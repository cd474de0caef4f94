package events

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRecord is a Kafka record as stored in testdata. The value is a string, not embedded
// JSON, so that its bytes are compared exactly.
type goldenRecord struct {
	Topic   string         `json:"topic"`
	Key     *string        `json:"key"`
	Headers []goldenHeader `json:"headers"`
	Value   string         `json:"value"`
}

type goldenHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func toGolden(m kafka.Message) goldenRecord {
	g := goldenRecord{Topic: m.Topic, Value: string(m.Value), Headers: []goldenHeader{}}
	if m.Key != nil {
		k := string(m.Key)
		g.Key = &k
	}
	for _, h := range m.Headers {
		g.Headers = append(g.Headers, goldenHeader{Key: h.Key, Value: string(h.Value)})
	}
	return g
}

func (g goldenRecord) message() kafka.Message {
	m := kafka.Message{Topic: g.Topic, Value: []byte(g.Value)}
	if g.Key != nil {
		m.Key = []byte(*g.Key)
	}
	for _, h := range g.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return m
}

// checkGolden compares m with testdata/name, or rewrites the file with -update, and returns
// the record read back from the file.
func checkGolden(t *testing.T, name string, m kafka.Message) kafka.Message {
	t.Helper()
	path := filepath.Join("testdata", name)
	got, err := json.MarshalIndent(toGolden(m), "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "golden %s differs; run go test ./events/ -update to rewrite it", path)
	var g goldenRecord
	require.NoError(t, json.Unmarshal(want, &g))
	return g.message()
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// record builds a raw record from alternating header names and values.
func record(value string, headers ...string) *kafka.Message {
	m := &kafka.Message{Topic: "requests", Value: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		m.Headers = append(m.Headers, kafka.Header{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return m
}

// binaryHeaders are the headers of a valid binary-mode request, with overrides: a name
// given again replaces the value, and a value of "-" drops the header.
func binaryHeaders(overrides ...string) []string {
	base := []string{
		"ce_specversion", "1.0",
		"ce_id", "req-1",
		"ce_source", "/test",
		"ce_type", TypeCreateRequest,
		"content-type", "application/json",
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		found := false
		for j := 0; j+1 < len(base); j += 2 {
			if strings.EqualFold(base[j], overrides[i]) {
				base[j+1], found = overrides[i+1], true
			}
		}
		if !found {
			base = append(base, overrides[i], overrides[i+1])
		}
	}
	out := base[:0:0]
	for i := 0; i+1 < len(base); i += 2 {
		if base[i+1] != "-" {
			out = append(out, base[i], base[i+1])
		}
	}
	return out
}
