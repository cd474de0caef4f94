package wording

// Setting names one of a run's settings as the library knows it; the caller spells it for a
// reader (cmd/offsetagent as a flag). Its value is the key a plan's settings use.
type Setting string

// The settings of a run.
const (
	FromBrokers       Setting = "from_brokers"
	FromConfigTopic   Setting = "from_config_topic"
	FromOffsetsTopic  Setting = "from_offsets_topic"
	FromConnectURL    Setting = "from_connect_url"
	FromCommandConfig Setting = "from_command_config"
	FromConnectConfig Setting = "from_connect_config"
	AllowUnreadable   Setting = "allow_unreadable_offsets"

	ToBrokers       Setting = "to_brokers"
	ToConfigTopic   Setting = "to_config_topic"
	ToOffsetsTopic  Setting = "to_offsets_topic"
	ToConnectURL    Setting = "to_connect_url"
	ToConnectConfig Setting = "to_connect_config"
	ToCommandConfig Setting = "to_command_config"
	RequestTopic    Setting = "request_topic"
	ResultTopic     Setting = "result_topic"
	StateTopic      Setting = "state_topic"
	AllowNoAgent    Setting = "allow_no_agent"
	MigrationID     Setting = "migration_id"

	Include           Setting = "include"
	Exclude           Setting = "exclude"
	Rename            Setting = "rename"
	Set               Setting = "set"
	Unset             Setting = "unset"
	MapValue          Setting = "map_value"
	KeepA             Setting = "keep_a"
	AllowEmpty        Setting = "allow_empty"
	InitialState      Setting = "initial_state"
	SinkOffsets       Setting = "sink_offsets"
	StopSource        Setting = "stop_source"
	SinkFollowsSource Setting = "sink_follows_source"

	MM2SourceAlias       Setting = "mm2_source_alias"
	MM2TargetAlias       Setting = "mm2_target_alias"
	ReplicationPolicy    Setting = "replication_policy"
	ReplicationSeparator Setting = "replication_separator"
	CheckpointWait       Setting = "checkpoint_wait"
	CheckpointMaxAge     Setting = "checkpoint_max_age"
	MM2ConfigTopic       Setting = "mm2_config_topic"
	Exact                Setting = "exact"
	AllowReplay          Setting = "allow_replay"

	ToStrimziCluster  Setting = "to_strimzi_cluster"
	Manifests         Setting = "manifests"
	StrimziNamespace  Setting = "strimzi_namespace"
	StrimziAPIVersion Setting = "strimzi_api_version"
	StrimziSecret     Setting = "strimzi_secret"
	StrimziSecretFile Setting = "strimzi_secret_file"

	Timeout       Setting = "timeout"
	Grace         Setting = "grace"
	Concurrency   Setting = "concurrency"
	WaveSize      Setting = "wave_size"
	VerifyTimeout Setting = "verify_timeout"
	CutoverReport Setting = "cutover_report"
	DryRun        Setting = "dry_run"
)

// Settings are all the settings, in the order above: a caller that spells them checks that
// it spells each.
var Settings = []Setting{
	FromBrokers, FromConfigTopic, FromOffsetsTopic, FromConnectURL, FromCommandConfig, FromConnectConfig, AllowUnreadable,
	ToBrokers, ToConfigTopic, ToOffsetsTopic, ToConnectURL, ToConnectConfig, ToCommandConfig,
	RequestTopic, ResultTopic, StateTopic, AllowNoAgent, MigrationID,
	Include, Exclude, Rename, Set, Unset, MapValue, KeepA, AllowEmpty, InitialState, SinkOffsets, StopSource, SinkFollowsSource,
	MM2SourceAlias, MM2TargetAlias, ReplicationPolicy, ReplicationSeparator, CheckpointWait, CheckpointMaxAge, MM2ConfigTopic, Exact, AllowReplay,
	ToStrimziCluster, Manifests, StrimziNamespace, StrimziAPIVersion, StrimziSecret, StrimziSecretFile,
	Timeout, Grace, Concurrency, WaveSize, VerifyTimeout, CutoverReport, DryRun,
}

// Fix is one way to do something about a finding. A list of Fixes are alternatives.
type Fix interface{ fix() }

// Value is what goes into a setting: a literal, or, when the library cannot know it, a Hint
// of what goes there ("B's bootstrap servers, as B's workers reach them").
type Value struct{ Literal, Hint string }

// Lit is a Value that is the literal s.
func Lit(s string) Value { return Value{Literal: s} }

// Hint is a Value the reader fills in, described by s.
func Hint(s string) Value { return Value{Hint: s} }

// String is the literal, or the hint in angle brackets.
func (v Value) String() string {
	if v.Hint != "" {
		return "<" + v.Hint + ">"
	}
	return v.Literal
}

type (
	// SetValue sets Key to Value in the configs for B.
	SetValue struct {
		Key   string
		Value Value
	}
	// UnsetKey removes Key from the configs for B.
	UnsetKey struct{ Key string }
	// MapValueTo makes every config value From (a list in any order) To.
	MapValueTo struct {
		From string
		To   Value
	}
	// KeepAKey lets Key keep pointing at A.
	KeepAKey struct{ Key string }
	// Drop drops the edit of Key (a set or an unset) so that A's value stays.
	Drop struct{ Key string }
	// RenameOne gives a connector another name on B; Name is "" when any does.
	RenameOne struct{ Name string }
	// ExcludeOne leaves a connector out of the run; Name is "" when any does.
	ExcludeOne struct{ Name string }
	// Give gives Setting, with Value when it takes one.
	Give struct {
		Setting Setting
		Value   string
	}
	// Outside is done outside offsetagent: a setting of MirrorMaker 2, a command on B's
	// cluster, a plugin to install.
	Outside struct{ Text Text }
)

func (SetValue) fix()   {}
func (UnsetKey) fix()   {}
func (MapValueTo) fix() {}
func (KeepAKey) fix()   {}
func (Drop) fix()       {}
func (RenameOne) fix()  {}
func (ExcludeOne) fix() {}
func (Give) fix()       {}
func (Outside) fix()    {}

// FixKinds holds one value of each kind of Fix: a caller that spells fixes checks that it
// spells each.
var FixKinds = []Fix{SetValue{}, UnsetKey{}, MapValueTo{}, KeepAKey{}, Drop{}, RenameOne{}, ExcludeOne{}, Give{Setting: AllowReplay}, Outside{Text: Plain("install the plugin on B")}}

// Verb is one of the migration's commands.
type Verb string

// The verbs a Next names.
const (
	VerbPlan            Verb = "plan"
	VerbApply           Verb = "apply"
	VerbVerify          Verb = "verify"
	VerbVerifyManifests Verb = "verify_manifests"
	VerbRollback        Verb = "rollback"
)

// Verbs are all the verbs, for the same check as Settings.
var Verbs = []Verb{VerbPlan, VerbApply, VerbVerify, VerbVerifyManifests, VerbRollback}

// Next is a command to run next: Verb with Args (a report's or a directory's path, or a
// Value's hint in angle brackets).
type Next struct {
	Verb Verb
	Args []string
}
