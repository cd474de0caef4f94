package events

import "testing"

// BenchmarkDecodeRequest decodes a whole binary-mode request record with 100,000 MM2 offsets,
// the bulk scenario of cmd/offsetagent-bench: CloudEvent attributes, then the body, whose
// initial_offsets are checked and left as text.
func BenchmarkDecodeRequest(b *testing.B) {
	msg, err := RequestMessage("requests", mm2Request(100_000), RequestOptions{ID: "bench", Source: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg.Value)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := DecodeRequest(&msg, 16<<20)
		if err != nil || len(req.Data.RawOffsets) == 0 {
			b.Fatalf("decode: %v", err)
		}
	}
}
