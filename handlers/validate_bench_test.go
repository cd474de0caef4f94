package handlers

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// BenchmarkValidateSourceOffsets is validate_offsets of the bulk scenario: 100,000
// MirrorSourceConnector offsets checked, deduplicated and encoded into records.
func BenchmarkValidateSourceOffsets(b *testing.B) {
	class, ok := connectors.Builtin().Lookup("org.apache.kafka.connect.mirror.MirrorSourceConnector")
	if !ok {
		b.Fatal("MirrorSourceConnector is not registered")
	}
	build := func() []events.OffsetEntry {
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
		return entries
	}
	props := map[string]string{"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "src"}
	c := &Creator{}
	b.ReportAllocs()
	for range b.N {
		// validate_offsets consumes the decoded offsets: each run gets its own.
		b.StopTimer()
		entries := build()
		b.StartTimer()
		j := &job{req: &events.Request{Data: events.CreateRequest{InitialOffsets: entries}},
			name: "mm2-bulk", props: props, class: class, typ: connectors.Source}
		if err := c.validateOffsets(context.Background(), j); err != nil {
			b.Fatal(err)
		}
		if len(j.records) != len(entries) {
			b.Fatalf("%d records for %d offsets", len(j.records), len(entries))
		}
	}
}
