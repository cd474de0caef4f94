package migrate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/rollback"
)

// The cutover report is mapped onto rollback's input as its doc's table says; a sink that
// followed its sources is marked so (its offsets on B are not A's, and are never carried), a
// stopped sink counts as stopped on A, and what a report cannot tell refuses the connector.
func TestRollbackConnectors(t *testing.T) {
	part := jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number("0")}, {Key: "kafka_topic", Value: "T"}}
	off := fleet.KafkaOffset(5)
	cut := &cutover.Cutover{MigrationID: "m-1", OperatorManaged: false, Connectors: []*cutover.Connector{
		{Name: "src", TargetName: "src-b", Type: "source", Class: "io.debezium.connector.postgresql.PostgresConnector", StoppedOnA: true,
			StoppedOnABy: "rest", StateOnA: "PAUSED", RequestID: "m-1/src-b/1", Rekey: &fleet.Rekey{Key: "server", From: "shop", To: "shop2"},
			Partitions: []*cutover.Partition{{Partition: jsonvalue.Map{{Key: "server", Value: "shop2"}}, Translation: "as read"}}},
		{Name: "sink", TargetName: "sink-b", Type: "sink", Group: "connect-sink-b", StoppedOnABy: "rest", StateOnA: "RUNNING",
			RequestID: "m-1/sink-b/1", FollowsSources: []string{"src"},
			Partitions: []*cutover.Partition{{Partition: part, OnA: off, Placed: off, Translation: "as read"}}},
		{Name: "copied", TargetName: "copied", Type: "sink", Group: "connect-copied", StoppedOnABy: "rest", StateOnA: "RUNNING", RequestID: "m-1/copied/2",
			Partitions: []*cutover.Partition{{Partition: part, OnA: off, Placed: off, Translation: "as read"}}},
		{Name: "no-rest", TargetName: "no-rest", Type: "source", StoppedOnA: true, StoppedOnABy: "no live worker of A holds it (...)", RequestID: "m-1/no-rest/1"},
		{Name: "old-dbz", TargetName: "old-dbz", Type: "source", Class: "io.debezium.connector.mysql.MySqlConnector", StoppedOnA: true, StoppedOnABy: "rest"},
		{Name: "old-file", TargetName: "old-file", Type: "source", Class: "org.apache.kafka.connect.file.FileStreamSourceConnector", StoppedOnA: true, StoppedOnABy: "rest"},
		{Name: "kept-running", TargetName: "kept-running", Type: "source", StateOnA: "RUNNING", RequestID: "m-1/kept-running/1"},
	}}
	got := RollbackConnectors(cut)
	require.Len(t, got, 7)
	by := map[string]rollback.Connector{}
	for _, c := range got {
		by[c.Name] = c
	}
	src := by["src"]
	require.Equal(t, rollback.Connector{Name: "src", TargetName: "src-b", Type: "source", StoppedOnA: true, StateOnA: "PAUSED", MigrationID: "m-1",
		RequestSource: "/offsetagent/migrate/m-1", RequestID: "m-1/src-b/1", Rekey: &rollback.Rekey{Key: "server", From: "shop", To: "shop2"},
		Partitions: []rollback.Partition{{Partition: jsonvalue.Map{{Key: "server", Value: "shop2"}}, Translation: rollback.AsRead}}}, src)
	require.True(t, by["sink"].StoppedOnA, "a sink stopped through A's REST API")
	require.Equal(t, rollback.FollowedSources, by["sink"].Partitions[0].Translation)
	require.Equal(t, "connect-sink-b", by["sink"].Group)
	require.Equal(t, rollback.AsRead, by["copied"].Partitions[0].Translation)
	require.Contains(t, by["no-rest"].Refuse, "without A's REST API (no live worker of A holds it (...))")
	require.Contains(t, by["old-dbz"].Refuse, "whether this Debezium source's logical name")
	require.Empty(t, by["old-file"].Refuse, "an old report's FileStream source: rollback checks its mark and state itself")
	require.False(t, by["kept-running"].StoppedOnA)
	for _, n := range []string{"src", "sink", "copied", "kept-running"} {
		require.Empty(t, by[n].Refuse, n)
	}
}

// --include and --exclude narrow the report by whole names; an include matching none of the
// report's names is asked for as such, and so refused by rollback.
func TestRollbackNames(t *testing.T) {
	cut := &cutover.Cutover{Connectors: []*cutover.Connector{{Name: "orders-src"}, {Name: "orders-sink"}, {Name: "users"}}}
	tests := []struct {
		name             string
		include, exclude []string
		want             []string
		err              string
	}{
		{name: "all"},
		{name: "include", include: []string{"orders-.*"}, want: []string{"orders-src", "orders-sink"}},
		{name: "exclude", exclude: []string{"users"}, want: []string{"orders-src", "orders-sink"}},
		{name: "whole names", include: []string{"orders"}, want: []string{"orders"}},
		{name: "not in the report", include: []string{"users", "hand-made"}, want: []string{"users", "hand-made"}},
		{name: "bad pattern", include: []string{"("}, err: `pattern "("`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rollbackNames(cut, tt.include, tt.exclude)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
