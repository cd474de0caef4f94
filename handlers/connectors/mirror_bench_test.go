package connectors

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// BenchmarkMirrorSourceValidate is the offset validation of the bulk scenario: 100,000
// MirrorSourceConnector offsets through the class's alterOffsets twin.
func BenchmarkMirrorSourceValidate(b *testing.B) {
	class, ok := Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	if !ok {
		b.Fatal("MirrorSourceConnector is not registered")
	}
	entries := mm2Entries(100_000)
	config := map[string]string{"connector.class": "MirrorSourceConnector", "source.cluster.alias": "src"}
	b.ReportAllocs()
	for b.Loop() {
		if err := class.Validate(config, entries); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupe is the last-one-wins merge of the bulk request's 100,000 partitions.
func BenchmarkDedupe(b *testing.B) {
	entries := mm2Entries(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if out := Dedupe(entries); len(out) != len(entries) {
			b.Fatalf("Dedupe kept %d of %d distinct partitions", len(out), len(entries))
		}
	}
}

// mm2Entries are n distinct MirrorSourceConnector offsets.
func mm2Entries(n int) []events.OffsetEntry {
	entries := make([]events.OffsetEntry, n)
	for i := range entries {
		entries[i] = events.OffsetEntry{
			Partition: jsonvalue.Map{
				{Key: "cluster", Value: "src"},
				{Key: "topic", Value: fmt.Sprintf("mirrored-%05d", i/100)},
				{Key: "partition", Value: jsonvalue.Number(strconv.Itoa(i % 100))},
			},
			Offset: jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number(strconv.Itoa(1000 + 7*i))}},
		}
	}
	return entries
}
