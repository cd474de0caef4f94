package events

import "github.com/segmentio/kafka-go"

// Header names of the records this service reads and writes. The ce_ headers are the
// CloudEvents Kafka binding's binary-mode attributes; ce_requestid and ce_requestsource are
// extensions on result events that carry the request's identity, so readers of the result
// topic (the agent's dedupe view, clients waiting for a result) need not decode the data.
const (
	HeaderID            = HeaderPrefix + "id"
	HeaderSource        = HeaderPrefix + "source"
	HeaderType          = HeaderPrefix + "type"
	HeaderRequestID     = HeaderPrefix + "requestid"
	HeaderRequestSource = HeaderPrefix + "requestsource"
)

// Header returns the value of the last header named key, and whether there is one.
func Header(msg *kafka.Message, key string) (string, bool) {
	for i := len(msg.Headers) - 1; i >= 0; i-- {
		if msg.Headers[i].Key == key {
			return string(msg.Headers[i].Value), true
		}
	}
	return "", false
}

// RequestIdentity returns the request id and source a result record carries in its
// ce_requestid and ce_requestsource headers ("" when absent).
func RequestIdentity(msg *kafka.Message) (id, source string) {
	id, _ = Header(msg, HeaderRequestID)
	source, _ = Header(msg, HeaderRequestSource)
	return id, source
}
