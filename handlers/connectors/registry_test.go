package connectors

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	r := Builtin()
	tests := []struct {
		name  string
		class string
		want  string // "" = not found
	}{
		{name: "fqcn", class: "io.debezium.connector.mysql.MySqlConnector", want: "io.debezium.connector.mysql.MySqlConnector"},
		{name: "simple name", class: "MySqlConnector", want: "io.debezium.connector.mysql.MySqlConnector"},
		{name: "pruned alias", class: "MySql", want: "io.debezium.connector.mysql.MySqlConnector"},
		{name: "mariadb", class: "MariaDb", want: "io.debezium.connector.mariadb.MariaDbConnector"},
		{name: "file source", class: "FileStreamSource", want: "org.apache.kafka.connect.file.FileStreamSourceConnector"},
		{name: "mirror", class: "MirrorCheckpointConnector", want: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"},
		{name: "jdbc source", class: "JdbcSource", want: "io.confluent.connect.jdbc.JdbcSourceConnector"},
		{name: "s3 sink", class: "S3Sink", want: "io.confluent.connect.s3.S3SinkConnector"},
		{name: "iceberg fqcn", class: "org.apache.iceberg.connect.IcebergSinkConnector", want: "org.apache.iceberg.connect.IcebergSinkConnector"},
		{name: "alias claimed by two classes resolves to neither", class: "IcebergSinkConnector"},
		{name: "case matters", class: "mysql"},
		{name: "unknown", class: "com.example.Unknown"},
		{name: "empty", class: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := r.Lookup(tc.class)
			require.Equal(t, tc.want != "", ok)
			if ok {
				require.Equal(t, tc.want, c.Name)
			}
		})
	}
}

func TestBuiltinClasses(t *testing.T) {
	var all []Class
	for _, f := range builtinFamilies() {
		all = append(all, f...)
	}
	_, dups := build(all)
	require.Empty(t, dups)
	classes := Builtin().Classes()
	require.Len(t, classes, len(all))
	for _, c := range classes {
		t.Run(c.Name, func(t *testing.T) {
			require.NotEmpty(t, c.Source)
			require.Equal(t, simpleAliases(c.Name), c.Aliases)
			require.Contains(t, []Type{Source, Sink}, c.Type)
			builtIn := strings.HasPrefix(c.Name, "org.apache.kafka.connect.")
			require.Equal(t, builtIn, c.AltersOffsets, "only the Apache Kafka built-ins override alterOffsets")
			if c.Type == Sink {
				require.Nil(t, c.Validate)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	_, dups := build([]Class{{Name: "a.B"}, {Name: "a.B"}})
	require.Equal(t, []string{"a.B"}, dups)
	var all []Class
	for _, family := range builtinFamilies() {
		all = append(all, family...)
	}
	_, dups = build(all)
	require.Empty(t, dups, "a built-in class is registered twice")

	classes := []Class{{Name: "a.FooConnector", Aliases: simpleAliases("a.FooConnector"), Type: Sink}}
	r, dups := build(classes)
	require.Empty(t, dups)
	classes[0].Aliases[0] = "changed" // the registry keeps its own copy
	c, ok := r.Lookup("FooConnector")
	require.True(t, ok)
	require.Equal(t, []string{"FooConnector", "Foo"}, c.Aliases)
}

func TestTypeOf(t *testing.T) {
	r := Builtin()
	tests := []struct {
		name   string
		config map[string]string
		want   Type
	}{
		{name: "registered source despite topics", config: map[string]string{"connector.class": "MySql", "topics": "x"}, want: Source},
		{name: "registered sink", config: map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector"}, want: Sink},
		{name: "unknown with topics", config: map[string]string{"connector.class": "x.Y", "topics": "a,b"}, want: Sink},
		{name: "unknown with topics.regex", config: map[string]string{"connector.class": "x.Y", "topics.regex": "a.*"}, want: Sink},
		{name: "unknown with blank topics", config: map[string]string{"connector.class": "x.Y", "topics": " "}, want: Source},
		{name: "unknown without topics", config: map[string]string{"connector.class": "x.Y"}, want: Source},
		{name: "no class", config: map[string]string{}, want: Source},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, r.TypeOf(tc.config))
		})
	}
}

func TestSuccessMessage(t *testing.T) {
	r := Builtin()
	mirror, _ := r.Lookup("MirrorSource")
	mysql, _ := r.Lookup("MySql")
	framework := "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	require.Equal(t, "The offsets for this connector have been altered successfully", SuccessMessage(mirror))
	require.Equal(t, framework, SuccessMessage(mysql))
	require.Equal(t, framework, SuccessMessage(nil))
}
