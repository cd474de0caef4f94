package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// flagWords spell the migration library's settings, fixes and next steps as this command's
// flags: the library names them by type (fleet.Setting, fleet.Fix, fleet.Next), and only this
// command knows them as flags. Every message of the library a person reads passes through it
// (errorText, the reports' JSON, the tables).
var flagWords fleet.Words = words{}

type words struct{}

// Setting is the flag of s ("" for a setting this command does not know: words_test.go fails
// on it).
func (words) Setting(s fleet.Setting) string {
	switch s {
	case fleet.FromBrokers:
		return "--from-brokers"
	case fleet.FromConfigTopic:
		return "--from-config-topic"
	case fleet.FromOffsetsTopic:
		return "--from-offsets-topic"
	case fleet.FromConnectURL:
		return "--from-connect-url"
	case fleet.FromCommandConfig:
		return "--from-command-config"
	case fleet.FromConnectConfig:
		return "--from-connect-config"
	case fleet.AllowUnreadable:
		return "--allow-unreadable-offsets"
	case fleet.ToBrokers:
		return "--to-brokers"
	case fleet.ToConfigTopic:
		return "--to-config-topic"
	case fleet.ToOffsetsTopic:
		return "--to-offsets-topic"
	case fleet.ToConnectURL:
		return "--to-connect-url"
	case fleet.ToConnectConfig:
		return "--to-connect-config"
	case fleet.ToCommandConfig:
		return "--to-command-config"
	case fleet.RequestTopic:
		return "--request-topic"
	case fleet.ResultTopic:
		return "--result-topic"
	case fleet.StateTopic:
		return "--state-topic"
	case fleet.AllowNoAgent:
		return "--allow-no-agent"
	case fleet.MigrationID:
		return "--migration-id"
	case fleet.Include:
		return "--include"
	case fleet.Exclude:
		return "--exclude"
	case fleet.Rename:
		return "--rename"
	case fleet.Set:
		return "--set"
	case fleet.Unset:
		return "--unset"
	case fleet.MapValue:
		return "--map-value"
	case fleet.KeepA:
		return "--keep-a"
	case fleet.AllowEmpty:
		return "--allow-empty"
	case fleet.InitialState:
		return "--initial-state"
	case fleet.SinkOffsets:
		return "--sink-offsets"
	case fleet.StopSource:
		return "--stop-source"
	case fleet.SinkFollowsSource:
		return "--sink-follows-source"
	case fleet.MM2SourceAlias:
		return "--mm2-source-alias"
	case fleet.MM2TargetAlias:
		return "--mm2-target-alias"
	case fleet.ReplicationPolicy:
		return "--replication-policy"
	case fleet.ReplicationSeparator:
		return "--replication-separator"
	case fleet.CheckpointWait:
		return "--checkpoint-wait"
	case fleet.CheckpointMaxAge:
		return "--checkpoint-max-age"
	case fleet.MM2ConfigTopic:
		return "--mm2-config-topic"
	case fleet.Exact:
		return "--exact"
	case fleet.AllowReplay:
		return "--allow-replay"
	case fleet.ToStrimziCluster:
		return "--to-strimzi-cluster"
	case fleet.Manifests:
		return "--manifests"
	case fleet.StrimziNamespace:
		return "--strimzi-namespace"
	case fleet.StrimziAPIVersion:
		return "--strimzi-api-version"
	case fleet.StrimziSecret:
		return "--strimzi-secret"
	case fleet.StrimziSecretFile:
		return "--strimzi-secret-file"
	case fleet.Timeout:
		return "--timeout"
	case fleet.Grace:
		return "--grace"
	case fleet.Concurrency:
		return "--concurrency"
	case fleet.WaveSize:
		return "--wave-size"
	case fleet.VerifyTimeout:
		return "--verify-timeout"
	case fleet.CutoverReport:
		return "--cutover-report"
	case fleet.DryRun:
		return "--dry-run"
	}
	return ""
}

// Fix is f as the flags that do it ("" for a kind of fix this command does not know).
func (w words) Fix(f fleet.Fix) string {
	switch f := f.(type) {
	case fleet.SetValue:
		return fmt.Sprintf("%s %s=%s", w.Setting(fleet.Set), f.Key, f.Value)
	case fleet.UnsetKey:
		return w.Setting(fleet.Unset) + " " + f.Key
	case fleet.MapValueTo:
		return fmt.Sprintf("%s %s=%s", w.Setting(fleet.MapValue), f.From, f.To)
	case fleet.KeepAKey:
		return w.Setting(fleet.KeepA) + " " + f.Key
	case fleet.Drop:
		return fmt.Sprintf("drop the %s or %s of %s", w.Setting(fleet.Set), w.Setting(fleet.Unset), f.Key)
	case fleet.RenameOne:
		return w.Setting(fleet.Rename)
	case fleet.ExcludeOne:
		return w.Setting(fleet.Exclude)
	case fleet.Give:
		return strings.TrimSpace(w.Setting(f.Setting) + " " + f.Value)
	case fleet.Outside:
		return f.Text.Spell(w)
	}
	return ""
}

// Next is n as the command line that does it ("" for a verb this command does not know).
func (w words) Next(n fleet.Next) string {
	arg := func(i int, def string) string {
		if i < len(n.Args) && n.Args[i] != "" {
			return n.Args[i]
		}
		return def
	}
	switch n.Verb {
	case fleet.VerbPlan:
		return "offsetagent migrate " + w.Setting(fleet.DryRun)
	case fleet.VerbApply:
		return "offsetagent migrate"
	case fleet.VerbVerify:
		return "offsetagent migrate verify " + arg(0, "REPORT")
	case fleet.VerbVerifyManifests:
		return fmt.Sprintf("offsetagent migrate verify %s %s %s %s", w.Setting(fleet.Manifests), arg(0, "DIR"),
			w.Setting(fleet.ToConnectURL), arg(1, "<B's Connect REST API>"))
	case fleet.VerbRollback:
		return "offsetagent migrate rollback " + arg(0, "REPORT")
	}
	return ""
}

// errorText is err's message in this command's words.
func errorText(err error) string { return fleet.SpellError(err, flagWords) }

// sawFlagSet, when set (by tests), is given each command's FlagSet before it is parsed.
var sawFlagSet func(*flag.FlagSet)

// spellingHandler spells the migration library's log records in flagWords: a message logged
// as a fleet.Text (fleet.Warn) and attributes that are Texts or Settings.
type spellingHandler struct{ slog.Handler }

// spellingLogger is a logger of h that spells the library's records.
func spellingLogger(h slog.Handler) *slog.Logger { return slog.New(spellingHandler{h}) }

func (h spellingHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := r.Message
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if t, ok := a.Value.Any().(fleet.Text); ok && a.Key == fleet.TextKey {
			msg = t.Spell(flagWords)
			return true
		}
		attrs = append(attrs, spellAttr(a))
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	out.AddAttrs(attrs...)
	return h.Handler.Handle(ctx, out)
}

func (h spellingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	for i, a := range attrs {
		attrs[i] = spellAttr(a)
	}
	return spellingHandler{h.Handler.WithAttrs(attrs)}
}

func (h spellingHandler) WithGroup(name string) slog.Handler {
	return spellingHandler{h.Handler.WithGroup(name)}
}

// spellAttr is a with a Text, Setting or error of the library spelled in flagWords.
func spellAttr(a slog.Attr) slog.Attr {
	switch v := a.Value.Any().(type) {
	case fleet.Text:
		return slog.String(a.Key, v.Spell(flagWords))
	case fleet.Setting:
		return slog.String(a.Key, flagWords.Setting(v))
	case error:
		return slog.String(a.Key, errorText(v))
	}
	return a
}
