package events

import (
	"fmt"

	"github.com/segmentio/kafka-go"
)

// Compression names the codec a publisher compresses request records with.
type Compression string

// The codecs of Kafka's record batches.
const (
	CompressionNone   Compression = "none"
	CompressionGzip   Compression = "gzip"
	CompressionSnappy Compression = "snappy"
	CompressionLz4    Compression = "lz4"
	CompressionZstd   Compression = "zstd"
)

// DefaultRequestCompression is the codec offsetagent's own publishers (publish, migrate) send
// requests with when none is chosen. A large request is mostly repeated JSON keys: snappy
// shrinks the bytes the request topic's broker copies and stores (about 8 times for the
// benchmark's 100,000 offsets) for little CPU, and without the memory zstd and lz4 cost the
// agent (docs/benchmarks.md).
const DefaultRequestCompression = CompressionSnappy

// Codec returns c's kafka-go codec for a kafka.Writer's Compression (0 for none); an empty c
// is DefaultRequestCompression. Any other name is an error.
func (c Compression) Codec() (kafka.Compression, error) {
	switch c {
	case "":
		return DefaultRequestCompression.Codec()
	case CompressionNone:
		return 0, nil
	case CompressionGzip:
		return kafka.Gzip, nil
	case CompressionSnappy:
		return kafka.Snappy, nil
	case CompressionLz4:
		return kafka.Lz4, nil
	case CompressionZstd:
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("compression %q: must be none, gzip, snappy, lz4 or zstd", string(c))
}
