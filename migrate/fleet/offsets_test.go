package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// A re-key moves the partitions under the logical name on A to the one on B, leaves the
// others and the maps it was given alone, and its inverse moves them back.
func TestRekey(t *testing.T) {
	part := func(server string) jsonvalue.Map { return jsonvalue.Map{{Key: "server", Value: server}} }
	lsn := jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("42")}}
	onA := []events.ConnectorOffset{{Partition: part("shop"), Offset: lsn}, {Partition: part("other"), Offset: lsn}}
	r := &Rekey{Key: "server", From: "shop", To: "shop2"}
	onB := r.Apply(onA)
	require.Equal(t, []events.ConnectorOffset{{Partition: part("shop2"), Offset: lsn}, {Partition: part("other"), Offset: lsn}}, onB)
	require.Equal(t, part("shop"), onA[0].Partition, "the partitions read are not changed")
	require.Equal(t, onA, r.Inverse().Apply(onB))

	var none *Rekey
	require.Equal(t, onA, none.Apply(onA))
	require.Nil(t, none.Inverse())
}

func TestValidMigrationID(t *testing.T) {
	for id, want := range map[string]bool{"m-4f1c0a9e2b7d3c11": true, "orders-2026": true, "a/b": false, "a b": false, "a\tb": false} {
		require.Equal(t, want, ValidMigrationID(id), id)
	}
}
