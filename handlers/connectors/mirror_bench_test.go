package connectors

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// BenchmarkMirrorSourceValidate is the offset validation of the bulk scenario: 100,000
// MirrorSourceConnector offsets through the class's alterOffsets twin.
func BenchmarkMirrorSourceValidate(b *testing.B) {
	class, ok := Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	if !ok {
		b.Fatal("MirrorSourceConnector is not registered")
	}
	entries := make([]events.OffsetEntry, 100_000)
	for i := range entries {
		entries[i] = events.OffsetEntry{
			Partition: offsetstore.Map{
				{Key: "cluster", Value: "src"},
				{Key: "topic", Value: fmt.Sprintf("mirrored-%05d", i/100)},
				{Key: "partition", Value: offsetstore.Number(strconv.Itoa(i % 100))},
			},
			Offset: offsetstore.Map{{Key: "offset", Value: offsetstore.Number(strconv.Itoa(1000 + 7*i))}},
		}
	}
	config := map[string]string{"connector.class": "MirrorSourceConnector", "source.cluster.alias": "src"}
	b.ReportAllocs()
	for b.Loop() {
		if err := class.Validate(config, entries); err != nil {
			b.Fatal(err)
		}
	}
}
