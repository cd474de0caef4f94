package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestFlagWordsSpellEverySetting: every setting, kind of fix and verb of the library is
// spelled, every setting as a flag some command registers.
func TestFlagWordsSpellEverySetting(t *testing.T) {
	registered := registeredFlags(t)
	for _, s := range fleet.Settings {
		w := flagWords.Setting(s)
		require.NotEmpty(t, w, "setting %q is not spelled", s)
		require.True(t, registered[w[2:]], "setting %q is spelled %s, which no command registers", s, w)
	}
	for _, f := range fleet.FixKinds {
		require.NotEmpty(t, flagWords.Fix(f), "fix %T is not spelled", f)
	}
	for _, v := range fleet.Verbs {
		require.NotEmpty(t, flagWords.Next(fleet.Next{Verb: v}), "verb %q is not spelled", v)
	}
}

func TestFlagWordsSpellText(t *testing.T) {
	tests := []struct {
		name string
		text fleet.Text
		want string
	}{
		{"setting", fleet.Textf("%s needs %s", fleet.StopSource, fleet.FromConnectURL), "--stop-source needs --from-connect-url"},
		{"fix", fleet.Textf("give %s", fleet.SetValue{Key: "k", Value: fleet.Hint("B's value")}), "give --set k=<B's value>"},
		{"give", fleet.Textf("use %s", fleet.Give{Setting: fleet.ReplicationPolicy, Value: "identity"}), "use --replication-policy identity"},
		{"next", fleet.Textf("then %s", fleet.Next{Verb: fleet.VerbVerify, Args: []string{"r.json"}}), "then offsetagent migrate verify r.json"},
		{"nested", fleet.Textf("a: %v", fleet.Textf("%s", fleet.KeepA)), "a: --keep-a"},
		{"manifests", fleet.Textf("Then check: %s", fleet.Next{Verb: fleet.VerbVerifyManifests, Args: []string{"out/manifests"}}),
			"Then check: offsetagent migrate verify --manifests out/manifests --to-connect-url <B's Connect REST API>"},
		{"timeout", fleet.Textf("the run's %s ran out", fleet.Give{Setting: fleet.Timeout, Value: "5m0s"}), "the run's --timeout 5m0s ran out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.text.Spell(flagWords))
		})
	}
}

func TestErrorTextSpellsWrappedErrors(t *testing.T) {
	inner := fleet.Errorf("%s %q: want RUNNING, PAUSED or STOPPED", fleet.InitialState, "x")
	err := fleet.Errorf("check: %w", inner)
	require.Equal(t, `check: InitialState "x": want RUNNING, PAUSED or STOPPED`, err.Error())
	require.Equal(t, `check: --initial-state "x": want RUNNING, PAUSED or STOPPED`, errorText(err))
	require.ErrorIs(t, fleet.Precheckf("%s", fleet.ToBrokers), fleet.ErrPrecheck)
	require.Equal(t, "precheck failed: --to-brokers", errorText(fleet.Precheckf("%s", fleet.ToBrokers)))
}

// The library logs its messages and attributes typed (fleet.Warn, fleet.Text, fleet.Setting,
// *fleet.Error); the handler of this command spells them as flags and keeps the rest.
func TestSpellingLoggerSpellsLibraryRecords(t *testing.T) {
	var out strings.Builder
	logger := spellingLogger(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fleet.Warn(logger.With("setting", fleet.AllowEmpty), fleet.Textf("sink offsets left out (%s)", fleet.AllowUnreadable),
		"connector", "snk", "err", fleet.Errorf("give %s", fleet.FromConnectURL), "flag", fleet.Textf("%s %q matches nothing", fleet.Include, "x"))
	logger.Info("not shown")
	got := out.String()
	require.Contains(t, got, `msg="sink offsets left out (--allow-unreadable-offsets)"`)
	require.Contains(t, got, "setting=--allow-empty")
	require.Contains(t, got, `err="give --from-connect-url"`)
	require.Contains(t, got, `flag="--include \"x\" matches nothing"`)
	require.Contains(t, got, "connector=snk")
	require.NotContains(t, got, fleet.TextKey)
	require.NotContains(t, got, "not shown")
}

// The --report JSON is spelled for its reader: an entry's message, its hazards' messages and
// fixes, its warnings and the run's next step name flags, in today's shape (strings).
func TestReportJSONSpellsSettingsAsFlags(t *testing.T) {
	rep := &apply.Report{MigrationID: "m-1", Next: fleet.Textf("then %s", fleet.Next{Verb: fleet.VerbVerifyManifests, Args: []string{"dir"}}),
		Connectors: []*apply.Entry{{Name: "snk", TargetName: "snk", Outcome: apply.OutcomeSkipped,
			Message:  fleet.Textf("pipeline with source %q: %s not given", "src", fleet.SinkFollowsSource),
			Warnings: []fleet.Text{fleet.Textf("or give %s", fleet.StrimziSecret)},
			Hazards: []hazard.Hazard{{Check: hazard.HazardPointsAtA, Key: "k", Refuse: true, Message: fleet.Plain("names A"),
				Fix: fleet.Textf("rewrite it with %s; or %s", fleet.MapValueTo{From: "a:9092", To: fleet.Hint("B's bootstrap servers")},
					fleet.KeepAKey{Key: "k"})}}}}}
	path := filepath.Join(t.TempDir(), "report.json")
	finishReport(rep, path, io.Discard, io.Discard) // 1: a connector was skipped
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var got struct {
		Next       string `json:"next"`
		Connectors []struct {
			Message  string   `json:"message"`
			Warnings []string `json:"warnings"`
			Hazards  []struct {
				Message, Fix string
			} `json:"hazards"`
		} `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, "then offsetagent migrate verify --manifests dir --to-connect-url <B's Connect REST API>", got.Next)
	require.Equal(t, `pipeline with source "src": --sink-follows-source not given`, got.Connectors[0].Message)
	require.Equal(t, []string{"or give --strimzi-secret"}, got.Connectors[0].Warnings)
	require.Equal(t, "names A", got.Connectors[0].Hazards[0].Message)
	require.Equal(t, "rewrite it with --map-value a:9092=<B's bootstrap servers>; or --keep-a k", got.Connectors[0].Hazards[0].Fix)
}

// TestMM2FindingsSpelledAsFlags: MirrorMaker 2's health findings name the settings of the run
// by type (mm2 imports no flag name), and read, in this command's words, as they always did.
// Here MM2's config was not found on B and B has no checkpoints topic.
func TestMM2FindingsSpelledAsFlags(t *testing.T) {
	b := kafkatest.Kfake(t, kfake.SeedTopics(1, "A.orders"))
	tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: b.ListenAddrs()}, Policy: mm2.Policy{SourceAlias: "A"}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs, err := tr.Health(ctx, "connect-s", map[mm2.TopicPartition]int64{{Topic: "orders", Partition: 0}: 7},
		mm2.HealthCheck{Setup: mm2.Setup{Looked: []string{"mm2-configs.A.internal: no such topic"}}})
	require.NoError(t, err)
	var said []string
	for _, f := range fs {
		said = append(said, f.Message.Spell(flagWords), f.Fix.Spell(flagWords))
	}
	require.Contains(t, said, "name the Connect config topic that holds MirrorMaker 2's connectors with --mm2-config-topic")
	require.Contains(t, said, "MirrorMaker 2's checkpoints topic A.checkpoints.internal does not exist on B: no checkpoint connector "+
		"ever ran for source alias A (or --mm2-source-alias or --replication-separator is not MM2's)")
}
