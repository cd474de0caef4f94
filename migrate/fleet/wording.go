package fleet

import (
	"errors"
	"log/slog"

	"github.com/offsetagent/offsetagent/internal/wording"
)

// The words the library and its caller share live in internal/wording, below mm2 (whose
// findings name settings of the run too); fleet keeps them under their names here, so that
// the stages say fleet.Textf, fleet.StopSource, fleet.Give as before.

type (
	Words      = wording.Words
	Text       = wording.Text
	Error      = wording.Error
	Setting    = wording.Setting
	Fix        = wording.Fix
	Value      = wording.Value
	SetValue   = wording.SetValue
	UnsetKey   = wording.UnsetKey
	MapValueTo = wording.MapValueTo
	KeepAKey   = wording.KeepAKey
	Drop       = wording.Drop
	RenameOne  = wording.RenameOne
	ExcludeOne = wording.ExcludeOne
	Give       = wording.Give
	Outside    = wording.Outside
	Verb       = wording.Verb
	Next       = wording.Next
)

// The settings of a run (wording.Settings).
const (
	FromBrokers          = wording.FromBrokers
	FromConfigTopic      = wording.FromConfigTopic
	FromOffsetsTopic     = wording.FromOffsetsTopic
	FromConnectURL       = wording.FromConnectURL
	FromCommandConfig    = wording.FromCommandConfig
	FromConnectConfig    = wording.FromConnectConfig
	AllowUnreadable      = wording.AllowUnreadable
	ToBrokers            = wording.ToBrokers
	ToConfigTopic        = wording.ToConfigTopic
	ToOffsetsTopic       = wording.ToOffsetsTopic
	ToConnectURL         = wording.ToConnectURL
	ToConnectConfig      = wording.ToConnectConfig
	ToCommandConfig      = wording.ToCommandConfig
	RequestTopic         = wording.RequestTopic
	ResultTopic          = wording.ResultTopic
	StateTopic           = wording.StateTopic
	AllowNoAgent         = wording.AllowNoAgent
	MigrationID          = wording.MigrationID
	Include              = wording.Include
	Exclude              = wording.Exclude
	Rename               = wording.Rename
	Set                  = wording.Set
	Unset                = wording.Unset
	MapValue             = wording.MapValue
	KeepA                = wording.KeepA
	AllowEmpty           = wording.AllowEmpty
	InitialState         = wording.InitialState
	SinkOffsets          = wording.SinkOffsets
	StopSource           = wording.StopSource
	SinkFollowsSource    = wording.SinkFollowsSource
	MM2SourceAlias       = wording.MM2SourceAlias
	MM2TargetAlias       = wording.MM2TargetAlias
	ReplicationPolicy    = wording.ReplicationPolicy
	ReplicationSeparator = wording.ReplicationSeparator
	CheckpointWait       = wording.CheckpointWait
	CheckpointMaxAge     = wording.CheckpointMaxAge
	MM2ConfigTopic       = wording.MM2ConfigTopic
	Exact                = wording.Exact
	AllowReplay          = wording.AllowReplay
	ToStrimziCluster     = wording.ToStrimziCluster
	Manifests            = wording.Manifests
	StrimziNamespace     = wording.StrimziNamespace
	StrimziAPIVersion    = wording.StrimziAPIVersion
	StrimziSecret        = wording.StrimziSecret
	StrimziSecretFile    = wording.StrimziSecretFile
	Timeout              = wording.Timeout
	Grace                = wording.Grace
	Concurrency          = wording.Concurrency
	WaveSize             = wording.WaveSize
	VerifyTimeout        = wording.VerifyTimeout
	CutoverReport        = wording.CutoverReport
	DryRun               = wording.DryRun
)

// The verbs a Next names.
const (
	VerbPlan            = wording.VerbPlan
	VerbApply           = wording.VerbApply
	VerbVerify          = wording.VerbVerify
	VerbVerifyManifests = wording.VerbVerifyManifests
	VerbRollback        = wording.VerbRollback
)

// TextKey is wording.TextKey: the log attribute of a message logged as a Text (Warn).
const TextKey = wording.TextKey

var (
	// Settings are all the settings (wording.Settings).
	Settings = wording.Settings
	// FixKinds holds one value of each kind of Fix (wording.FixKinds).
	FixKinds = wording.FixKinds
	// Verbs are all the verbs (wording.Verbs).
	Verbs = wording.Verbs
	// GoWords are the library's own words, for logs and tests (wording.GoWords).
	GoWords = wording.GoWords
)

// Textf is the Text of format and args, as fmt.Sprintf's (wording.Textf).
func Textf(format string, args ...any) Text { return wording.Textf(format, args...) }

// Plain is a Text that names no setting (wording.Plain).
func Plain(s string) Text { return wording.Plain(s) }

// Join is ts one after the other, sep between them (wording.Join).
func Join(ts []Text, sep string) Text { return wording.Join(ts, sep) }

// Errorf is the Error of format and args, as fmt.Errorf's (wording.Errorf).
func Errorf(format string, args ...any) *Error { return wording.Errorf(format, args...) }

// SpellError is err's message in w's words (wording.SpellError).
func SpellError(err error, w Words) string { return wording.SpellError(err, w) }

// SpellIn makes every Text reachable from v marshal as JSON in w's words (wording.SpellIn).
func SpellIn(v any, w Words) { wording.SpellIn(v, w) }

// Warn logs t at level Warn (wording.Warn).
func Warn(l *slog.Logger, t Text, args ...any) { wording.Warn(l, t, args...) }

// Lit is a Value that is the literal s (wording.Lit).
func Lit(s string) Value { return wording.Lit(s) }

// Hint is a Value the reader fills in, described by s (wording.Hint).
func Hint(s string) Value { return wording.Hint(s) }

// ErrPrecheck marks a refusal before anything was stopped on A or published to B: bad flags,
// an unreachable cluster, a failed precheck. The caller should exit without retrying (status 2).
var ErrPrecheck = errors.New("precheck failed")

// Precheckf is an error wrapping ErrPrecheck with a message, whose Setting, Fix and Next
// arguments are spelled as Text's.
func Precheckf(format string, args ...any) error {
	return &Error{Text: Textf("%v: "+format, append([]any{ErrPrecheck}, args...)...), Err: ErrPrecheck}
}
