package strimzi

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// body is the part of a KIP-995 body a manifest is written from.
type body struct {
	Name, InitialState string
	Config             events.Config
	InitialOffsets     []events.ConnectorOffset
}

// strimziOf is the connector of body b, named source on A, whose manifest is written.
func strimziOf(b *body, source string) Connector {
	return Connector{Name: source, Target: b.Name, State: b.InitialState, Config: b.Config, Offsets: b.InitialOffsets}
}

func sourceBody(state string) *body {
	return &body{Name: "pg-orders", InitialState: state,
		Config: events.Config{
			{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"},
			{Key: "tasks.max", Value: "1"},
			{Key: "database.hostname", Value: "db"},
			{Key: "database.password", Value: "${secrets:kafka/pg:password}"},
			{Key: "snapshot.mode", Value: "never"},
			{Key: "include.schema.changes", Value: "true"},
			{Key: "database.port", Value: "5432"},
			{Key: "name", Value: "pg-orders"},
		},
		InitialOffsets: []events.ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "server", Value: "orders"}},
			Offset:    jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("123")}},
		}},
	}
}

func sinkBody() *body {
	return &body{Name: "s3-sink", InitialState: fleet.StateStopped,
		Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"},
			{Key: "tasks.max", Value: "4"},
			{Key: "topics", Value: "orders"},
			{Key: "connector.plugin.version", Value: "4.1.0"},
			{Key: "aws.secret.access.key", Value: "hunter2"},
			{Key: "store.url", Value: "https://app:s3cret@s3.example:443/bucket"},
			{Key: "proxy.url", Value: "https://app:${file:/etc/p:pw}@proxy:443"},
			{Key: "behavior.on.null.values", Value: "null"},
			{Key: "empty", Value: ""},
		},
	}
}

// mixedJAAS references its username through a placeholder and holds its password in clear
// text.
const mixedJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="${secrets:kafka/creds:username}" password="Cl3ar-Passw0rd";`

func jaasSinkBody(jaas string) *body {
	return &body{Name: "orders-sink", InitialState: fleet.StateRunning,
		Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"},
			{Key: "topics", Value: "orders"},
			{Key: "consumer.override.sasl.jaas.config", Value: jaas},
		}}
}

// specConfig is the spec.config of a KafkaConnector manifest.
func specConfig(t testing.TB, data []byte) map[string]string {
	t.Helper()
	var m struct {
		Spec struct {
			Config map[string]string `yaml:"config"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &m))
	return m.Spec.Config
}
