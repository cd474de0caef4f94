package strimzi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// A Connect cluster that the Strimzi operator runs with strimzi.io/use-connector-resources:
// "true" belongs to the operator: at each reconciliation it deletes, through the REST API,
// every connector that no KafkaConnector resource declares. A migration into it therefore
// places each connector's offsets on B through B's agent (requests with "create":
// "offsets-only"), and writes one KafkaConnector manifest per connector; applying them
// (kubectl apply -f DIR, or a commit that Argo CD or Flux syncs) makes the operator create
// the connectors with POST /connectors, and they start at the offsets placed.

// Target makes Migrate migrate into a Connect cluster the Strimzi operator manages.
type Target struct {
	// Cluster is the KafkaConnect resource's name: the strimzi.io/cluster label of every
	// manifest.
	Cluster string
	// Dir is where the manifests go (created if missing): <name>.yaml per connector, and
	// PlacedFile, the offsets placed, which VerifyStrimzi reads.
	Dir string
	// Namespace, when set, is the manifests' metadata.namespace.
	Namespace string
	// APIVersion is "v1" (default: Strimzi serves it from 0.49 on, and from 1.0 on nothing
	// else) or "v1beta2" (served from 0.22 to 0.51, for older operators).
	APIVersion string
	// Secret, "NAMESPACE/NAME", names a Kubernetes Secret: every config value that would be
	// a secret in clear text in a manifest is written as a reference to one of its keys,
	// ${secrets:NAMESPACE/NAME:<connector>.<config key>}, which Strimzi's
	// KubernetesSecretConfigProvider resolves, and the values go to SecretFile, a Secret
	// manifest outside Dir (Dir usually goes to Git). In a value with placeholders, each part
	// in clear text is referenced in its place instead (clearParts, reference). "" inlines
	// the values, with a warning.
	Secret string
	// SecretFile is where the Secret manifest goes (with Secret; not inside Dir).
	SecretFile string
	// Words spell the warnings a manifest's comments carry for its reader (nil: fleet.GoWords).
	Words fleet.Words
}

// Strimzi API versions of KafkaConnector.
const (
	StrimziV1beta2 = "v1beta2"
	StrimziV1      = "v1"
)

// PlacedFile is the file in the manifests directory that records, per connector, the state
// and offsets placed. Its extension is none that kubectl, Argo CD or Flux read as a
// manifest (.yaml, .yml, .json), so the directory applies as it is.
const PlacedFile = "offsetagent-placed.jsonl"

// Validate checks the target before anything is read or published.
func (s *Target) Validate() []fleet.Text {
	var errs []fleet.Text
	if s.APIVersion == "" {
		s.APIVersion = StrimziV1
	}
	if s.APIVersion != StrimziV1beta2 && s.APIVersion != StrimziV1 {
		errs = append(errs, fleet.Textf("%s %q: v1beta2 or v1", fleet.StrimziAPIVersion, s.APIVersion))
	}
	// The cluster's name is a label value: at most 63 characters.
	if len(s.Cluster) > 63 || !handlers.IsKubernetesName(s.Cluster) || strings.Contains(s.Cluster, ".") {
		errs = append(errs, fleet.Textf("%s %q: the name of a KafkaConnect resource (lowercase letters, digits and '-', at most 63)", fleet.ToStrimziCluster, s.Cluster))
	}
	if s.Namespace != "" && (len(s.Namespace) > 63 || !handlers.IsKubernetesName(s.Namespace) || strings.Contains(s.Namespace, ".")) {
		errs = append(errs, fleet.Textf("%s %q: not a Kubernetes namespace name", fleet.StrimziNamespace, s.Namespace))
	}
	if s.Dir == "" {
		errs = append(errs, fleet.Textf("%s needs %s DIR", fleet.ToStrimziCluster, fleet.Manifests))
	}
	return append(errs, s.validateSecret()...)
}

// validateSecret checks Secret and SecretFile.
func (s *Target) validateSecret() []fleet.Text {
	switch {
	case s.Secret == "" && s.SecretFile == "":
		return nil
	case s.Secret == "":
		return []fleet.Text{fleet.Textf("%s goes with %s NAMESPACE/NAME", fleet.StrimziSecretFile, fleet.StrimziSecret)}
	}
	ns, name, ok := strings.Cut(s.Secret, "/")
	if !ok || len(ns) > 63 || !handlers.IsKubernetesName(ns) || strings.Contains(ns, ".") || !handlers.IsKubernetesName(name) {
		return []fleet.Text{fleet.Textf("%s %q: NAMESPACE/NAME of a Kubernetes Secret", fleet.StrimziSecret, s.Secret)}
	}
	if s.SecretFile == "" {
		return []fleet.Text{fleet.Textf("%s needs %s FILE: where the Secret manifest with the values goes (not inside %s)", fleet.StrimziSecret, fleet.StrimziSecretFile, fleet.Manifests)}
	}
	if inside(s.Dir, s.SecretFile) {
		return []fleet.Text{fleet.Textf("%s %s is inside %s %s, which goes to Git and is applied as it is: put it elsewhere", fleet.StrimziSecretFile, s.SecretFile, fleet.Manifests, s.Dir)}
	}
	return nil
}

// inside reports whether path is dir or under it.
func inside(dir, path string) bool {
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// KubernetesName turns a connector name into a KafkaConnector's metadata.name (a DNS-1123
// subdomain; the operator names the connector after it): lowercase, every other character
// than a letter, digit, '-' or '.' replaced by '-', labels trimmed of '-' and empty labels
// dropped, cut to 253 characters. A name with nothing left becomes "connector".
func KubernetesName(name string) string {
	if handlers.IsKubernetesName(name) {
		return name
	}
	var labels []string
	for _, l := range strings.Split(strings.ToLower(name), ".") {
		var b strings.Builder
		for _, r := range l {
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
		if t := strings.Trim(collapseDashes.ReplaceAllString(b.String(), "-"), "-"); t != "" {
			labels = append(labels, t)
		}
	}
	out := strings.Join(labels, ".")
	if len(out) > 253 {
		out = strings.TrimRight(out[:253], "-.")
	}
	if out == "" {
		return "connector"
	}
	return out
}

var collapseDashes = regexp.MustCompile(`-{2,}`)

// manifest is a KafkaConnector resource, its fields in the order kubectl shows them.
type manifest struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   manifestMeta `yaml:"metadata"`
	Spec       manifestSpec `yaml:"spec"`
}

type manifestMeta struct {
	Name        quoted            `yaml:"name"`
	Namespace   quoted            `yaml:"namespace,omitempty"`
	Labels      map[quoted]quoted `yaml:"labels"`
	Annotations map[quoted]quoted `yaml:"annotations,omitempty"`
}

type manifestSpec struct {
	Class    quoted     `yaml:"class"`
	TasksMax *int       `yaml:"tasksMax,omitempty"`
	Version  quoted     `yaml:"version,omitempty"`
	State    quoted     `yaml:"state"`
	Config   *yaml.Node `yaml:"config"`
}

// quoted is a string a manifest writes double-quoted. Kubernetes reads manifests with
// sigs.k8s.io/yaml, by YAML 1.1's rules: a plain on, off, yes, no, y or n is a boolean there,
// 012 an octal number, and the API server refuses it for a string field or, in spec.config,
// hands Connect another value than the one written. yaml.v3 writes such strings plain (YAML
// 1.2 reads them as strings); quoted, every reader agrees.
type quoted string

// MarshalYAML writes q double-quoted.
func (q quoted) MarshalYAML() (any, error) { return quotedNode(string(q)), nil }

// IsZero makes omitempty leave out an empty q.
func (q quoted) IsZero() bool { return q == "" }

func quotedNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

// specKeys are the config keys Strimzi takes from the spec rather than spec.config.
var specKeys = map[string]bool{"name": true, "connector.class": true, "tasks.max": true, "connector.plugin.version": true}

// Connector is one connector whose KafkaConnector manifest is written: its name on A
// (Name) and on B (Target), its type, the state and config its manifest declares, and the
// offsets placed for it.
type Connector struct {
	Name, Target, Type, State string
	Config                    events.Config
	Offsets                   []events.ConnectorOffset
}

// Written is what became of one connector's manifest: the path it was written to and
// its warnings, or why it was not written (Err).
type Written struct {
	Path     string
	Warnings []fleet.Text
	Err      error
}

// Manifest builds the KafkaConnector manifest of connector c for the target, and the warnings it
// raises: each config value that holds a secret in clear text, whole or in part, without
// Secret (a KafkaConnector is not a Secret; reference one through a config provider,
// ${secrets:...}, ${env:...} or ${file:...}, as A's placeholders are kept), and a tasks.max
// that is not a number.
func (s *Target) Manifest(c Connector, migrationID string, reg *connectors.Registry) ([]byte, []fleet.Text, error) {
	data, warnings, _, err := s.manifest(c, migrationID, reg, nil)
	return data, warnings, err
}

// manifest is Manifest, and with Secret the values it references in the Secret, by key; taken
// are the keys other manifests reference.
func (s *Target) manifest(c Connector, migrationID string, reg *connectors.Registry, taken map[string]string) ([]byte, []fleet.Text, map[string]string, error) {
	var warnings []fleet.Text
	secrets := map[string]string{}
	m := manifest{APIVersion: "kafka.strimzi.io/" + s.APIVersion, Kind: "KafkaConnector",
		Metadata: manifestMeta{Name: quoted(c.Target), Namespace: quoted(s.Namespace), Labels: map[quoted]quoted{"strimzi.io/cluster": quoted(s.Cluster)},
			Annotations: map[quoted]quoted{"offsetagent.dev/migration-id": quoted(migrationID), "offsetagent.dev/source-connector": quoted(c.Name)}},
		Spec: manifestSpec{State: quoted(strings.ToLower(c.State))},
	}
	if m.Spec.State == "" {
		m.Spec.State = "running"
	}
	class, _ := c.Config.Get("connector.class")
	m.Spec.Class = quoted(class)
	if v, ok := c.Config.Get("tasks.max"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			warnings = append(warnings, fleet.Textf("tasks.max %q is not a number of at least 1: left out (Connect's default is 1)", v))
		} else {
			m.Spec.TasksMax = &n
		}
	}
	version, _ := c.Config.Get("connector.plugin.version")
	m.Spec.Version = quoted(version)
	declared, secrets, secretWarnings, err := s.declaredConfig(c.Target, c.Config, classSecret(reg, c.Config), taken)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("KafkaConnector %s: %w", c.Target, err)
	}
	warnings = append(warnings, secretWarnings...)
	cfg := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range declared {
		if specKeys[e.Key] {
			continue
		}
		// Keys and values double-quoted, every one (see quoted).
		v := quotedNode(e.Value)
		if e.Null {
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		cfg.Content = append(cfg.Content, quotedNode(e.Key), v)
	}
	m.Spec.Config = cfg
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# KafkaConnector %s for the Connect cluster %s, written by offsetagent migrate (migration %s)\n", c.Target, s.Cluster, migrationID)
	fmt.Fprintf(&buf, "# from connector %s. Its offsets were placed on the cluster: applying this resource creates the connector, which starts at them.\n", c.Name)
	words := s.Words
	if words == nil {
		words = fleet.GoWords
	}
	for _, w := range warnings {
		fmt.Fprintf(&buf, "# WARNING: %s\n", w.Spell(words))
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&m); err != nil {
		return nil, nil, nil, fmt.Errorf("encode KafkaConnector %s: %w", c.Target, err)
	}
	if err := enc.Close(); err != nil {
		return nil, nil, nil, fmt.Errorf("encode KafkaConnector %s: %w", c.Target, err)
	}
	// Checked as written, before it is: one the API server or the operator would refuse
	// fails its connector at write_manifest rather than at kubectl apply.
	if err := checkManifest(buf.Bytes(), s.APIVersion); err != nil {
		return nil, nil, nil, fmt.Errorf("KafkaConnector %s: %w", c.Target, err)
	}
	return buf.Bytes(), warnings, secrets, nil
}

// classSecret returns the PASSWORD keys' rule of cfg's connector class (nil's rule, the Kafka
// client's keys, when reg does not know it).
func classSecret(reg *connectors.Registry, cfg events.Config) func(string) bool {
	name, _ := cfg.Get("connector.class")
	class, _ := reg.Lookup(name)
	return class.IsSecret
}

// declaredConfig is cfg, the config of connector name, as its manifest declares it: each value
// that holds a secret in clear text (clearParts) referenced in the Secret, its values in values
// by key (none of taken, the keys other manifests reference), or, without a Secret, left as it
// is with a warning. The keys Strimzi takes from the spec are left as they are. A value whose
// secret cannot be referenced is an error naming its key.
func (s *Target) declaredConfig(name string, cfg events.Config, secret func(string) bool, taken map[string]string) (events.Config, map[string]string, []fleet.Text, error) {
	values := map[string]string{}
	var warnings []fleet.Text
	out := make(events.Config, 0, len(cfg))
	for _, e := range cfg {
		if e.Null || specKeys[e.Key] {
			out = append(out, e)
			continue
		}
		parts := clearParts(e.Key, e.Value, secret)
		switch {
		case len(parts) == 0:
		case s.Secret != "":
			v, err := s.reference(name, e.Key, e.Value, parts, values, taken)
			if err != nil {
				return nil, nil, nil, err
			}
			e.Value = v
		default:
			warnings = append(warnings, fleet.Textf("config %q holds a secret in clear text%s: keep it in a Kubernetes Secret and reference it with a config provider placeholder (${secrets:...}, ${env:...}, ${file:...}), or give %s", e.Key, clearNames(parts), fleet.StrimziSecret))
		}
		out = append(out, e)
	}
	return out, values, warnings, nil
}

// Declared returns refuseExisting's view of a connector's config: as its manifest declares it.
// A nil reg is Options' default, connectors.Builtin().
func (s *Target) Declared(reg *connectors.Registry) func(name string, cfg events.Config) (events.Config, error) {
	if reg == nil {
		reg = connectors.Builtin()
	}
	return func(name string, cfg events.Config) (events.Config, error) {
		out, _, _, err := s.declaredConfig(name, cfg, classSecret(reg, cfg), nil)
		return out, err
	}
}

// Placed is one line of PlacedFile: what a connector's manifest declares and the offsets that
// were placed for it.
type Placed struct {
	Name    string                   `json:"name"`
	Type    string                   `json:"type"`
	State   string                   `json:"state"`
	Offsets []events.ConnectorOffset `json:"offsets"`
}

// WriteManifests writes the manifest of each connector of cs, and PlacedFile: what became of
// each, in cs's order (a connector whose manifest cannot be written has its Err). An error
// stops the writing: what was written is returned with it.
func (s *Target) WriteManifests(cs []Connector, migrationID string, reg *connectors.Registry) ([]Written, error) {
	// The manifests hold the configs: the directory, when made here, is its owner's alone.
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create manifests directory: %w", err)
	}
	var placed bytes.Buffer
	out := make([]Written, 0, len(cs))
	secrets := map[string]string{}
	for _, c := range cs {
		data, warnings, values, err := s.manifest(c, migrationID, reg, secrets)
		path := filepath.Join(s.Dir, c.Target+".yaml")
		if err == nil {
			err = writePrivate(path, data)
		}
		if err != nil {
			out = append(out, Written{Err: err})
			continue
		}
		maps.Copy(secrets, values)
		out = append(out, Written{Path: path, Warnings: warnings})
		line, err := json.Marshal(Placed{Name: c.Target, Type: c.Type, State: strings.ToUpper(stateOr(c.State)), Offsets: c.Offsets})
		if err != nil {
			return out, fmt.Errorf("record the offsets placed for %s: %w", c.Target, err)
		}
		placed.Write(append(line, '\n'))
	}
	if err := writePrivate(filepath.Join(s.Dir, PlacedFile), placed.Bytes()); err != nil {
		return out, fmt.Errorf("record the offsets placed: %w", err)
	}
	if s.Secret != "" {
		if err := s.writeSecret(secrets, migrationID); err != nil {
			return out, err
		}
	}
	return out, nil
}

func stateOr(s string) string {
	if s == "" {
		return fleet.StateRunning
	}
	return s
}

// ReadPlaced reads PlacedFile from dir.
func ReadPlaced(dir string) ([]Placed, error) {
	data, err := os.ReadFile(filepath.Join(dir, PlacedFile))
	if err != nil {
		return nil, fmt.Errorf("read the offsets placed: %w", err)
	}
	var out []Placed
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var p Placed
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", PlacedFile, i+1, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New(PlacedFile + " lists no connector")
	}
	return out, nil
}

// OperatorConfig is the config the Strimzi operator gives Connect for the manifest of cfg:
// spec.config, with spec.class as connector.class, spec.tasksMax as tasks.max and spec.version
// as connector.plugin.version; Connect adds the name. A null value is left out, and so is a
// tasks.max that is not a number (Manifest leaves it out).
func OperatorConfig(cfg events.Config) map[string]string {
	out := map[string]string{}
	for _, e := range cfg {
		if e.Null {
			continue
		}
		out[e.Key] = e.Value
	}
	if v, ok := out["tasks.max"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 1 {
			delete(out, "tasks.max")
		} else {
			out["tasks.max"] = strconv.Itoa(n)
		}
	}
	return out
}

// Conflict lists, sorted, the keys whose values differ between have, the config of a
// connector on B, and the config the operator would give Connect for the manifest of cfg.
func Conflict(have map[string]string, cfg events.Config) []string {
	return configDiff(have, OperatorConfig(cfg))
}

// configDiff lists, sorted, the keys whose values differ between two configs ("name" aside:
// each is under its connector's name). Values are not shown: they may be secrets.
func configDiff(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; k != "name" && (!ok || v != w) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; k != "name" && !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
