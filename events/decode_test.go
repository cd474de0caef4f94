package events

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/race"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

func TestRequestRoundTrip(t *testing.T) {
	body := readTestdata(t, "create-request.json")
	tests := []struct {
		name string
		opts RequestOptions
	}{
		{name: "binary default", opts: RequestOptions{ID: "r1", Source: "/ci"}},
		{name: "binary dry run", opts: RequestOptions{Mode: ModeBinary, ID: "r2", Source: "/ci", DryRun: true}},
		{name: "structured", opts: RequestOptions{Mode: ModeStructured, ID: "r3", Source: "/ci"}},
		{name: "structured dry run with time", opts: RequestOptions{Mode: ModeStructured, ID: "r4", Source: "/ci", DryRun: true, Time: time.Unix(1700000000, 0)}},
		{name: "random id and default source", opts: RequestOptions{}},
		{name: "explicit key", opts: RequestOptions{ID: "r5", Key: "other-key"}},
		{name: "binary deadline", opts: RequestOptions{ID: "r6", Deadline: time.Date(2026, 12, 4, 17, 30, 0, 123456789, time.UTC)}},
		{name: "structured deadline", opts: RequestOptions{Mode: ModeStructured, ID: "r7", Deadline: time.Date(2026, 12, 4, 17, 30, 0, 0, time.FixedZone("x", 3600))}},
		{name: "binary giveup", opts: RequestOptions{ID: "r8", Deadline: time.Date(2026, 12, 4, 17, 30, 0, 0, time.UTC), GiveUp: time.Date(2026, 12, 4, 17, 30, 30, 5, time.UTC)}},
		{name: "structured giveup", opts: RequestOptions{Mode: ModeStructured, ID: "r9", GiveUp: time.Date(2026, 12, 4, 17, 30, 30, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := RequestMessage("requests", body, tt.opts)
			require.NoError(t, err)
			require.Equal(t, "requests", msg.Topic)
			wantKey := tt.opts.Key
			if wantKey == "" {
				wantKey = "mm2-source"
			}
			require.Equal(t, wantKey, string(msg.Key))

			req, err := DecodeRequest(&msg, 0)
			require.NoError(t, err)
			if tt.opts.ID != "" {
				require.Equal(t, tt.opts.ID, req.ID)
			} else {
				require.Len(t, req.ID, 36, "a random UUID")
			}
			wantSource := tt.opts.Source
			if wantSource == "" {
				wantSource = DefaultRequestSource
			}
			require.Equal(t, wantSource, req.Source)
			require.Equal(t, TypeCreateRequest, req.Type)
			require.Equal(t, tt.opts.DryRun, req.DryRun)
			require.True(t, tt.opts.Deadline.Equal(req.Deadline), "deadline %s, want %s", req.Deadline, tt.opts.Deadline)
			require.True(t, tt.opts.GiveUp.Equal(req.GiveUp), "giveup %s, want %s", req.GiveUp, tt.opts.GiveUp)
			require.Equal(t, wantCreateRequest(), req.Data)
		})
	}
}

// wantCreateRequest is testdata/create-request.json decoded.
func wantCreateRequest() CreateRequest {
	return CreateRequest{
		Name: "mm2-source",
		Config: Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"},
			{Key: "tasks.max", Value: "4"},
			{Key: "source.cluster.alias", Value: "primary"},
			{Key: "target.cluster.alias", Value: "backup"},
			{Key: "topics", Value: "orders.*"},
			{Key: "sync.topic.acls.enabled", Value: "false"},
			{Key: "source.cluster.sasl.jaas.config", Value: `org.apache.kafka.common.security.plain.PlainLoginModule required username="mm2" password="s3cret";`},
			{Key: "offset-syncs.topic.location", Null: true},
		},
		InitialState: "STOPPED",
		InitialOffsets: []OffsetEntry{
			{
				Partition: jsonvalue.Map{{Key: "cluster", Value: "primary"}, {Key: "partition", Value: jsonvalue.Number("0")}, {Key: "topic", Value: "orders.eu"}},
				Offset:    jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("1042")}},
			},
			{
				Partition: jsonvalue.Map{{Key: "cluster", Value: "primary"}, {Key: "partition", Value: jsonvalue.Number("1")}, {Key: "topic", Value: "orders.eu"}},
			},
		},
		HasInitialOffsets: true,
	}
}

func TestDecodeRequestAccepts(t *testing.T) {
	const body = `{"name":"c","config":{}}`
	tests := []struct {
		name   string
		msg    *kafka.Message
		dryRun bool
	}{
		{name: "binary", msg: record(body, binaryHeaders()...)},
		{name: "binary without content-type", msg: record(body, binaryHeaders("content-type", "-")...)},
		{name: "binary upper-case header names", msg: record(body, "CE_SPECVERSION", "1.0", "Ce_Id", "x", "CE_SOURCE", "/s", "ce_TYPE", TypeCreateRequest)},
		{name: "binary json with charset", msg: record(body, binaryHeaders("content-type", "application/json; charset=utf-8")...)},
		{name: "binary text/json", msg: record(body, binaryHeaders("content-type", "text/json")...)},
		{name: "binary +json", msg: record(body, binaryHeaders("content-type", "application/vnd.offsetagent+json")...)},
		{name: "binary dryrun TRUE", msg: record(body, binaryHeaders("ce_dryrun", "TRUE")...), dryRun: true},
		{name: "binary dryrun false", msg: record(body, binaryHeaders("ce_dryrun", "false")...)},
		{name: "binary unrelated headers", msg: record(body, binaryHeaders("traceparent", "00-abc", "ce_custom", "v")...)},
		{
			name: "structured",
			msg: record(`{"specversion":"1.0","id":"x","source":"/s","type":"`+TypeCreateRequest+`","data":`+body+`}`,
				"content-type", "application/cloudevents+json; charset=UTF-8"),
		},
		{
			name: "structured dryrun string",
			msg: record(`{"specversion":"1.0","id":"x","source":"/s","type":"`+TypeCreateRequest+`","dryrun":"true","data":`+body+`}`,
				"content-type", "application/cloudevents+json"),
			dryRun: true,
		},
		{
			name: "structured data_base64",
			msg: record(`{"specversion":"1.0","id":"x","source":"/s","type":"`+TypeCreateRequest+`","datacontenttype":"application/json","data_base64":"eyJuYW1lIjoiYyIsImNvbmZpZyI6e319"}`,
				"content-type", "application/cloudevents+json"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest(tt.msg, 0)
			require.NoError(t, err)
			require.Equal(t, "c", req.Data.Name)
			require.Equal(t, Config{}, req.Data.Config)
			require.Equal(t, tt.dryRun, req.DryRun)
		})
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	const body = `{"name":"c","config":{}}`
	structured := func(fields string) *kafka.Message {
		return record(`{"specversion":"1.0","id":"x","source":"/s","type":"`+TypeCreateRequest+`"`+fields+`}`,
			"content-type", "application/cloudevents+json")
	}
	tests := []struct {
		name    string
		msg     *kafka.Message
		max     int
		reason  DecodeReason
		message string // a substring of the message
	}{
		{name: "no headers", msg: record(body), reason: ReasonNotCloudEvent, message: "neither a ce_specversion header (binary mode) nor content-type application/cloudevents+json"},
		{name: "plain json content-type", msg: record(body, "content-type", "application/json"), reason: ReasonNotCloudEvent, message: "record is not a CloudEvent"},
		{name: "batch format", msg: record(`[]`, "content-type", "application/cloudevents-batch+json"), reason: ReasonNotCloudEvent, message: `content-type "application/cloudevents-batch+json" is not supported`},
		{name: "unknown format", msg: record(body, "content-type", "application/cloudevents+avro"), reason: ReasonNotCloudEvent, message: "not a supported event format"},
		{name: "binary specversion 0.3", msg: record(body, binaryHeaders("ce_specversion", "0.3")...), reason: ReasonWrongSpecVersion, message: `ce_specversion is "0.3"; only "1.0" is supported`},
		{name: "binary specversion 2.0", msg: record(body, binaryHeaders("ce_specversion", "2.0")...), reason: ReasonWrongSpecVersion, message: `ce_specversion is "2.0"`},
		{name: "structured specversion 2.0", msg: record(`{"specversion":"2.0","id":"x","source":"/s","type":"t"}`, "content-type", "application/cloudevents+json"), reason: ReasonWrongSpecVersion, message: "unsupported specversion"},
		{name: "structured no specversion", msg: record(`{"id":"x","source":"/s","type":"t"}`, "content-type", "application/cloudevents+json"), reason: ReasonNotCloudEvent, message: "structured CloudEvent has no specversion"},
		{name: "structured specversion 0.3", msg: record(`{"specversion":"0.3","id":"x","source":"/s","type":"`+TypeCreateRequest+`"}`, "content-type", "application/cloudevents+json"), reason: ReasonWrongSpecVersion, message: `specversion is "0.3"`},
		{name: "structured not json", msg: record(`not json`, "content-type", "application/cloudevents+json"), reason: ReasonNotCloudEvent, message: "structured CloudEvent must be a JSON object"},
		{name: "structured truncated", msg: record(`{"specversion":"1.0","id":`, "content-type", "application/cloudevents+json"), reason: ReasonNotCloudEvent, message: "structured CloudEvent is malformed"},
		{name: "structured json array", msg: record(`[1,2]`, "content-type", "application/cloudevents+json"), reason: ReasonNotCloudEvent, message: "structured CloudEvent must be a JSON object"},
		{name: "binary missing id", msg: record(body, binaryHeaders("ce_id", "-")...), reason: ReasonInvalidEvent, message: "id: MUST be a non-empty string"},
		{name: "binary missing source", msg: record(body, binaryHeaders("ce_source", "-")...), reason: ReasonInvalidEvent, message: "source: REQUIRED"},
		{name: "binary blank id", msg: record(body, binaryHeaders("ce_id", "  ")...), reason: ReasonInvalidEvent, message: "CloudEvent headers are invalid: id is required to be a non-empty string"},
		{name: "binary bad time", msg: record(body, binaryHeaders("ce_time", "yesterday")...), reason: ReasonInvalidEvent, message: "CloudEvent headers are invalid"},
		{name: "structured missing id", msg: record(`{"specversion":"1.0","source":"/s","type":"`+TypeCreateRequest+`","data":`+body+`}`, "content-type", "application/cloudevents+json"), reason: ReasonInvalidEvent, message: "id: MUST be a non-empty string"},
		{name: "structured id not a string", msg: structured(`,"id":5`), reason: ReasonNotCloudEvent, message: "structured CloudEvent is malformed"},
		{name: "unknown type", msg: record(body, binaryHeaders("ce_type", "com.example.other")...), reason: ReasonUnknownType, message: `event type "com.example.other" is not handled; the agent accepts only "offsetagent.connector.create.request"`},
		{name: "result type", msg: record(body, binaryHeaders("ce_type", TypeCreateSucceeded)...), reason: ReasonUnknownType, message: "is not handled"},
		{name: "dryrun yes", msg: record(body, binaryHeaders("ce_dryrun", "yes")...), reason: ReasonInvalidEvent, message: "extension dryrun is yes; it must be true or false"},
		{name: "structured dryrun number", msg: structured(`,"dryrun":1,"data":` + body), reason: ReasonInvalidEvent, message: "extension dryrun is 1"},
		{name: "deadline not a timestamp", msg: record(body, binaryHeaders("ce_deadline", "tomorrow")...), reason: ReasonInvalidEvent, message: "extension deadline is tomorrow; it must be an RFC 3339 timestamp"},
		{name: "structured deadline number", msg: structured(`,"deadline":1,"data":` + body), reason: ReasonInvalidEvent, message: "extension deadline is 1"},
		{name: "giveup not a timestamp", msg: record(body, binaryHeaders("ce_giveup", "later")...), reason: ReasonInvalidEvent, message: "extension giveup is later; it must be an RFC 3339 timestamp"},
		{name: "text/plain data", msg: record(body, binaryHeaders("content-type", "text/plain")...), reason: ReasonInvalidData, message: `datacontenttype "text/plain" is not JSON`},
		{name: "avro data", msg: record(body, binaryHeaders("content-type", "application/avro")...), reason: ReasonInvalidData, message: "is not JSON"},
		{name: "empty value", msg: record("", binaryHeaders()...), reason: ReasonInvalidData, message: "request data is empty"},
		{name: "structured no data", msg: structured(``), reason: ReasonInvalidData, message: "request data is empty"},
		{name: "non-JSON data", msg: record(`name=c`, binaryHeaders()...), reason: ReasonInvalidData, message: "request data is not valid JSON at byte 2: invalid character in literal null"},
		{name: "JSON array data", msg: record(`[{"name":"c"}]`, binaryHeaders()...), reason: ReasonInvalidData, message: "request data must be a JSON object, got array"},
		{name: "JSON string data", msg: record(`"c"`, binaryHeaders()...), reason: ReasonInvalidData, message: "request data must be a JSON object, got string"},
		{name: "truncated data", msg: record(`{"name":"c","config":{`, binaryHeaders()...), reason: ReasonInvalidData, message: "config is not valid JSON: it ends early"},
		{name: "trailing data", msg: record(`{"name":"c"} {}`, binaryHeaders()...), reason: ReasonInvalidData, message: "more data after the JSON object"},
		{name: "missing name", msg: record(`{"config":{}}`, binaryHeaders()...), reason: ReasonInvalidData, message: `request data has no "name" field`},
		{name: "name object", msg: record(`{"name":{"a":1}}`, binaryHeaders()...), reason: ReasonInvalidData, message: "name must be a string, got object"},
		{name: "config array", msg: record(`{"name":"c","config":["a"]}`, binaryHeaders()...), reason: ReasonInvalidData, message: "config must be an object of strings, got array"},
		{name: "config nested value", msg: record(`{"name":"c","config":{"a":"1","transforms":{"x":1}}}`, binaryHeaders()...), reason: ReasonInvalidData, message: `config value for "transforms" must be a string, got object`},
		{name: "config array value", msg: record(`{"name":"c","config":{"topics":["a"]}}`, binaryHeaders()...), reason: ReasonInvalidData, message: `config value for "topics" must be a string, got array`},
		{name: "initial_state number", msg: record(`{"name":"c","initial_state":1}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_state must be a string (RUNNING, PAUSED or STOPPED), got number"},
		{name: "initial_offsets string", msg: record(`{"name":"c","initial_offsets":"x"}`, binaryHeaders()...), reason: ReasonInvalidData, message: `initial_offsets must be an array or an object {"offsets": [...]}, got string`},
		{name: "initial_offsets entry not object", msg: record(`{"name":"c","initial_offsets":[{"partition":null},7]}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_offsets[1] must be an object"},
		{name: "partition not object", msg: record(`{"name":"c","initial_offsets":[{"partition":{},"offset":{}},{"partition":"p"}]}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_offsets[1].partition must be an object or null, got string"},
		{name: "offset array", msg: record(`{"name":"c","initial_offsets":{"offsets":[{"partition":{},"offset":[1]}]}}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_offsets.offsets[0].offset must be an object or null, got array"},
		{name: "entry unknown field", msg: record(`{"name":"c","initial_offsets":[{"partition":{},"offsets":{}}]}`, binaryHeaders()...), reason: ReasonInvalidData, message: `unknown field "offsets" in initial_offsets[0]`},
		{name: "offsets object unknown field", msg: record(`{"name":"c","initial_offsets":{"offset":[]}}`, binaryHeaders()...), reason: ReasonInvalidData, message: `unknown field "offset" in initial_offsets; expected only "offsets"`},
		{name: "offsets not array", msg: record(`{"name":"c","initial_offsets":{"offsets":{}}}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_offsets.offsets must be an array, got object"},
		{name: "unknown top-level field", msg: record(`{"name":"c","initialState":"STOPPED"}`, binaryHeaders()...), reason: ReasonInvalidData, message: `unknown field "initialState" in request data`},
		{name: "too deep", msg: record(`{"name":"c","initial_offsets":[{"partition":`+strings.Repeat(`{"a":`, 100)+`1`+strings.Repeat(`}`, 100)+`}]}`, binaryHeaders()...), reason: ReasonInvalidData, message: "initial_offsets[0].partition"},
		{name: "invalid UTF-8 value", msg: record("{\"name\":\"c\xff\"}", binaryHeaders()...), reason: ReasonInvalidUTF8, message: "record value is not valid UTF-8 (first bad byte at offset 10)"},
		{name: "invalid UTF-8 structured", msg: record("{\"specversion\":\"1.0\",\"id\":\"\xc3\"}", "content-type", "application/cloudevents+json"), reason: ReasonInvalidUTF8, message: "record value is not valid UTF-8"},
		{name: "invalid UTF-8 header", msg: record(body, binaryHeaders("ce_id", "a\xffb")...), reason: ReasonInvalidUTF8, message: `record header "ce_id" is not valid UTF-8`},
		{name: "invalid UTF-8 in data_base64", msg: structured(`,"data_base64":"/w=="`), reason: ReasonInvalidUTF8, message: "event data is not valid UTF-8 (first bad byte at offset 0)"},
		{name: "oversize record", msg: record(body+strings.Repeat(" ", 100), binaryHeaders()...), max: 100, reason: ReasonTooLarge, message: "record value is 124 bytes, more than the limit of 100 bytes"},
		{name: "oversize default limit", msg: record(strings.Repeat(" ", DefaultMaxBytes+1), binaryHeaders()...), reason: ReasonTooLarge, message: "more than the limit of 16777216 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest(tt.msg, tt.max)
			require.Error(t, err)
			require.Nil(t, req)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "error %T is not a *DecodeError", err)
			require.Equal(t, tt.reason, de.Reason, "message: %s", de.Message)
			require.Contains(t, de.Message, tt.message)
			require.Equal(t, de.Message, err.Error())
		})
	}
}

func TestDecodeErrorCarriesRequestIdentity(t *testing.T) {
	_, err := DecodeRequest(record(`[]`, binaryHeaders("ce_id", "abc", "ce_source", "/src")...), 0)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, ReasonInvalidData, de.Reason)
	require.Equal(t, "abc", de.ID)
	require.Equal(t, "/src", de.Source)
}

func TestDecodeRequestLargeAndOdd(t *testing.T) {
	// 100,000 entries; 10,000 under the race detector (make test decodes the 100,000 without it).
	n := race.Rounds(100_000, 10)
	tests := []struct {
		name  string
		body  []byte
		check func(t *testing.T, req *Request)
	}{
		{
			name: fmt.Sprintf("%d initial offsets", n),
			body: mm2Request(n),
			check: func(t *testing.T, req *Request) {
				// Left as text, checked: it decodes.
				require.Nil(t, req.Data.InitialOffsets)
				require.True(t, req.Data.HasInitialOffsets)
				require.NotNil(t, req.Data.RawOffsets)
				entries, err := req.Data.Offsets()
				require.NoError(t, err)
				require.Len(t, entries, n)
				last := entries[n-1]
				require.Equal(t, jsonvalue.Map{{Key: "cluster", Value: "primary"}, {Key: "partition", Value: jsonvalue.Number("99")}, {Key: "topic", Value: fmt.Sprintf("topic-%d", (n-1)/100)}}, last.Partition)
				require.Equal(t, jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number("9007199254740993")}}, last.Offset)
			},
		},
		{
			name: "name with control characters decodes (validation rejects it later)",
			body: []byte(`{"name":"bad\u0000name\n\t","config":{"a":"b"}}`),
			check: func(t *testing.T, req *Request) {
				require.Equal(t, "bad\x00name\n\t", req.Data.Name)
			},
		},
		{
			name: "name kept untrimmed",
			body: []byte(`{"name":"  spaced  "}`),
			check: func(t *testing.T, req *Request) {
				require.Equal(t, "  spaced  ", req.Data.Name)
				require.Nil(t, req.Data.Config)
				require.False(t, req.Data.HasInitialOffsets)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []Mode{ModeBinary, ModeStructured} {
				msg, err := RequestMessage("requests", tt.body, RequestOptions{Mode: mode, ID: "big"})
				require.NoError(t, err)
				req, err := DecodeRequest(&msg, 0)
				require.NoError(t, err, "mode %s", mode)
				tt.check(t, req)
			}
		})
	}
}

// mm2Request is a create request for MirrorSourceConnector with n initial offsets in MM2's
// shape, spread over 1,000 topics of 100 partitions.
func mm2Request(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"name":"mm2","config":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","source.cluster.alias":"primary"},"initial_offsets":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		offset := fmt.Sprint(i * 10)
		if i == n-1 {
			offset = "9007199254740993" // above 2^53: must survive as text
		}
		fmt.Fprintf(&b, `{"partition":{"cluster":"primary","partition":%d,"topic":"topic-%d"},"offset":{"offset":%s}}`, i%100, i/100, offset)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// A large initial_offsets array that does not decode fails at decoding with the message of
// ParseCreateRequest, although DecodeRequest does not decode a valid one.
func TestDecodeRequestLargeMalformedOffsets(t *testing.T) {
	body := mm2Request(2000) // over RawOffsetsBytes
	require.Greater(t, len(body), RawOffsetsBytes)
	// The last entry's offset value starts with "tru": the error is found at the end.
	i := bytes.LastIndex(body, []byte(`"offset":`)) + len(`"offset":`)
	bad := slices.Concat(body[:i], []byte("tru"), body[i:])
	_, wantErr := ParseCreateRequest(bad)
	require.Error(t, wantErr)
	msg, err := RequestMessage("requests", bad, RequestOptions{ID: "big-bad"})
	require.NoError(t, err)
	_, err = DecodeRequest(&msg, 0)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, ReasonInvalidData, de.Reason)
	require.Equal(t, wantErr.Error(), de.Message)
}
