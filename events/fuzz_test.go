package events

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
)

// FuzzDecodeRequest feeds arbitrary headers (one "name:value" per line) and values to
// DecodeRequest. The seed corpus is in testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add("ce_specversion:1.0\nce_id:1\nce_source:/s\nce_type:"+TypeCreateRequest, []byte(`{"name":"c","config":{"a":1},"initial_offsets":[{"partition":{"p":0},"offset":null}]}`))
	f.Add("content-type:application/cloudevents+json", []byte(`{"specversion":"1.0","id":"1","source":"/s","type":"`+TypeCreateRequest+`","data":{"name":"c"}}`))
	f.Add("ce_specversion:1.0\nce_id:1\nce_source:/s\nce_type:"+TypeCreateRequest, []byte(`{"name":"c\ud800","config":{"k\udc00":"\ud83d\ude00"},"initial_offsets":{"offsets":[{"partition":{"p":["\ud800"]},"offset":null}]}}`))
	f.Add("content-type:application/cloudevents+json", []byte(`{"data":{"name":"c","config":{"p":"x" "q":1}},"specversion":"1.0","id":"1","source":"/s","type":"`+TypeCreateRequest+`"}`))
	f.Fuzz(func(t *testing.T, headers string, value []byte) {
		msg := &kafka.Message{Value: value}
		for _, line := range strings.Split(headers, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
			}
		}
		req, err := DecodeRequest(msg, 1<<20)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if !slices.Contains(decodeReasons, de.Reason) || de.Message == "" {
				t.Fatalf("bad DecodeError: reason %q, message %q", de.Reason, de.Message)
			}
			return
		}
		if strings.TrimSpace(req.ID) == "" || strings.TrimSpace(req.Source) == "" {
			t.Fatalf("decoded request without id or source: %+v", req)
		}
		if req.Type != TypeCreateRequest {
			t.Fatalf("decoded request of type %q", req.Type)
		}
	})
}

// decodeReasons are every DecodeReason.
var decodeReasons = []DecodeReason{
	ReasonNotCloudEvent, ReasonInvalidUTF8, ReasonTooLarge, ReasonWrongSpecVersion,
	ReasonInvalidEvent, ReasonUnknownType, ReasonInvalidData,
}
