package strimzi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	k8syaml "sigs.k8s.io/yaml"
)

// The rules a KafkaConnector manifest must meet to be applied and reconciled, by API version:
// those of the KafkaConnector CRD's schema (the API server refuses a resource that breaks
// them, unknown fields too under kubectl's default strict field validation), those Kubernetes
// puts on every object's metadata, that of the CRD's scale subresource (spec.tasksMax is a
// replica count, an int32), those of the Strimzi operator (the strimzi.io/cluster label that
// ties the resource to its KafkaConnect, spec.class, the config keys it refuses in
// spec.config), and offsetagent's own (the API version asked for, config values that stay
// strings). v1 is v1beta2 without spec.pause (replaced by spec.state since Strimzi 0.38) and
// with spec required. The tests judge every case with the API server's own validation of the
// published CRD (strimzi_crd_test.go): the Kubernetes rules here must refuse what it refuses.

// connectorSpecFields are the fields of a KafkaConnector's spec in each API version.
var connectorSpecFields = map[string][]string{
	StrimziV1:      {"alterOffsets", "autoRestart", "class", "config", "listOffsets", "state", "tasksMax", "version"},
	StrimziV1beta2: {"alterOffsets", "autoRestart", "class", "config", "listOffsets", "pause", "state", "tasksMax", "version"},
}

// connectorStates are the values of spec.state.
var connectorStates = []string{"running", "paused", "stopped"}

// forbiddenConfigKeys are the keys spec.config cannot hold: the operator takes them from
// metadata.name, spec.class, spec.tasksMax and spec.version.
var forbiddenConfigKeys = []string{"name", "connector.class", "tasks.max", "connector.plugin.version"}

// checkManifest checks the KafkaConnector manifest data, read as the API server reads it
// (sigs.k8s.io/yaml, YAML 1.1), against the rules of API version: an error naming every
// field that breaks one, in a stable order.
func checkManifest(data []byte, version string) error {
	if problems := manifestProblems(data, version); len(problems) > 0 {
		return fmt.Errorf("not a valid kafka.strimzi.io/%s KafkaConnector: %s", version, strings.Join(problems, "; "))
	}
	return nil
}

// manifestProblems lists what breaks the rules of version in data.
func manifestProblems(data []byte, version string) []string {
	j, err := k8syaml.YAMLToJSON(data)
	if err != nil {
		return []string{fmt.Sprintf("not YAML: %v", err)}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []string{fmt.Sprintf("not a YAML document: %v", err)}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return []string{"not a YAML mapping"}
	}
	var c checker
	c.unknown("", top, []string{"apiVersion", "kind", "metadata", "spec"})
	if want := "kafka.strimzi.io/" + version; top["apiVersion"] != want {
		c.addf("apiVersion %s: want %s", show(top["apiVersion"]), want)
	}
	if top["kind"] != "KafkaConnector" {
		c.addf("kind %s: want KafkaConnector", show(top["kind"]))
	}
	c.metadata(top["metadata"])
	c.spec(top["spec"], version)
	return c.problems
}

// checker collects the problems of one manifest.
type checker struct{ problems []string }

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// unknown adds a problem per field of m (at path) that is not one of known, sorted.
func (c *checker) unknown(path string, m map[string]any, known []string) {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		c.addf("%s%s: unknown field", path, k)
	}
}

// object returns v as a mapping, adding a problem when it is not one (a missing v is
// a problem when required).
func (c *checker) object(path string, v any, required bool) (map[string]any, bool) {
	if v == nil {
		if required {
			c.addf("%s: required", path)
		}
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.addf("%s: %s is not a mapping", path, show(v))
	}
	return m, ok
}

func (c *checker) metadata(v any) {
	m, ok := c.object("metadata", v, true)
	if !ok {
		return
	}
	c.unknown("metadata.", m, []string{"annotations", "labels", "name", "namespace"})
	name, _ := m["name"].(string)
	switch {
	case m["name"] == nil:
		c.addf("metadata.name: required")
	case !isDNSSubdomain(name):
		c.addf("metadata.name %s: not a DNS subdomain name (lowercase letters, digits, '-' and '.', at most 253)", show(m["name"]))
	}
	if ns, present := m["namespace"]; present {
		if s, _ := ns.(string); !isDNSLabel(s) {
			c.addf("metadata.namespace %s: not a namespace name (lowercase letters, digits and '-', at most 63)", show(ns))
		}
	}
	labels := c.stringMap("metadata.labels", m["labels"], isLabelValue)
	switch cluster, ok := labels["strimzi.io/cluster"]; {
	case !ok:
		c.addf("metadata.labels: no strimzi.io/cluster label: the operator reconciles only the KafkaConnectors labelled with their KafkaConnect's name")
	case !isDNSLabel(cluster):
		c.addf("metadata.labels.strimzi.io/cluster %q: not the name of a KafkaConnect resource", cluster)
	}
	c.stringMap("metadata.annotations", m["annotations"], nil)
}

// stringMap checks that v, when present, maps qualified names to strings (that value
// accepts, when not nil), and returns the strings.
func (c *checker) stringMap(path string, v any, value func(string) bool) map[string]string {
	m, ok := c.object(path, v, false)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !isQualifiedName(k) {
			c.addf("%s %q: not a qualified name ([prefix/]name)", path, k)
		}
		s, ok := m[k].(string)
		switch {
		case !ok:
			c.addf("%s.%s: %s is not a string", path, k, show(m[k]))
		case value != nil && !value(s):
			c.addf("%s.%s %q: not a label value (letters, digits, '-', '_' and '.', at most 63)", path, k, s)
		default:
			out[k] = s
		}
	}
	return out
}

func (c *checker) spec(v any, version string) {
	m, ok := c.object("spec", v, true)
	if !ok {
		return
	}
	if _, has := m["pause"]; has && version == StrimziV1 {
		c.addf("spec.pause: removed in kafka.strimzi.io/v1: use spec.state")
		delete(m, "pause")
	}
	c.unknown("spec.", m, connectorSpecFields[version])
	switch class, ok := m["class"].(string); {
	case m["class"] == nil:
		c.addf("spec.class: required: the operator creates the connector with it as connector.class")
	case !ok || strings.TrimSpace(class) == "":
		c.addf("spec.class %s: not a class name", show(m["class"]))
	}
	// A replica count of the CRD's scale subresource (specReplicasPath), which the API server
	// bounds to an int32, as Connect bounds tasks.max (a Java int).
	if n, present := m["tasksMax"]; present && !isIntIn(n, 1, math.MaxInt32) {
		c.addf("spec.tasksMax %s: not an integer from 1 to %d", show(n), math.MaxInt32)
	}
	if s, present := m["version"]; present {
		if _, ok := s.(string); !ok {
			c.addf("spec.version %s: not a string", show(s))
		}
	}
	if s, present := m["state"]; present {
		if str, _ := s.(string); !slices.Contains(connectorStates, str) {
			c.addf("spec.state %s: one of %s", show(s), strings.Join(connectorStates, ", "))
		}
	}
	if p, present := m["pause"]; present {
		if _, ok := p.(bool); !ok {
			c.addf("spec.pause %s: not a boolean", show(p))
		}
	}
	if a, ok := c.object("spec.autoRestart", m["autoRestart"], false); ok {
		c.unknown("spec.autoRestart.", a, []string{"enabled", "maxRestarts"})
		if e, present := a["enabled"]; present {
			if _, ok := e.(bool); !ok {
				c.addf("spec.autoRestart.enabled %s: not a boolean", show(e))
			}
		}
		if n, present := a["maxRestarts"]; present && !isIntIn(n, math.MinInt64, math.MaxInt64) {
			c.addf("spec.autoRestart.maxRestarts %s: not an integer", show(n))
		}
	}
	c.configMapRef("spec.listOffsets", m["listOffsets"], "toConfigMap")
	c.configMapRef("spec.alterOffsets", m["alterOffsets"], "fromConfigMap")
	c.config(m["config"])
}

// configMapRef checks listOffsets or alterOffsets: {<field>: {name: string}}, field required.
func (c *checker) configMapRef(path string, v any, field string) {
	m, ok := c.object(path, v, false)
	if !ok {
		return
	}
	c.unknown(path+".", m, []string{field})
	ref, ok := c.object(path+"."+field, m[field], true)
	if !ok {
		return
	}
	c.unknown(path+"."+field+".", ref, []string{"name"})
	if n, present := ref["name"]; present {
		if _, ok := n.(string); !ok {
			c.addf("%s.%s.name %s: not a string", path, field, show(n))
		}
	}
}

// config checks spec.config: no key the operator takes from elsewhere, and every value a
// string (or null, left out): Connect's config is strings, and a value that YAML reads as a
// number or a boolean reaches Connect in another spelling than the one on A.
func (c *checker) config(v any) {
	m, ok := c.object("spec.config", v, false)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(forbiddenConfigKeys, k) {
			c.addf("spec.config.%s: not allowed (the operator sets it from the spec or the name)", k)
		}
		switch v := m[k].(type) {
		case string, nil:
		case json.Number:
			c.addf("spec.config.%s: a number, not a string", k)
		case bool:
			c.addf("spec.config.%s: a boolean, not a string", k)
		default:
			c.addf("spec.config.%s: a %T, not a string", k, v)
		}
	}
}

// show is v as a problem names it: its JSON text. Never a config value's: one may be a secret.
func show(v any) string {
	if v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// isIntIn reports whether v (a json.Number) is an integer from lo to hi.
func isIntIn(v any, lo, hi int64) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := n.Int64()
	return err == nil && i >= lo && i <= hi
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValue   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
	keyNamePart  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// isDNSSubdomain is Kubernetes' DNS-1123 subdomain: a resource's name.
func isDNSSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomain.MatchString(s) }

// isDNSLabel is Kubernetes' DNS-1123 label: a namespace's name, or a KafkaConnect's (a label
// value).
func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabel.MatchString(s) }

// isLabelValue is a Kubernetes label value: empty, or at most 63 characters.
func isLabelValue(s string) bool { return len(s) <= 63 && labelValue.MatchString(s) }

// isQualifiedName is a label's or annotation's key: [prefix/]name, the prefix a DNS subdomain,
// the name at most 63 characters.
func isQualifiedName(s string) bool {
	prefix, name, hasPrefix := strings.Cut(s, "/")
	if !hasPrefix {
		name = prefix
	} else if prefix == "" || !isDNSSubdomain(prefix) {
		return false
	}
	return len(name) <= 63 && keyNamePart.MatchString(name)
}
