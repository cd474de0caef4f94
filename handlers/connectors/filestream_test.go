package connectors

import "testing"

func TestFileStreamSource(t *testing.T) {
	cfg := map[string]string{"file": "/tmp/test.txt"}
	requireValidation(t, "org.apache.kafka.connect.file.FileStreamSourceConnector", []validationCase{
		{name: "valid", config: cfg, offsets: `[{"partition":{"filename":"/tmp/test.txt"},"offset":{"position":30}}]`},
		{name: "other file and zero", config: cfg, offsets: `[{"partition":{"filename":"old.txt"},"offset":{"position":0}}]`},
		{name: "tombstones for anything", config: cfg, offsets: `[{"partition":null,"offset":null},{"partition":{"x":1}}]`},
		{
			name: "file unset", config: map[string]string{}, offsets: `[]`, code: 500,
			msg: "Offsets cannot be modified if the 'file' configuration is unspecified. This is because stdin is used for input and offsets are not tracked.",
		},
		{
			name: "file blank is trimmed", config: map[string]string{"file": " \t"}, offsets: `[{"partition":null,"offset":null}]`, code: 500,
			msg: "Offsets cannot be modified if the 'file' configuration is unspecified. This is because stdin is used for input and offsets are not tracked.",
		},
		{
			name: "offset without position", config: cfg, offsets: `[{"partition":{"filename":"a"},"offset":{"pos":1}}]`, code: 500,
			msg: "Offset objects should either be null or contain the key 'position'",
		},
		{
			name: "position not a long", config: cfg, offsets: `[{"partition":{"filename":"a"},"offset":{"position":"30"}}]`, code: 500,
			msg: "The value for the 'position' key in the offset is expected to be a Long value",
		},
		{
			name: "position a double", config: cfg, offsets: `[{"partition":{"filename":"a"},"offset":{"position":30.0}}]`, code: 500,
			msg: "The value for the 'position' key in the offset is expected to be a Long value",
		},
		{
			name: "position null", config: cfg, offsets: `[{"partition":{"filename":"a"},"offset":{"position":null}}]`, code: 500,
			msg: "The value for the 'position' key in the offset is expected to be a Long value",
		},
		{
			name: "negative position", config: cfg, offsets: `[{"partition":{"filename":"a"},"offset":{"position":-1}}]`, code: 500,
			msg: "The value for the 'position' key in the offset should be a non-negative value",
		},
		{
			name: "null partition", config: cfg, offsets: `[{"partition":null,"offset":{"position":1}}]`, code: 500,
			msg: "Partition objects cannot be null",
		},
		{
			name: "partition without filename", config: cfg, offsets: `[{"partition":{"file":"a"},"offset":{"position":1}}]`, code: 500,
			msg: "Partition objects should contain the key 'filename'",
		},
		{
			name: "offset checked before partition", config: cfg, offsets: `[{"partition":null,"offset":{"position":-1}}]`, code: 500,
			msg: "The value for the 'position' key in the offset should be a non-negative value",
		},
	})
}
