package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// FileVersion is the schema version of the plan file this version writes and reads.
const FileVersion = 1

// fileHeader is the comment the plan file starts with.
const fileHeader = "# offsetagent migration plan: review it, commit it, then `offsetagent migrate apply <this file>`\n"

// File is a migration plan as written for review and read back by apply: who A and B are, the
// settings and selection the run was planned with, and per connector its config on B with every
// edit shown against A's, the fingerprint of A's config, the offsets read at plan time, the
// hazards and why it does not move. It never holds a secret value in clear: a secret key's
// value is events.HiddenValue, a secret --set is marked ValueAtApply, and the fingerprint hashes
// "<secret>" in its place (fingerprint.go).
type File struct {
	Version     int       `yaml:"version"`
	MigrationID string    `yaml:"migration_id"`
	Created     time.Time `yaml:"created"`
	CreatedBy   string    `yaml:"created_by,omitempty"`
	From        Side      `yaml:"from"`
	To          Side      `yaml:"to"`
	// Settings and Selection are what the run was planned with, as the caller gives them:
	// apply runs with the same.
	Settings   Settings         `yaml:"settings"`
	Selection  SelectionFile    `yaml:"selection"`
	Summary    Summary          `yaml:"summary"`
	Connectors []*FileConnector `yaml:"connectors"`
	Strimzi    *StrimziSettings `yaml:"strimzi,omitempty"`
}

// Side is a Connect cluster as the plan saw it (fleet.Cluster, with its addresses); never
// credentials, and a URL without its userinfo.
type Side struct {
	KafkaClusterID string   `yaml:"kafka_cluster_id"`
	Brokers        []string `yaml:"brokers,omitempty"`
	ConfigTopic    string   `yaml:"config_topic,omitempty"`
	OffsetsTopic   string   `yaml:"offsets_topic,omitempty"`
	RequestTopic   string   `yaml:"request_topic,omitempty"`
	ResultTopic    string   `yaml:"result_topic,omitempty"`
	StateTopic     string   `yaml:"state_topic,omitempty"`
	ConnectURL     string   `yaml:"connect_url,omitempty"`
	ConnectVersion string   `yaml:"connect_version,omitempty"`
	ConnectCommit  string   `yaml:"connect_commit,omitempty"`
}

// Settings are the run's settings that decide what apply does, in the caller's terms.
type Settings struct {
	StopSource           bool          `yaml:"stop_source"`
	InitialState         string        `yaml:"initial_state"`
	SinkOffsets          string        `yaml:"sink_offsets"`
	SinkFollowsSource    bool          `yaml:"sink_follows_source"`
	AllowEmpty           bool          `yaml:"allow_empty"`
	AllowUnreadable      bool          `yaml:"allow_unreadable"`
	AllowNoAgent         bool          `yaml:"allow_no_agent"`
	MM2SourceAlias       string        `yaml:"mm2_source_alias"`
	MM2TargetAlias       string        `yaml:"mm2_target_alias"`
	ReplicationPolicy    string        `yaml:"replication_policy"`
	ReplicationSeparator string        `yaml:"replication_separator"`
	Exact                bool          `yaml:"exact"`
	AllowReplay          bool          `yaml:"allow_replay"`
	CheckpointMaxAge     time.Duration `yaml:"checkpoint_max_age"`
	MM2ConfigTopic       []string      `yaml:"mm2_config_topic"`
}

// StrimziSettings say the plan moves into an operator-managed B.
type StrimziSettings struct {
	Cluster    string `yaml:"cluster"`
	Namespace  string `yaml:"namespace,omitempty"`
	APIVersion string `yaml:"api_version,omitempty"`
	Manifests  string `yaml:"manifests"`
	Secret     string `yaml:"secret,omitempty"`
}

// SelectionFile is the selection and edits as given; a --set of a secret key has no value.
type SelectionFile struct {
	Include  []string  `yaml:"include"`
	Exclude  []string  `yaml:"exclude"`
	Rename   []string  `yaml:"rename"`
	Set      []SetEdit `yaml:"set"`
	Unset    []string  `yaml:"unset"`
	MapValue []string  `yaml:"map_value"`
	KeepA    []string  `yaml:"keep_a"`
}

// SetEdit is one --set: its value, or ValueAtApply for a secret key, whose value apply must be
// given again.
type SetEdit struct {
	Key          string `yaml:"key"`
	Value        string `yaml:"value,omitempty"`
	ValueAtApply bool   `yaml:"value_at_apply,omitempty"`
}

// Summary counts the plan's connectors.
type Summary struct {
	Selected int `yaml:"selected"`
	ToMove   int `yaml:"to_move"`
	Refused  int `yaml:"refused"`
	Warnings int `yaml:"warnings"`
}

// FileConnector is one selected connector in the plan file.
type FileConnector struct {
	Name        string `yaml:"name"`
	Target      string `yaml:"target"`
	Type        string `yaml:"type"`
	Class       string `yaml:"class,omitempty"`
	StateOnA    string `yaml:"state_on_a,omitempty"`
	TargetState string `yaml:"target_state,omitempty"`
	// FingerprintOnA is the fingerprint of A's config (Fingerprint); ConfigRecordOnA the offset
	// of its live connector record in A's config topic (nil when A is read through REST only:
	// then SecretChangeDetected is false, a change of a secret value alone is not seen).
	FingerprintOnA       string        `yaml:"fingerprint_on_a"`
	ConfigRecordOnA      *RecordAt     `yaml:"config_record_on_a,omitempty"`
	SecretChangeDetected bool          `yaml:"secret_change_detected"`
	ExistsOnB            *bool         `yaml:"exists_on_b"`
	ConfigOnB            yaml.Node     `yaml:"config_on_b"`
	SecretKeys           []string      `yaml:"secret_keys"`
	Edits                []FileEdit    `yaml:"edits"`
	Rekey                *FileRekey    `yaml:"rekey"`
	Sink                 *FileSink     `yaml:"sink,omitempty"`
	OffsetsNow           *OffsetsNow   `yaml:"offsets_now,omitempty"`
	AgentPlan            *AgentPlan    `yaml:"agent_plan,omitempty"`
	Translation          *Translation  `yaml:"translation,omitempty"`
	Hazards              []FileHazard  `yaml:"hazards"`
	Warnings             []string      `yaml:"warnings"`
	Refused              string        `yaml:"refused"`
	configOnB            []ConfigValue `yaml:"-"`
}

// ConfigValue is one key of a config as the plan shows it (Null: the key holds null).
type ConfigValue struct {
	Key, Value string
	Null       bool
}

// RecordAt is where a connector's live config record is.
type RecordAt struct {
	Topic     string `yaml:"topic"`
	Partition int    `yaml:"partition"`
	Offset    int64  `yaml:"offset"`
}

// FileEdit is one difference of config_on_b from A's config: From and To nil for absent.
type FileEdit struct {
	Key  string  `yaml:"key"`
	From *string `yaml:"from"`
	To   *string `yaml:"to"`
	By   string  `yaml:"by"`
	Rule string  `yaml:"rule,omitempty"`
}

// Edit kinds (FileEdit.By).
const (
	ByRename            = "rename"
	BySet               = "set"
	ByUnset             = "unset"
	ByMapValue          = "map_value"
	ByMM2Policy         = "mm2_policy"
	ByRestoreTopicNames = "restore_topic_names"
	ByKubernetesName    = "kubernetes_name"
)

// FileRekey is a Debezium connector's logical name changed on B (fleet.Rekey).
type FileRekey struct {
	Key  string `yaml:"key"`
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

// FileSink is a sink's groups and MirrorMaker 2's stance on it.
type FileSink struct {
	GroupOnA       string   `yaml:"group_on_a"`
	GroupOnB       string   `yaml:"group_on_b"`
	FollowsSources []string `yaml:"follows_sources"`
	MM2Blocked     bool     `yaml:"mm2_blocked"`
}

// OffsetsNow are the offsets read at plan time; apply reads them again at the stop.
type OffsetsNow struct {
	Partitions []FileOffset `yaml:"partitions"`
}

// FileOffset is one partition's offset, each map as JSON text.
type FileOffset struct {
	Partition string `yaml:"partition"`
	Offset    string `yaml:"offset"`
}

// Translation is a sink's offsets across MirrorMaker 2 as the plan translated them, from the
// offsets read now (apply translates again, from the offsets read at the stop): per partition
// A's committed offset, the offset for B and its verdict.
type Translation struct {
	Policy     string                 `yaml:"policy"`
	Partitions []PartitionTranslation `yaml:"partitions"`
}

// PartitionTranslation is one partition of a Translation: the topic-partition on A and on B
// (renamed by the policy), the group's committed offset on A, the offset for B (nil when the
// verdict is missing: B's group gets none), the verdict (exact, replay, missing), the most
// records delivered again from it (when known) and why, for a replay or a missing one.
type PartitionTranslation struct {
	OnA         string `yaml:"on_a"`
	OnB         string `yaml:"on_b"`
	CommittedA  int64  `yaml:"committed_on_a"`
	OffsetB     *int64 `yaml:"offset_on_b"`
	Verdict     string `yaml:"verdict"`
	ReplayBound *int64 `yaml:"replay_bound,omitempty"`
	Reason      string `yaml:"reason,omitempty"`
}

// AgentPlan summarizes what B's agent planned for the connector (a dry run).
type AgentPlan struct {
	Outcome       string   `yaml:"outcome"`
	ConfigRecords []string `yaml:"config_records,omitempty"`
	OffsetRecords int      `yaml:"offset_records,omitempty"`
	GroupOffsets  int      `yaml:"group_offsets,omitempty"`
	Message       string   `yaml:"message,omitempty"`
}

// FileHazard is one hazard found (hazard.Hazard).
type FileHazard struct {
	Check   string `yaml:"check"`
	Key     string `yaml:"key,omitempty"`
	Refuse  bool   `yaml:"refuse"`
	Message string `yaml:"message"`
	Fix     string `yaml:"fix,omitempty"`
}

// ConfigOnBValues is config_on_b in its order.
func (c *FileConnector) ConfigOnBValues() []ConfigValue { return c.configOnB }

// SetConfigOnB sets config_on_b (values already hidden where secret).
func (c *FileConnector) SetConfigOnB(cfg []ConfigValue) {
	c.configOnB = slices.Clone(cfg)
	n := yaml.Node{Kind: yaml.MappingNode}
	for _, kv := range cfg {
		k := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv.Key}
		v := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv.Value}
		if kv.Null {
			v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		n.Content = append(n.Content, &k, &v)
	}
	c.ConfigOnB = n
}

// readConfigOnB reads config_on_b's node into configOnB, keeping the order.
func (c *FileConnector) readConfigOnB() error {
	n := c.ConfigOnB
	c.configOnB = nil
	switch n.Kind {
	case 0:
		return nil
	case yaml.MappingNode:
	default:
		return fmt.Errorf("connector %q: config_on_b is not a map", c.Name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return fmt.Errorf("connector %q: config_on_b holds a value that is not a string at line %d", c.Name, k.Line)
		}
		c.configOnB = append(c.configOnB, ConfigValue{Key: k.Value, Value: v.Value, Null: v.Tag == "!!null"})
	}
	return nil
}

// Write writes f to path, created or truncated readable and writable by its owner only
// (0600), also when it existed with a wider mode: a plan names the fleet and its settings.
func (f *File) Write(path string) error {
	var buf bytes.Buffer
	if err := f.Encode(&buf); err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := file.Chmod(0o600); err != nil {
		_ = file.Close()
		return fmt.Errorf("make plan %s private: %w", path, err)
	}
	if _, err := file.Write(buf.Bytes()); err != nil {
		_ = file.Close()
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	return nil
}

// Encode writes f as YAML, the header comment first.
func (f *File) Encode(w io.Writer) error {
	if f.Version == 0 {
		f.Version = FileVersion
	}
	if _, err := io.WriteString(w, fileHeader); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	return enc.Close()
}

// ErrPlanVersion is wrapped by Read's error for a plan of another schema version.
var ErrPlanVersion = errors.New("plan file of another schema version")

// Read reads the plan file at path, strictly: a field this version does not know, or another
// schema version, is refused.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	f, err := Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return f, nil
}

// Decode reads a plan file from r (Read).
func Decode(r io.Reader) (*File, error) {
	// The version first, so that a newer schema is refused as such, not by its new fields.
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var v struct {
		Version int `yaml:"version"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not a plan file: %w", err)
	}
	if v.Version != FileVersion {
		return nil, fmt.Errorf("%w: version %d, this offsetagent reads version %d", ErrPlanVersion, v.Version, FileVersion)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a plan file of version %d: %w", FileVersion, err)
	}
	for _, c := range f.Connectors {
		if err := c.readConfigOnB(); err != nil {
			return nil, err
		}
	}
	return &f, nil
}
