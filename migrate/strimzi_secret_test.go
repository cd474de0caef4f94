package migrate

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

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

// A migration into an operator-managed B with --strimzi-secret, end to end: no planted secret
// is in a manifest, the report, the table or the log, only in the Secret; a connector whose
// manifest was applied already (its config on B holds the references) goes on, where it was
// refused as one with another config; and one whose secret cannot be referenced without
// changing how Connect reads its placeholders is refused before anything is stopped.
func TestStrimziSecretEndToEnd(t *testing.T) {
	brokersB := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clB := &kafka.Client{Addr: kafka.TCP(brokersB...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clB, "connect-configs", "connect-offsets", true))
	for _, topic := range []string{"requests", "results"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, clB, topic, 1, nil))
	}
	with := func(name, key, value string) map[string]string {
		cfg := fileSourceConfig(name)
		cfg[key] = value
		return cfg
	}
	const plain = "org.apache.kafka.common.security.plain.PlainLoginModule required "
	onA := map[string]map[string]string{
		"jaas-src": with("jaas-src", "producer.override.sasl.jaas.config", plain+`username="${secrets:kafka/creds:username}" password="Pl4nted-Jaas-Ж";`),
		"applied":  with("applied", "producer.override.ssl.key.password", "Pl4nted-Key-Ж"),
		// A "${" that no '}' closes: Connect would read a reference after it as part of a
		// placeholder of its own.
		"unsplittable": with("unsplittable", "producer.override.sasl.jaas.config", plain+`username="${env:KAFKA_USER}" serviceName="kafka${" password="Pl4nted-Env-Ж";`),
	}
	// applied's manifest was applied: B holds its config as the operator created it.
	writeConfigs(t, ctx, clB, with("applied", "producer.override.ssl.key.password", "${secrets:kafka/connect-b-secrets:applied.producer.override.ssl.key.password}"))
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{}}
	for n, cfg := range onA {
		fc.connectors[n] = &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, config: cfg}
	}
	root := t.TempDir()
	dir, secretFile := filepath.Join(root, "manifests"), filepath.Join(root, "private", "secret.yaml")
	var logs bytes.Buffer
	rep, _, err := Migrate(ctx, MigrateOptions{
		Options: Options{ConnectURL: fc.serve(t), StopSource: true, StablePause: 20 * time.Millisecond, StopPoll: 5 * time.Millisecond,
			StopTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		To: target.Target{Brokers: brokersB, RequestTopic: "requests", ResultTopic: "results", ConfigTopic: "connect-configs",
			OffsetsTopic: "connect-offsets"},
		SelectionKey: t.Name(), Timeout: 10 * time.Second, Grace: 100 * time.Millisecond,
		Strimzi: &strimzi.Target{Cluster: "connect-b", Dir: dir, Secret: "kafka/connect-b-secrets", SecretFile: secretFile},
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range rep.Connectors {
		got[e.Name] = string(e.Outcome) + " " + e.Message.String() + fleet.Join(e.Warnings, "; ").String()
	}
	require.Equal(t, map[string]string{
		"jaas-src": "succeeded no offsets on A: nothing to place on B",
		"applied":  "succeeded no offsets on A: nothing to place on B",
		"unsplittable": `skipped its KafkaConnector manifest cannot be written: config "producer.override.sasl.jaas.config" holds a secret in clear text ` +
			`beside config provider placeholders, and references to the Secret in its place would change how Connect reads the value ` +
			`(a "${" before them that no '}' closes would take them in): put the whole value in a Secret of your own and reference it`,
	}, got)
	fc.mu.Lock()
	require.ElementsMatch(t, []string{"jaas-src", "applied"}, fc.stops, "the refused connector stays untouched on A")
	fc.mu.Unlock()

	var out bytes.Buffer
	require.NoError(t, rep.WriteJSON(&out))
	for _, e := range rep.Connectors { // every text a table draws, raw: the body is never shown
		shown := *e
		shown.Body = nil
		fmt.Fprintf(&out, "%+v\n", shown)
	}
	out.WriteString(rep.Next.String())
	out.Write(logs.Bytes())
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		require.NoError(t, err)
		out.Write(data)
	}
	require.NotContains(t, out.String(), "Pl4nted")
	requireNoCanary(t, "the manifests, the report and the log", out.String())
	manifest, err := os.ReadFile(filepath.Join(dir, "jaas-src.yaml"))
	require.NoError(t, err)
	require.Equal(t, plain+`username="${secrets:kafka/creds:username}" password="${secrets:kafka/connect-b-secrets:jaas-src.producer.override.sasl.jaas.config.password}";`,
		specConfig(t, manifest)["producer.override.sasl.jaas.config"])

	data, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	var secret struct {
		StringData map[string]string `json:"stringData"`
	}
	require.NoError(t, k8syaml.Unmarshal(data, &secret))
	require.Equal(t, map[string]string{
		"jaas-src.producer.override.sasl.jaas.config.password": "Pl4nted-Jaas-Ж",
		"applied.producer.override.ssl.key.password":           "Pl4nted-Key-Ж",
	}, secret.StringData)
}

// Two connectors whose Secret keys would be one ("pg.orders" with database.password and "pg"
// with orders.database.password): each gets its own key, and each manifest resolves to its own
// value, where the second overwrote the first.
func TestStrimziSecretKeysOfTwoConnectors(t *testing.T) {
	root := t.TempDir()
	st := &strimzi.Target{Cluster: "connect-b", Dir: filepath.Join(root, "manifests"), APIVersion: strimzi.StrimziV1,
		Secret: "kafka/connect-b-secrets", SecretFile: filepath.Join(root, "secret.yaml")}
	body := func(name, key, value string) *apply.Body {
		return &apply.Body{Name: name, InitialState: fleet.StateRunning, Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSourceConnector"}, {Key: key, Value: value}}}
	}
	entries := []*apply.Entry{
		{Name: "pg.orders", TargetName: "pg.orders", Type: "source", Outcome: apply.OutcomeSucceeded, Body: body("pg.orders", "database.password", "pw-one")},
		{Name: "pg", TargetName: "pg", Type: "source", Outcome: apply.OutcomeSucceeded, Body: body("pg", "orders.database.password", "pw-two")},
	}
	_, err := writeManifestsOf(st, entries, "m-1", connectors.Builtin())
	require.NoError(t, err)
	data, err := os.ReadFile(st.SecretFile)
	require.NoError(t, err)
	var secret struct {
		StringData map[string]string `json:"stringData"`
	}
	require.NoError(t, k8syaml.Unmarshal(data, &secret))
	require.Len(t, secret.StringData, 2, "%v", secret.StringData)
	for _, c := range []struct{ name, key, want string }{{"pg.orders", "database.password", "pw-one"}, {"pg", "orders.database.password", "pw-two"}} {
		m, err := os.ReadFile(filepath.Join(st.Dir, c.name+".yaml"))
		require.NoError(t, err)
		require.Equal(t, c.want, resolve(specConfig(t, m)[c.key], st.Secret, secret.StringData), c.name)
	}
}

// The helpers below are those of migrate/strimzi's fuzz test, for the end-to-end tests here.

// canaries mark the planted secrets. Each starts a JAAS word (>= U+00A0) and is no blank.
const canaries = "ЖΩΨ¤"

// resolve is Connect's ConfigTransformer with the Secret's provider alone: each
// ${secrets:<secret>:KEY} replaced by the Secret's value once, left to right, as Connect reads
// them (events.ConfigVariables), the other placeholders left as they are.
func resolve(value, secret string, data map[string]string) string {
	var b strings.Builder
	at := 0
	for _, v := range events.ConfigVariables(value) {
		b.WriteString(value[at:v.Start])
		at = v.End
		if d, ok := data[v.Key]; ok && v.Provider == "secrets" && v.Path == secret {
			b.WriteString(d)
			continue
		}
		b.WriteString(value[v.Start:v.End])
	}
	b.WriteString(value[at:])
	return b.String()
}

// requireNoCanary fails when text holds any character of a planted secret.
func requireNoCanary(t testing.TB, what, text string) {
	t.Helper()
	if i := strings.IndexAny(text, canaries); i >= 0 {
		t.Fatalf("%s carries a character of a planted secret at byte %d: %q", what, i, text)
	}
}
