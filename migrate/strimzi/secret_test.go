package strimzi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// A secret-typed value holding a placeholder and a clear password: the placeholder stays,
// the password goes to the Secret, referenced where it was, and the value Connect resolves is
// the one A had; without --strimzi-secret it is a warning.
func TestStrimziSecretMixedValue(t *testing.T) {
	t.Run("with a Secret", func(t *testing.T) {
		st := &Target{Cluster: "connect-b", APIVersion: StrimziV1, Secret: "kafka/connect-b-secrets"}
		data, warnings, values, err := st.manifest(strimziOf(jaasSinkBody(mixedJAAS), "orders-sink"), "m-1", connectors.Builtin(), nil)
		require.NoError(t, err)
		require.Empty(t, warnings)
		require.NotContains(t, string(data), "Cl3ar-Passw0rd")
		got := specConfig(t, data)["consumer.override.sasl.jaas.config"]
		require.Equal(t, `org.apache.kafka.common.security.plain.PlainLoginModule required username="${secrets:kafka/creds:username}" `+
			`password="${secrets:kafka/connect-b-secrets:orders-sink.consumer.override.sasl.jaas.config.password}";`, got)
		require.Equal(t, map[string]string{"orders-sink.consumer.override.sasl.jaas.config.password": "Cl3ar-Passw0rd"}, values)
	})
	t.Run("without a Secret", func(t *testing.T) {
		st := &Target{Cluster: "connect-b", APIVersion: StrimziV1}
		_, warnings, _, err := st.manifest(strimziOf(jaasSinkBody(mixedJAAS), "orders-sink"), "m-1", connectors.Builtin(), nil)
		require.NoError(t, err)
		require.Len(t, warnings, 1)
		require.Contains(t, warnings[0].String(), `config "consumer.override.sasl.jaas.config" holds a secret in clear text`)
		require.NotContains(t, warnings[0].String(), "Cl3ar-Passw0rd")
	})
}
