package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/source"
)

func cfgOf(kv ...string) events.Config {
	var c events.Config
	for i := 0; i+1 < len(kv); i += 2 {
		c = append(c, events.ConfigEntry{Key: kv[i], Value: kv[i+1]})
	}
	return c
}

func selection(t *testing.T, f source.SelectionFlags) source.Selection {
	t.Helper()
	s, err := source.NewSelection(f)
	require.NoError(t, err)
	return s
}

// examplePlan is a plan of a source with secrets and a sink, as Build would give it.
func examplePlan(t *testing.T) (*Plan, FileOptions) {
	sel := selection(t, source.SelectionFlags{Rename: []string{"orders-(.*)=orders-b-$1"}, Set: []string{"tasks.max=4"}})
	srcA := cfgOf("connector.class", "io.debezium.connector.postgresql.PostgresConnector", "name", "orders-src",
		"database.hostname", "pg.internal", "database.password", "pg-s3cret-value", "database.user", "${file:/etc/kafka/pg.properties:user}",
		"tasks.max", "1", "topic.prefix", "orders")
	src := &fleet.Connector{Name: "orders-src", Type: connectors.Source, State: fleet.StateRunning, Config: srcA,
		Offsets: []events.ConnectorOffset{{Partition: jsonvalue.Map{{Key: "server", Value: "orders"}}, Offset: jsonvalue.Map{{Key: "lsn", Value: "24023128"}}}}}
	sinkA := cfgOf("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "name", "orders-sink", "topics", "orders")
	sink := &fleet.Connector{Name: "orders-sink", Type: connectors.Sink, State: fleet.StateRunning, Config: sinkA, Group: "connect-orders-sink"}
	p := &Plan{Blocked: map[string]bool{}}
	for _, c := range []*fleet.Connector{src, sink} {
		target := sel.TargetName(c.Name)
		p.Connectors = append(p.Connectors, &Connector{Connector: c, Target: target, OnB: sel.EditConfig(c.Config, target)})
	}
	legacy := &fleet.Connector{Name: "legacy-src", Type: connectors.Source, State: fleet.StateRunning,
		Config:  cfgOf("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector", "name", "legacy-src"),
		Problem: fleet.Plain("points_at_a: producer.override.bootstrap.servers names A's Kafka cluster")}
	p.Connectors = append(p.Connectors, &Connector{Connector: legacy, Target: "legacy-src", OnB: legacy.Config,
		Hazards: []hazard.Hazard{{Check: "points_at_a", Key: "producer.override.bootstrap.servers", Message: fleet.Plain("names A's Kafka cluster"), Refuse: true}}})
	return p, FileOptions{Selection: sel, ConfigTopic: "connect-configs", RecordAt: func(string) (int64, bool) { return 18443, true },
		ExistsOnB: map[string]bool{}}
}

func exampleFile(t *testing.T) *File {
	p, o := examplePlan(t)
	f := &File{MigrationID: "m-4f1c0a9e2b7d3c11", Created: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), CreatedBy: "offsetagent test",
		From:       Side{KafkaClusterID: "7q9ZpX1uQ0m2kXb8c4Q1aA", Brokers: []string{"a1:9092"}, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		To:         Side{KafkaClusterID: "Hk2L0pB5RjW8sYt3nV6cZg", Brokers: []string{"b1:9092"}, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		Settings:   Settings{StopSource: true, SinkOffsets: "copy", CheckpointMaxAge: 15 * time.Minute},
		Selection:  SelectionFile{Rename: []string{"orders-(.*)=orders-b-$1"}, Set: []SetEdit{{Key: "tasks.max", Value: "4"}}},
		Connectors: p.File(o)}
	return f
}

// A plan file written and read back is the same plan, byte for byte when written again.
func TestPlanFileRoundTrip(t *testing.T) {
	f := exampleFile(t)
	path := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, f.Write(path))
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(written), fileHeader), string(written))
	got, err := Read(path)
	require.NoError(t, err)
	require.Equal(t, f.MigrationID, got.MigrationID)
	require.Equal(t, f.Settings.CheckpointMaxAge, got.Settings.CheckpointMaxAge)
	require.True(t, got.Settings.StopSource)
	require.Len(t, got.Connectors, 3)
	require.Equal(t, f.Connectors[0].ConfigOnBValues(), got.Connectors[0].ConfigOnBValues(), "config_on_b keeps its order")
	require.Equal(t, f.Connectors[0].Edits, got.Connectors[0].Edits)
	var again bytes.Buffer
	require.NoError(t, got.Encode(&again))
	require.Equal(t, string(written), again.String())
}

// The plan file is readable by its owner only, also written over a file that was 0644.
func TestPlanFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, exampleFile(t).Write(path))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	fresh := filepath.Join(t.TempDir(), "new.yaml")
	require.NoError(t, exampleFile(t).Write(fresh))
	st, err = os.Stat(fresh)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// A field this version does not know, and another schema version, are refused.
func TestPlanRefusesUnknownFields(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, exampleFile(t).Encode(&buf))
	good := buf.String()
	_, err := Decode(strings.NewReader(good))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ text, want string }{
		"unknown top-level field": {strings.Replace(good, "migration_id:", "surprise: 1\nmigration_id:", 1), "field surprise not found"},
		"unknown connector field": {strings.Replace(good, "    target: orders-b-src", "    target: orders-b-src\n    tagret: x", 1), "field tagret not found"},
		"newer version":           {strings.Replace(good, "version: 1", "version: 2", 1), "version 2"},
		"no version":              {strings.Replace(good, "version: 1\n", "", 1), "version 0"},
		"config_on_b not a map":   {strings.Replace(good, "    config_on_b:\n", "    config_on_b: [a]\n    x_config_on_b:\n", 1), "field x_config_on_b not found"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.text))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = Decode(strings.NewReader(strings.Replace(good, "version: 1", "version: 2", 1)))
	require.ErrorIs(t, err, ErrPlanVersion)
}

// No secret value, nor its sha256, is in the plan file's bytes: a class's PASSWORD key, a key
// secret by its name, a secret --set, a password inside a URL.
func TestPlanNeverHoldsSecrets(t *testing.T) {
	secrets := []string{"pg-s3cret-value", "jaas-s3cret", "set-s3cret", "url-s3cret", "token-s3cret"}
	sel := selection(t, source.SelectionFlags{Set: []string{"ssl.key.password=set-s3cret"}})
	cfg := cfgOf("connector.class", "io.debezium.connector.postgresql.PostgresConnector", "name", "pg",
		"database.password", "pg-s3cret-value", // Debezium's PASSWORD key
		"producer.override.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="jaas-s3cret";`,
		"connection.url", "jdbc:postgresql://u:url-s3cret@pg:5432/db",
		"my.api.token", "token-s3cret",
		"ssl.key.password", "old-s3cret-unused",
		"database.user", "${file:/etc/kafka/pg.properties:user}")
	secrets = append(secrets, "old-s3cret-unused")
	c := &fleet.Connector{Name: "pg", Type: connectors.Source, State: fleet.StateRunning, Config: cfg}
	p := &Plan{Connectors: []*Connector{{Connector: c, Target: "pg", OnB: sel.EditConfig(cfg, "pg")}}}
	f := &File{MigrationID: "m-1", Selection: SelectionFile{Set: []SetEdit{{Key: "ssl.key.password", ValueAtApply: true}}},
		Connectors: p.File(FileOptions{Selection: sel})}
	var buf bytes.Buffer
	require.NoError(t, f.Encode(&buf))
	text := buf.String()
	for _, s := range secrets {
		require.NotContains(t, text, s)
		sum := sha256.Sum256([]byte(s))
		require.NotContains(t, text, hex.EncodeToString(sum[:]))
	}
	require.Contains(t, text, "${file:/etc/kafka/pg.properties:user}", "a placeholder is a reference, kept")
	require.Contains(t, text, "database.password: '[hidden]'")
	require.Contains(t, text, "value_at_apply: true")
	fc := f.Connectors[0]
	require.Subset(t, fc.SecretKeys, []string{"database.password", "ssl.key.password", "producer.override.sasl.jaas.config", "my.api.token"})
	// The secret --set is an edit, hidden on both sides.
	var setEdit *FileEdit
	for i := range fc.Edits {
		if fc.Edits[i].Key == "ssl.key.password" {
			setEdit = &fc.Edits[i]
		}
	}
	require.NotNil(t, setEdit)
	require.Equal(t, BySet, setEdit.By)
	require.Equal(t, events.HiddenValue, *setEdit.From)
	require.Equal(t, events.HiddenValue, *setEdit.To)
}

// Every difference of the config on B from A's is an edit, each with what made it.
func TestPlanListsEveryEdit(t *testing.T) {
	str := func(s string) *string { return &s }
	sinkA := cfgOf("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector", "name", "orders-sink", "topics", "orders",
		"tasks.max", "1", "errors.tolerance", "all", "bootstrap.hint", "a1:9092,a2:9092")
	for _, tc := range []struct {
		name     string
		flags    source.SelectionFlags
		target   string
		rewrites []Edit
		onB      func(events.Config) events.Config
		rekey    *fleet.Rekey
		want     FileEdit
	}{
		{name: "rename", flags: source.SelectionFlags{Rename: []string{"orders-(.*)=orders-b-$1"}},
			want: FileEdit{Key: "name", From: str("orders-sink"), To: str("orders-b-sink"), By: ByRename, Rule: "orders-(.*)=orders-b-$1"}},
		{name: "set", flags: source.SelectionFlags{Set: []string{"tasks.max=4"}},
			want: FileEdit{Key: "tasks.max", From: str("1"), To: str("4"), By: BySet}},
		{name: "set new key", flags: source.SelectionFlags{Set: []string{"batch.size=10"}},
			want: FileEdit{Key: "batch.size", To: str("10"), By: BySet}},
		{name: "unset", flags: source.SelectionFlags{Unset: []string{"errors.tolerance"}},
			want: FileEdit{Key: "errors.tolerance", From: str("all"), By: ByUnset}},
		{name: "map-value", flags: source.SelectionFlags{MapValue: []string{"a1:9092,a2:9092=b1:9092"}},
			want: FileEdit{Key: "bootstrap.hint", From: str("a1:9092,a2:9092"), To: str("b1:9092"), By: ByMapValue}},
		{name: "mm2 topics", rewrites: []Edit{{Key: "topics"}},
			onB:  func(c events.Config) events.Config { return replace(c, "topics", "A.orders") },
			want: FileEdit{Key: "topics", From: str("orders"), To: str("A.orders"), By: ByMM2Policy}},
		{name: "mm2 topics.regex", rewrites: []Edit{{Key: "topics.regex"}},
			onB: func(c events.Config) events.Config {
				return append(replace(c, "topics", ""), events.ConfigEntry{Key: "topics.regex", Value: `A\.orders`})
			},
			want: FileEdit{Key: "topics.regex", To: str(`A\.orders`), By: ByMM2Policy}},
		{name: "restore transform", rewrites: []Edit{{Key: "transforms"}},
			onB: func(c events.Config) events.Config {
				return append(c, events.ConfigEntry{Key: "transforms", Value: "restoreTopicNamesOfA"})
			},
			want: FileEdit{Key: "transforms", To: str("restoreTopicNamesOfA"), By: ByRestoreTopicNames}},
		{name: "kubernetes name", target: "orders.sink",
			want: FileEdit{Key: "name", From: str("orders-sink"), To: str("orders.sink"), By: ByKubernetesName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := selection(t, tc.flags)
			c := &fleet.Connector{Name: "orders-sink", Type: connectors.Sink, Config: sinkA, Group: "connect-orders-sink"}
			target := sel.TargetName(c.Name)
			if tc.target != "" {
				target = tc.target
			}
			onB := sel.EditConfig(sinkA, target)
			if tc.onB != nil {
				onB = tc.onB(onB)
			}
			p := &Plan{Connectors: []*Connector{{Connector: c, Target: target, OnB: onB, Rewrites: tc.rewrites, Rekey: tc.rekey}}}
			fcs := p.File(FileOptions{Selection: sel})
			require.Contains(t, fcs[0].Edits, tc.want)
			for _, e := range fcs[0].Edits {
				if e.Key != tc.want.Key && e.Key != "name" && e.Key != "topics" {
					t.Errorf("an edit no flag made: %+v", e)
				}
			}
		})
	}
	t.Run("rekey", func(t *testing.T) {
		c := &fleet.Connector{Name: "pg", Type: connectors.Source, Config: cfgOf("name", "pg", "topic.prefix", "orders")}
		onB := replace(c.Config, "topic.prefix", "orders-b")
		p := &Plan{Connectors: []*Connector{{Connector: c, Target: "pg", OnB: onB, Rekey: &fleet.Rekey{Key: "server", From: "orders", To: "orders-b"}}}}
		fc := p.File(FileOptions{Selection: selection(t, source.SelectionFlags{Set: []string{"topic.prefix=orders-b"}})})[0]
		require.Equal(t, &FileRekey{Key: "server", From: "orders", To: "orders-b"}, fc.Rekey)
		require.Equal(t, []FileEdit{{Key: "topic.prefix", From: str("orders"), To: str("orders-b"), By: BySet}}, fc.Edits)
	})
}

func replace(c events.Config, key, value string) events.Config {
	out := make(events.Config, 0, len(c))
	for _, kv := range c {
		if kv.Key == key {
			if value == "" {
				continue
			}
			kv.Value = value
		}
		out = append(out, kv)
	}
	return out
}

// The fingerprint hashes the canonical form: keys sorted, null as null, a placeholder as
// stored, a secret as "<secret>"; the same config in two orders has the same fingerprint.
func TestFingerprintCanonical(t *testing.T) {
	cfg := events.Config{{Key: "tasks.max", Value: "1"}, {Key: "database.password", Value: "pg-s3cret"},
		{Key: "name", Value: "pg"}, {Key: "transforms", Null: true}, {Key: "database.user", Value: "${file:/p:user}"},
		{Key: "Zeta", Value: "z"}}
	golden, err := os.ReadFile(filepath.Join("testdata", "fingerprint.golden"))
	require.NoError(t, err)
	canon := string(Canonical(cfg, nil))
	require.Equal(t, strings.TrimSpace(string(golden)), canon)
	require.NotContains(t, canon, "pg-s3cret")
	reversed := make(events.Config, len(cfg))
	for i, kv := range cfg {
		reversed[len(cfg)-1-i] = kv
	}
	require.Equal(t, Fingerprint(cfg, nil), Fingerprint(reversed, nil))
	sum := sha256.Sum256([]byte(canon))
	require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), Fingerprint(cfg, nil))
	// A secret's value changed alone: same fingerprint (the record offset tells); any other
	// value changed: another.
	require.Equal(t, Fingerprint(cfg, nil), Fingerprint(replace(cfg, "database.password", "other"), nil))
	require.NotEqual(t, Fingerprint(cfg, nil), Fingerprint(replace(cfg, "tasks.max", "2"), nil))
	// A class's own secret key counts as secret.
	class := func(k string) bool { return k == "tasks.max" }
	require.Equal(t, Fingerprint(cfg, class), Fingerprint(replace(cfg, "tasks.max", "2"), class))
}
