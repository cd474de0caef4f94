// Package events owns everything about CloudEvents on Kafka: the request and result payload
// types, the CloudEvents Kafka protocol binding for segmentio/kafka-go records (binary mode with
// ce_ headers and structured mode with an application/cloudevents+json value, plus the
// partitionkey extension to record key mapping), decoding a consumed record into a Request, and
// building result and request records. It is the wire contract of the service: the header
// names (HeaderRequestID, ...), the Result and Plan types and the builders of failed results
// (Result.SetFailure, RejectedResult) live here, and it depends on nothing of the service but
// the JSON value model (internal/jsonvalue).
//
// So do the rules for secrets in a connector config, which results, plans, failure messages
// and migrate's manifests follow: which keys hold secrets (IsSecretKey, by name, with a
// family's PASSWORD keys on top), which parts of a value hold one in clear text (SecretSpans:
// a password inside a URL, the options of a sasl.jaas.config read as Kafka's JaasConfig reads
// it by internal/jaas, jaas.go; never a config provider placeholder, read as Connect's ConfigTransformer reads
// it, ConfigVariables), how a config is shown (Config.Redacted) and how a message built from it
// by someone else is scrubbed of them however it spells them (Config.Scrub, scrub.go).
//
// The binding mirrors sdk-go's protocol/kafka_sarama/v2 on top of sdk-go's binding packages,
// because sdk-go has no kafka-go binding. A request in the plain binary mode every client sends
// is decoded without it (binaryAttributes, decode_binary.go), which reads what it is sure to
// read as sdk-go does and leaves the rest to sdk-go (TestBinaryAttributesMatchSDK,
// FuzzBinaryAttributes). The result, the one record the agent writes for every
// request, is built without it: ResultMessage writes the binary-mode headers as the binding
// would and the JSON by hand (marshalResult, result_encode.go), each held to what it stands in
// for by a test (TestResultMessageMatchesBinding, TestMarshalResultMatchesEncodingJSON).
//
// Decoding checks shape only: a Request that decodes may still be invalid (an empty or
// control-character name, an unknown initial_state, offsets a connector rejects). Validating it
// against Connect's rules, and consuming, producing and committing records, are left to callers.
// A caller that reads a large initial_offsets array in one pass of its own may leave checking
// it to that pass (DecodeRequestDeferred, then Request.Settle or Request.Check).
package events
