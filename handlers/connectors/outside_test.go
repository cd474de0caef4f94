package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every Debezium class says under which partition key its offsets carry its logical name and
// which state it keeps outside Connect's topics; the sinks that keep their own progress say
// where.
func TestOutside(t *testing.T) {
	tests := []struct {
		name  string
		class string
		want  Outside
	}{
		{name: "postgres", class: "PostgresConnector", want: Outside{NameConfigs: []string{"topic.prefix", "database.server.name"}, NameKey: "server", ReplicationSlot: true}},
		{name: "mysql", class: "MySqlConnector", want: Outside{NameConfigs: []string{"topic.prefix", "database.server.name"}, NameKey: "server", SchemaHistory: true}},
		{name: "mariadb", class: "MariaDbConnector", want: Outside{NameConfigs: []string{"topic.prefix", "database.server.name"}, NameKey: "server", SchemaHistory: true}},
		{name: "sqlserver", class: "SqlServerConnector", want: Outside{NameConfigs: []string{"topic.prefix", "database.server.name"}, NameKey: "server", SchemaHistory: true}},
		{name: "oracle", class: "OracleConnector", want: Outside{NameConfigs: []string{"topic.prefix", "database.server.name"}, NameKey: "server", SchemaHistory: true}},
		{name: "mongodb", class: "MongoDbConnector", want: Outside{NameConfigs: []string{"topic.prefix", "mongodb.name"}, NameKey: "server_id"}},
		{name: "iceberg", class: "org.apache.iceberg.connect.IcebergSinkConnector", want: Outside{Progress: icebergProgress}},
		{name: "hdfs", class: "HdfsSinkConnector", want: Outside{Progress: hdfsProgress}},
		{name: "snowflake", class: "SnowflakeSinkConnector", want: Outside{Progress: snowflakeProgress}},
		{name: "s3: its group only", class: "S3SinkConnector", want: Outside{}},
		{name: "filestream: nothing", class: "FileStreamSource", want: Outside{}},
	}
	r := Builtin()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := r.Lookup(tt.class)
			require.True(t, ok)
			require.Equal(t, tt.want, c.Outside)
		})
	}
}
