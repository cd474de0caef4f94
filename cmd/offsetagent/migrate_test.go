package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

func TestExportAndMigrateFlagErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "export without a source", args: []string{"export"}, stderr: "give at least one"},
		{name: "export with an argument", args: []string{"export", "x"}, stderr: `unexpected argument "x"`},
		{name: "bad set", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--set", "=x"}, stderr: `--set "=x": want KEY=VALUE`},
		{name: "stop without REST", args: []string{"migrate", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--stop-source"}, stderr: "--stop-source needs --from-connect-url"},
		{name: "migrate without B", args: []string{"migrate", "--from-brokers", "127.0.0.1:1"}, stderr: "--to-brokers is required"},
		{name: "unknown flag", args: []string{"migrate", "--frobnicate"}, stderr: "flag provided but not defined"},
		{name: "translate without an alias", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--sink-offsets", "translate"},
			stderr: "--sink-offsets translate needs --mm2-source-alias"},
		{name: "alias without B", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--mm2-source-alias", "A"},
			stderr: "reads MirrorMaker 2's checkpoints on B: --to-brokers is required"},
		{name: "exact with copy", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--exact"},
			stderr: "apply to --sink-offsets translate, not copy"},
		{name: "alias with none", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--sink-offsets", "none", "--mm2-source-alias", "A"},
			stderr: "apply to --sink-offsets translate, not none"},
		{name: "unknown policy", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--mm2-source-alias", "A", "--replication-policy", "mirror"},
			stderr: `unknown replication policy "mirror"`},
		{name: "exact without A's brokers", args: []string{"migrate", "--from-connect-url", "http://127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--mm2-source-alias", "A", "--exact"},
			stderr: "--from-brokers is required"},
		{name: "negative wait", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--to-brokers", "127.0.0.1:1", "--mm2-source-alias", "A", "--checkpoint-wait", "-1s"},
			stderr: "--checkpoint-wait -1s: must not be negative"},
		{name: "sink follows source with copy", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--sink-follows-source"},
			stderr: "--sink-follows-source apply to --sink-offsets translate, not copy"},
		{name: "unknown sink mode", args: []string{"export", "--from-brokers", "127.0.0.1:1", "--sink-offsets", "shift"},
			stderr: `--sink-offsets "shift": want copy, none or translate`},
		{name: "verify without a cutover report", args: []string{"migrate", "--verify", "--to-brokers", "127.0.0.1:1"},
			stderr: "needs --cutover-report FILE (the migration's) and --to-brokers"},
		{name: "verify a cutover report that is not one", args: []string{"migrate", "--verify", "--to-brokers", "127.0.0.1:1", "--cutover-report", "migrate_test.go"},
			stderr: "read cutover report migrate_test.go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run(tc.args, strings.NewReader(""), &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), tc.stderr)
		})
	}
}

// export and migrate end to end: A and B are two embedded brokers, an agent seeds A and one
// runs on B.
func TestExportAndMigrateCommands(t *testing.T) {
	a, b := twoClusters(t)
	stopA := startTestAgent(t, a)
	publishUntilAccepted(t, demoRequest)
	stopA()
	t.Cleanup(startTestAgent(t, b))

	dir := t.TempDir()
	cmd := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// The bodies hold secrets in plain text: the file is private, also when it existed before
	// with a wider mode; so is the report.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bodies.jsonl"), []byte("old\n"), 0o644))
	code, out, stderr := cmd("export", "--from-brokers", a, "-o", filepath.Join(dir, "bodies.jsonl"), "--report", filepath.Join(dir, "export.json"))
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"bodies.jsonl", "export.json"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	require.Empty(t, out)
	require.Contains(t, stderr, "1 connectors: 0 succeeded, 1 planned, 0 failed, 0 skipped")
	// A misspelt --exclude is named and refused (exit 1) unless --allow-empty.
	code, out, stderr = cmd("export", "--from-brokers", a, "--exclude", "file-scr-1")
	require.Equal(t, 1, code, stderr)
	require.Empty(t, out)
	require.Contains(t, stderr, `--exclude "file-scr-1" matches no selected connector (A has 1: file-src-1): check the spelling, or give --allow-empty`)
	code, out, stderr = cmd("export", "--from-brokers", a, "--exclude", "file-scr-1", "--allow-empty")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, `"name":"file-src-1"`)
	require.Contains(t, stderr, `flag="--exclude \"file-scr-1\" matches no selected connector"`)
	code, out, stderr = cmd("export", "--from-brokers", a, "--include", "nothing", "--allow-empty")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, out)
	require.Contains(t, stderr, "0 connectors: 0 succeeded")

	bodies, err := os.ReadFile(filepath.Join(dir, "bodies.jsonl"))
	require.NoError(t, err)
	require.Equal(t, `{"name":"file-src-1","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"test.txt","name":"file-src-1","tasks.max":"1","topic":"test-topic"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":30}}]}`+"\n", string(bodies))

	// Waiting for B's agent to have created its topics.
	cutover := filepath.Join(dir, "cutover.json")
	migrateArgs := []string{"migrate", "--from-brokers", a, "--to-brokers", b, "--rename", "file-src-(.*)=b-$1", "--report", filepath.Join(dir, "migrate.json"),
		"--verify-timeout", "300ms", "--cutover-report", cutover}
	for attempt := 0; ; attempt++ {
		code, out, stderr = cmd(migrateArgs...)
		if code != 2 || attempt >= 50 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `file-src-1\s+b-1\s+source\s+1\s+succeeded\s+-\s+-`, out)
	require.Contains(t, stderr, "[1/1] file-src-1 -> b-1: succeeded")
	var rep struct {
		MigrationID string `json:"migration_id"`
		Connectors  []map[string]any
	}
	data, err := os.ReadFile(filepath.Join(dir, "migrate.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	// Without --to-connect-url B's plugins are not checked: the report says so per connector.
	require.Len(t, rep.Connectors, 1)
	require.Equal(t, []any{map[string]any{"check": "plugin", "refuse": false,
		"message": "not checked whether B's Connect has the connector's plugin and takes its config: B's Connect REST API was not given",
		"fix":     "give --to-connect-url (B's Connect REST API) so that the plugin is looked up and the config validated on B before anything stops"}},
		rep.Connectors[0]["hazards"])
	delete(rep.Connectors[0], "hazards")
	require.Equal(t, []map[string]any{{"name": "file-src-1", "target_name": "b-1", "type": "source", "offsets": 1.0,
		"outcome": "succeeded", "failed_step": "", "message": "", "request_id": rep.MigrationID + "/b-1/1"}}, rep.Connectors)

	// The cutover: no worker runs b-1 on B, so it waits; the report is private.
	require.Contains(t, out, "1 partitions of 1 connectors: 0 verified, 1 waiting, 0 mismatch, 0 unordered")
	fi, err := os.Stat(cutover)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err = os.ReadFile(cutover)
	require.NoError(t, err)
	require.Contains(t, string(data), `"offset_placed": {`+"\n"+`            "position": 30`)
	verify := []string{"migrate", "--verify", "--cutover-report", cutover, "--to-brokers", b, "--verify-timeout", "300ms"}
	code, out, stderr = cmd(verify...)
	require.Equal(t, 3, code, stderr)
	require.Contains(t, out, "1 waiting")
	// What it waits for, and how long, is on standard error before the wait.
	require.Contains(t, stderr, "verifying the cutover on B: waiting up to 300ms for 1 of 1 partitions (b-1) to move past the offsets placed: "+
		"sources' new offsets in B's topic connect-offsets")
	// A re-verification that cannot write its report keeps the one it read, whole.
	require.NoError(t, os.Mkdir(cutover+".tmp", 0o700))
	before, err := os.ReadFile(cutover)
	require.NoError(t, err)
	code, _, stderr = cmd(verify...)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "write cutover report")
	after, err := os.ReadFile(cutover)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
	require.NoError(t, os.Remove(cutover+".tmp"))
	// B's worker commits the next position: verified, and the file says so.
	w := &kafka.Writer{Addr: kafka.TCP(b), Balancer: kafka.Murmur2Balancer{Consistent: true}, BatchTimeout: time.Millisecond}
	require.NoError(t, w.WriteMessages(context.Background(), kafka.Message{Topic: "connect-offsets", Key: []byte(`["b-1",{"filename":"test.txt"}]`), Value: []byte(`{"position":42}`)}))
	require.NoError(t, w.Close())
	code, out, stderr = cmd(verify...)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "1 verified, 0 waiting")
	data, err = os.ReadFile(cutover)
	require.NoError(t, err)
	require.Contains(t, string(data), `"verdict": "verified"`)

	// Again: nothing to do, still 0. A dry run of another rename plans and exits 0.
	code, out, stderr = cmd(migrateArgs...)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `file-src-1\s+b-1\s+source\s+1\s+succeeded`, out)
	code, out, stderr = cmd("migrate", "--from-brokers", a, "--to-brokers", b, "--rename", "file-src-(.*)=c-$1", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `file-src-1\s+c-1\s+source\s+1\s+planned`, out)
	require.Contains(t, out, `{"name":"file-src-1","target_name":"c-1","plan":{`)
	require.Contains(t, out, `"records":[{"topic":"connect-offsets","partition":13,"key":"[\"c-1\",{\"filename\":\"test.txt\"}]","value":"{\"position\":30}"}]`)

	// Refused prechecks exit 2 before anything is published: A and B the same Connect cluster.
	code, _, stderr = cmd("migrate", "--from-brokers", b, "--to-brokers", b)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "A and B are the same Connect cluster")
	t.Setenv("OFFSETAGENT_BROKERS", b)
	var offs bytes.Buffer
	require.Equal(t, 0, run([]string{"offsets", "c-1"}, strings.NewReader(""), &offs, &bytes.Buffer{}))
	require.JSONEq(t, `{"offsets":[]}`, offs.String(), "the dry run changed nothing on B")
}

// --sink-offsets defaults to translate with --mm2-source-alias, else copy; the derived migration
// id of a migration without MirrorMaker 2 does not change with the MM2 flags' defaults.
func TestSinkModeAndSelectionKey(t *testing.T) {
	tests := []struct {
		name    string
		flags   fleetFlags
		mode    string
		keyLike *fleetFlags
	}{
		{name: "copy by default", flags: fleetFlags{}, mode: "copy"},
		{name: "translate with an alias", flags: fleetFlags{mm2SourceAlias: "A"}, mode: "translate"},
		{name: "explicit mode wins", flags: fleetFlags{mm2SourceAlias: "A", sinkOffsets: "none"}, mode: "none"},
		{name: "copy key ignores MM2 defaults", flags: fleetFlags{replicationPolicy: "default", replicationSeparator: "."}, mode: "copy",
			keyLike: &fleetFlags{sinkOffsets: "copy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.mode, tc.flags.sinkMode())
			if tc.keyLike != nil {
				require.Equal(t, tc.keyLike.selectionKey(), tc.flags.selectionKey())
			}
		})
	}
	a := fleetFlags{mm2SourceAlias: "A", replicationPolicy: "default"}
	b := fleetFlags{mm2SourceAlias: "A", replicationPolicy: "identity"}
	require.NotEqual(t, a.selectionKey(), b.selectionKey(), "the policy changes what is created on B")
	f := a
	f.sinkFollowsSource = true
	require.NotEqual(t, a.selectionKey(), f.selectionKey(), "--sink-follows-source changes what is created on B")
	require.Equal(t, "\x00\x00\x00\x00\x00\x00\x00\x00translate\x00A\x00default\x00", a.selectionKey(), "without it, the key earlier versions derived")
	f.set = listFlag{"a=1", "b=2"}
	g := f
	g.sinkFollowsSource = false
	require.NotEqual(t, g.selectionKey(), f.selectionKey(), "in the JSON form too")
}

// Two selections that create different things on B never share a derived migration id: a
// flag given twice is not the same as one value holding a comma, and an empty value is not
// the same as no flag. A key of flags each given at most once is the one earlier versions
// derived, so a migration they began keeps its id.
func TestSelectionKeyUnambiguous(t *testing.T) {
	differ := []struct {
		name string
		a, b fleetFlags
	}{
		{name: "set", a: fleetFlags{set: listFlag{"a=1,b=2"}}, b: fleetFlags{set: listFlag{"a=1", "b=2"}}},
		{name: "include", a: fleetFlags{include: listFlag{"x,y"}}, b: fleetFlags{include: listFlag{"x", "y"}}},
		{name: "exclude", a: fleetFlags{exclude: listFlag{"x,y"}}, b: fleetFlags{exclude: listFlag{"x", "y"}}},
		{name: "unset", a: fleetFlags{unset: listFlag{"a,b"}}, b: fleetFlags{unset: listFlag{"a", "b"}}},
		{name: "rename", a: fleetFlags{rename: listFlag{"a=b,c=d"}}, b: fleetFlags{rename: listFlag{"a=b", "c=d"}}},
		{name: "empty include", a: fleetFlags{}, b: fleetFlags{include: listFlag{""}}},
		{name: "map-value", a: fleetFlags{}, b: fleetFlags{mapValue: listFlag{"a:9092=b:9092"}}},
		{name: "keep-a", a: fleetFlags{mapValue: listFlag{"a:9092=b:9092"}}, b: fleetFlags{mapValue: listFlag{"a:9092=b:9092"}, keepA: listFlag{"k"}}},
		{name: "value moved between flags", a: fleetFlags{include: listFlag{"x", "y"}}, b: fleetFlags{include: listFlag{"x"}, exclude: listFlag{"y"}}},
	}
	for _, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, tc.a.selectionKey(), tc.b.selectionKey())
			require.NotEqual(t, migrateIDOf(&tc.a), migrateIDOf(&tc.b))
		})
	}
	legacy := fleetFlags{fromConfigTopic: "connect-configs", fromOffsetsTopic: "connect-offsets", include: listFlag{"orders-.*"}, set: listFlag{"a=1,b=2"}}
	require.Equal(t, "connect-configs\x00connect-offsets\x00orders-.*\x00\x00\x00a=1,b=2\x00\x00\x00copy", legacy.selectionKey())
}

// The flags that only decide whether a connector can be published, or what happens on A,
// keep the migration id: re-running with them completes the same migration.
func TestSelectionKeyKeptByRerunFlags(t *testing.T) {
	base := fleetFlags{mm2SourceAlias: "A", replicationPolicy: "default", include: listFlag{"orders-.*"}}
	tests := []struct {
		name string
		edit func(f *fleetFlags)
	}{
		{name: "exact", edit: func(f *fleetFlags) { f.exact = true }},
		{name: "allow replay", edit: func(f *fleetFlags) { f.allowReplay = true }},
		{name: "target alias", edit: func(f *fleetFlags) { f.mm2TargetAlias = "B" }},
		{name: "checkpoint wait", edit: func(f *fleetFlags) { f.checkpointWait = time.Minute }},
		{name: "allow unreadable", edit: func(f *fleetFlags) { f.allowUnreadable = true }},
		{name: "allow empty", edit: func(f *fleetFlags) { f.allowEmpty = true }},
		{name: "stop source", edit: func(f *fleetFlags) { f.stopSource = true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := base
			tc.edit(&f)
			require.Equal(t, base.selectionKey(), f.selectionKey())
		})
	}
}

func migrateIDOf(f *fleetFlags) string {
	return fleet.DeriveMigrationID("cluster-A", f.selectionKey())
}
