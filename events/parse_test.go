package events

import (
	"testing"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/stretchr/testify/require"
)

func TestParseCreateRequest(t *testing.T) {
	tests := []struct {
		name string
		data string
		want CreateRequest
	}{
		{
			name: "name only",
			data: `{"name":"c"}`,
			want: CreateRequest{Name: "c"},
		},
		{
			name: "null name becomes empty as in Connect",
			data: `{"name":null,"config":null,"initial_state":null,"initial_offsets":null}`,
			want: CreateRequest{},
		},
		{
			name: "scalars coerced like Jackson into Map<String,String>",
			data: `{"name":42,"config":{"tasks.max":4,"ratio":1.50,"big":12345678901234567890,"exp":1e3,"on":true,"off":false,"nil":null}}`,
			want: CreateRequest{Name: "42", Config: Config{
				{Key: "tasks.max", Value: "4"}, {Key: "ratio", Value: "1.50"}, {Key: "big", Value: "12345678901234567890"},
				{Key: "exp", Value: "1e3"}, {Key: "on", Value: "true"}, {Key: "off", Value: "false"}, {Key: "nil", Null: true},
			}},
		},
		{
			name: "repeated config key keeps first position and last value",
			data: `{"name":"c","config":{"a":"1","b":"2","a":"3"}}`,
			want: CreateRequest{Name: "c", Config: Config{{Key: "a", Value: "3"}, {Key: "b", Value: "2"}}},
		},
		{
			name: "repeated field takes the last value",
			data: `{"name":"first","name":"second","initial_state":"PAUSED","initial_state":"stopped"}`,
			want: CreateRequest{Name: "second", InitialState: "stopped"},
		},
		{
			name: "empty config and offsets are present but empty",
			data: `{"name":"c","config":{},"initial_offsets":[]}`,
			want: CreateRequest{Name: "c", Config: Config{}, InitialOffsets: []OffsetEntry{}, HasInitialOffsets: true},
		},
		{
			name: "PATCH shape",
			data: `{"name":"c","initial_offsets":{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":5}},{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":null},{}]}}`,
			want: CreateRequest{Name: "c", HasInitialOffsets: true, InitialOffsets: []OffsetEntry{
				{
					Partition: jsonvalue.Map{{Key: "kafka_topic", Value: "t"}, {Key: "kafka_partition", Value: jsonvalue.Number("0")}},
					Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number("5")}},
				},
				{Partition: jsonvalue.Map{{Key: "kafka_topic", Value: "t"}, {Key: "kafka_partition", Value: jsonvalue.Number("1")}}},
				{},
			}},
		},
		{
			name: "PATCH shape with null offsets is present and empty",
			data: `{"name":"c","initial_offsets":{"offsets":null}}`,
			want: CreateRequest{Name: "c", HasInitialOffsets: true},
		},
		{
			name: "empty partition and offset objects stay non-nil",
			data: `{"name":"c","initial_offsets":[{"partition":{},"offset":{}}]}`,
			want: CreateRequest{Name: "c", HasInitialOffsets: true, InitialOffsets: []OffsetEntry{{Partition: jsonvalue.Map{}, Offset: jsonvalue.Map{}}}},
		},
		{
			name: "create offsets-only",
			data: `{"name":"c","create":"offsets-only","initial_offsets":[]}`,
			want: CreateRequest{Name: "c", Create: CreateOffsetsOnly, HasInitialOffsets: true, InitialOffsets: []OffsetEntry{}},
		},
		{
			name: "create null is absent",
			data: `{"create":null,"name":"c"}`,
			want: CreateRequest{Name: "c"},
		},
		{
			name: "escapes and unicode",
			data: `{"name":"caf\u00e9 \ud83d\ude00","config":{"regex":"a<b>&c","x":"\"q\""}}`,
			want: CreateRequest{Name: "café 😀", Config: Config{{Key: "regex", Value: "a<b>&c"}, {Key: "x", Value: `"q"`}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCreateRequest([]byte(tt.data))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseCreateRequestErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		message string
	}{
		{name: "empty", data: "  ", message: "request data is empty; expected a JSON object"},
		{name: "null", data: "null", message: "request data must be a JSON object, got null"},
		{name: "invalid UTF-8", data: "{\"name\":\"\xe2\x28\xa1\"}", message: "request data is not valid UTF-8 (first bad byte at offset 9)"},
		{name: "config boolean", data: `{"name":"c","config":true}`, message: "config must be an object of strings, got boolean"},
		{name: "name array", data: `{"name":["c"]}`, message: "name must be a string, got array"},
		{name: "initial_state object", data: `{"name":"c","initial_state":{}}`, message: "initial_state must be a string (RUNNING, PAUSED or STOPPED), got object"},
		{name: "offset entry null", data: `{"name":"c","initial_offsets":[null]}`, message: `initial_offsets[0] must be an object {"partition": {...}, "offset": {...}}, got null`},
		{name: "offset number", data: `{"name":"c","initial_offsets":[{"offset":5}]}`, message: "initial_offsets[0].offset must be an object or null, got number"},
		{name: "bad JSON inside a partition", data: `{"name":"c","initial_offsets":[{"partition":{"a":tru}}]}`, message: "initial_offsets[0].partition is not valid JSON at byte"},
		{name: "create number", data: `{"name":"c","create":1}`, message: `create must be a string ("connector" or "offsets-only"), got number`},
		{name: "create object", data: `{"name":"c","create":{}}`, message: `create must be a string ("connector" or "offsets-only"), got object`},
		{name: "unknown field", data: `{"name":"c","tasks":[]}`, message: `unknown field "tasks" in request data; Connect accepts name, config, initial_state and initial_offsets (and offsetagent create)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreateRequest([]byte(tt.data))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.message)
		})
	}
}

func BenchmarkParseCreateRequest(b *testing.B) {
	data := mm2Request(100_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := ParseCreateRequest(data)
		if err != nil || len(req.InitialOffsets) != 100_000 {
			b.Fatalf("parse: %v, %d offsets", err, len(req.InitialOffsets))
		}
	}
}
