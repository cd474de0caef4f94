package integration

import (
	"log/slog"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// A structured-mode request whose envelope parses but whose data does not gets a failed result
// that names the request (its id and source), as in binary mode; no message, log line or result
// byte quotes the request's bytes.
func TestStructuredBadDataKeepsIdentityAndLeaksNothing(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	logs := &lockedBuffer{}
	startAgent(t, cfg, agent.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	cl := newClient(t, cfg)

	const secret = "pw-Zq8!structured"
	envelope := func(id, rest string) kafka.Message {
		return kafka.Message{
			Value:   []byte(`{"specversion":"1.0","id":"` + id + `","source":"/structured","type":"` + events.TypeCreateRequest + `"` + rest + `}`),
			Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
		}
	}
	tests := []struct {
		name    string
		id      string
		msg     kafka.Message
		message string // a substring of the result's message
	}{
		{name: "data with a missing comma", id: "bad-comma",
			msg:     envelope("bad-comma", `,"data":{"name":"c","config":{"database.password":"`+secret+`" "tasks.max":"1"}}`),
			message: "event data is not valid JSON"},
		{name: "data with an unquoted value", id: "bad-literal",
			msg:     envelope("bad-literal", `,"data":{"name":"c","config":{"database.password":`+secret+`}}`),
			message: "event data is not valid JSON"},
		{name: "data before the attributes", id: "bad-first",
			msg: kafka.Message{
				Value:   []byte(`{"data":{"name":"c","config":{"database.password":"` + secret + `",}},"specversion":"1.0","id":"bad-first","source":"/structured","type":"` + events.TypeCreateRequest + `"}`),
				Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
			},
			message: "event data is not valid JSON"},
		{name: "data of the wrong type for its content type", id: "bad-type",
			msg:     envelope("bad-type", `,"datacontenttype":"text/plain","data":{"name":"c","config":{"database.password":"`+secret+`"}}`),
			message: "event data"},
		{name: "data_base64 not base64", id: "bad-base64",
			msg:     envelope("bad-base64", `,"data_base64":"`+secret+`"`),
			message: "data_base64"},
		{name: "data valid JSON but not a request", id: "bad-shape",
			msg:     envelope("bad-shape", `,"data":{"name":"c","config":{"database.password":"`+secret+`"},"extra":1}`),
			message: `unknown field "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl.publishRaw(tt.msg)
			res := cl.waitResult(tt.id, resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, "/structured", res.Data.RequestSource)
			require.Equal(t, "decode_request", res.Data.FailedStep)
			require.Equal(t, 400, res.Data.ErrorCode)
			require.Contains(t, res.Data.Message, tt.message)
			require.NotContains(t, string(res.Msg.Value), "Zq8", "the result quotes the request")
		})
	}
	require.Contains(t, logs.String(), "undecodable request", "the agent logged the failures (the check below is not vacuous)")
	require.NotContains(t, logs.String(), "Zq8", "the logs quote the request")
}
