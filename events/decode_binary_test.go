package events

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/race"
)

const binaryBody = `{"name":"c","config":{"a":"1"},"initial_offsets":[{"partition":{"p":0},"offset":{"o":1}}]}`

// binaryAttributeCases are records for TestBinaryAttributesMatchSDK and the seeds of
// FuzzBinaryAttributes: headers (one "name:value" a line) and a value. fast says
// binaryAttributes reads the record itself rather than leaving it to sdk-go.
var binaryAttributeCases = []struct {
	name, headers, value string
	fast                 bool
}{
	{"plain", "ce_specversion:1.0\nce_id:r1\nce_source:/offsetagent/cli\nce_type:" + TypeCreateRequest + "\ncontent-type:application/json", binaryBody, true},
	{"no content type", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, true},
	{"upper-case names", "CE_SpecVersion:1.0\nCe_ID:r1\nce_SOURCE:/s\nCE_TYPE:" + TypeCreateRequest + "\nContent-Type:application/json\nCE_DRYRUN:TRUE", binaryBody, true},
	{"extensions", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dryrun:true\nce_deadline:2030-01-01T00:00:00Z\nce_giveup:2030-01-01T00:01:00.5+02:00\nce_partitionkey:c\nce_traceparent:x\ntraceparent:y", binaryBody, true},
	{"dryrun false", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dryrun:False", binaryBody, true},
	{"dryrun not a boolean", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dryrun:yes", binaryBody, true},
	{"dryrun empty", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dryrun:", binaryBody, true},
	{"deadline not a timestamp", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_deadline:tomorrow", binaryBody, true},
	{"giveup not a timestamp", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_giveup:2030-01-01", binaryBody, true},
	{"time", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_time:2026-01-01T00:00:00.123Z", binaryBody, true},
	{"time not a timestamp", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_time:now", binaryBody, false},
	{"subject", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_subject: ", binaryBody, true},
	{"id trimmed", "ce_specversion:1.0\nce_id: r1 \u00a0\nce_source:/s\nce_type: " + TypeCreateRequest + " ", binaryBody, true},
	{"id blank", "ce_specversion:1.0\nce_id:  \nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"no id", "ce_specversion:1.0\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"no source", "ce_specversion:1.0\nce_id:r1\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"no type", "ce_specversion:1.0\nce_id:r1\nce_source:/s", binaryBody, false},
	{"other type", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:x", binaryBody, true},
	{"source with a scheme", "ce_specversion:1.0\nce_id:r1\nce_source:HTTPS://Example.com/a\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"source with an escape", "ce_specversion:1.0\nce_id:r1\nce_source:/a%2fb%zz\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"source with a space", "ce_specversion:1.0\nce_id:r1\nce_source: /a b\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"source an authority", "ce_specversion:1.0\nce_id:r1\nce_source://host/a\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"source with a colon", "ce_specversion:1.0\nce_id:r1\nce_source:a:b/c\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"source a bare slash", "ce_specversion:1.0\nce_id:r1\nce_source:/\nce_type:" + TypeCreateRequest, binaryBody, true},
	{"source with dots", "ce_specversion:1.0\nce_id:r1\nce_source:/a/../b/.~_-\nce_type:" + TypeCreateRequest, binaryBody, true},
	{"content type with parameters", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type:application/json; charset=utf-8", binaryBody, false},
	{"content type padded", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type: application/json ", binaryBody, true},
	{"content type blank", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type: ", binaryBody, true},
	{"content type not JSON", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type:text/plain", binaryBody, false},
	{"content type malformed", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type:;;", binaryBody, false},
	{"content type an event format", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\ncontent-type:application/cloudevents+json", binaryBody, false},
	{"datacontenttype header", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_datacontenttype:text/plain", binaryBody, false},
	{"dataschema", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dataschema:relative", binaryBody, false},
	{"spec version 0.3", "ce_specversion:0.3\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"spec version 2.0", "ce_specversion:2.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"spec version twice", "ce_specversion:0.3\nce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"id twice", "ce_specversion:1.0\nce_id:r1\nCE_ID:r2\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"extension twice", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dryrun:true\nce_DryRun:false", binaryBody, false},
	{"extension name not alphanumeric", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_dry_run:true", binaryBody, false},
	{"extension name empty", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_:x", binaryBody, false},
	{"header name not ASCII", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest + "\nce_\u212a:x", binaryBody, false},
	{"no spec version", "ce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, binaryBody, false},
	{"data not a request", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, `{"name":1}`, true},
	{"data not JSON", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, `name`, true},
	{"no data", "ce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, ``, true},
	{"structured", "content-type:application/cloudevents+json", `{"specversion":"1.0","id":"1","source":"/s","type":"` + TypeCreateRequest + `","dryrun":true,"data":` + binaryBody + `}`, false},
	{"structured with binary headers", "content-type:application/cloudevents+json; charset=utf-8\nce_specversion:1.0\nce_id:r1\nce_source:/s\nce_type:" + TypeCreateRequest, `{"specversion":"1.0","id":"1","source":"/s","type":"` + TypeCreateRequest + `","data":` + binaryBody + `}`, false},
}

func headerRecord(headers, value string) *kafka.Message {
	msg := &kafka.Message{Topic: "requests", Value: []byte(value)}
	for _, line := range strings.Split(headers, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
		}
	}
	return msg
}

// requireSDKDecoding holds the decoding of msg to the one that reads its event with sdk-go
// alone (the decoding before binaryAttributes): the same request, or the same error, with and
// without deferred offsets. It reports whether binaryAttributes read the record itself.
func requireSDKDecoding(t *testing.T, msg *kafka.Message) (fast bool) {
	t.Helper()
	for _, deferred := range []bool{false, true} {
		sdk := defaultTuning()
		sdk.sdkAttributes = true
		want, wantErr := decodeRequest(msg, 1<<20, sdk, deferred)
		got, err := decodeRequest(msg, 1<<20, defaultTuning(), deferred)
		requireSameDecodeErrorAnyOrder(t, wantErr, err)
		if err == nil {
			requireSameRequest(t, want, got)
			require.Equal(t, want.Deferred(), got.Deferred())
		}
	}
	_, fast = binaryAttributes(msg)
	return fast
}

// requireSameDecodeErrorAnyOrder is requireSameDecodeError for errors that may hold an
// event.ValidationError, a map whose text lists its fields in map order: the same fields in
// any order are the same error.
func requireSameDecodeErrorAnyOrder(t *testing.T, want, got error) {
	t.Helper()
	var w, g *DecodeError
	var wv, gv event.ValidationError
	if !errors.As(want, &w) || !errors.As(got, &g) || !errors.As(w.Err, &wv) || !errors.As(g.Err, &gv) {
		requireSameDecodeError(t, want, got)
		return
	}
	require.Equal(t, [3]string{string(w.Reason), w.ID, w.Source}, [3]string{string(g.Reason), g.ID, g.Source})
	words := func(s string) []string { f := strings.Fields(s); slices.Sort(f); return f }
	require.Equal(t, words(w.Message), words(g.Message))
	require.Equal(t, len(wv), len(gv))
	for k, e := range wv {
		require.Contains(t, gv, k)
		require.Equal(t, e.Error(), gv[k].Error())
	}
}

// binaryAttributes, which reads the plain binary-mode requests without sdk-go, decodes every
// record as sdk-go's binding does: the same request or the same error, for the records it
// reads and for those it leaves to sdk-go.
func TestBinaryAttributesMatchSDK(t *testing.T) {
	for _, c := range binaryAttributeCases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.fast, requireSDKDecoding(t, headerRecord(c.headers, c.value)), "read by binaryAttributes")
		})
	}
	for _, mode := range []Mode{ModeBinary, ModeStructured} {
		msg, err := RequestMessage("requests", []byte(binaryBody), RequestOptions{Mode: mode, DryRun: true, Key: "c",
			Time:     time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), GiveUp: time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC)})
		require.NoError(t, err)
		require.Equal(t, mode == ModeBinary, requireSDKDecoding(t, &msg), "RequestMessage in %s mode read by binaryAttributes", mode)
	}
}

// FuzzBinaryAttributes holds the decoding of arbitrary records to sdk-go's.
func FuzzBinaryAttributes(f *testing.F) {
	for _, c := range binaryAttributeCases {
		f.Add(c.headers, []byte(c.value))
	}
	f.Fuzz(func(t *testing.T, headers string, value []byte) {
		requireSDKDecoding(t, headerRecord(headers, string(value)))
	})
}

// The plain binary-mode request is read without sdk-go's binding, which copies every header
// and builds an event with a map of extensions: 54 allocations a decoding with it.
func TestBinaryAttributesAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector adds allocations")
	}
	msg, err := RequestMessage("requests", []byte(binaryBody), RequestOptions{ID: "r1", Key: "c", DryRun: true,
		Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), GiveUp: time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC)})
	require.NoError(t, err)
	least := alloctest.Least(50, func() {
		if _, ok := binaryAttributes(&msg); !ok {
			t.Fatal("not read by binaryAttributes")
		}
	})
	require.LessOrEqual(t, least, 1.0, "one string of the header values")
}

// FuzzBinaryAttributeValues holds the decoding to sdk-go's for arbitrary values of the headers
// binaryAttributes reads, under names of any case, the records it reads itself most often.
func FuzzBinaryAttributeValues(f *testing.F) {
	f.Add("r1", "/offsetagent/cli", TypeCreateRequest, "application/json", "true", "2030-01-01T00:00:00Z", "2030-01-01T00:01:00Z", "", uint8(0))
	f.Add(" r1 ", "/a/../b~", " "+TypeCreateRequest, " application/json", "FALSE", "", "2030-01-01", "2026-01-01T00:00:00.5+01:00", uint8(255))
	f.Add("\u00a0", "HTTP://x/y", "x", "text/json", "1", "bad", "", "now", uint8(7))
	f.Fuzz(func(t *testing.T, id, source, typ, ct, dry, deadline, giveup, tm string, upper uint8) {
		names := []string{"ce_specversion", "ce_id", "ce_source", "ce_type", "content-type", "ce_dryrun", "ce_deadline", "ce_giveup", "ce_time"}
		values := []string{"1.0", id, source, typ, ct, dry, deadline, giveup, tm}
		msg := &kafka.Message{Topic: "requests", Value: []byte(binaryBody)}
		for i, n := range names {
			if i >= 5 && values[i] == "" {
				continue // the optional headers are left out when empty
			}
			if upper&(1<<(i%8)) != 0 {
				n = strings.ToUpper(n)
			}
			msg.Headers = append(msg.Headers, kafka.Header{Key: n, Value: []byte(values[i])})
		}
		requireSDKDecoding(t, msg)
	})
}
