package strimzi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/offsetagent/offsetagent/events"
)

// The Secret of a migration into an operator-managed B (Target.Secret): the config values
// its manifests reference instead of holding them, and what counts as a secret in clear text.

// secretKey is the key in the Secret of config key of connector: "<connector>.<key>", every
// character a Secret's key cannot hold ([-._a-zA-Z0-9]) replaced by '_', and a suffix when
// that makes it one taken already, by this connector or another ("a.b" and "a" with the keys
// "c" and "b.c").
func secretKey(connector, key string, taken ...map[string]string) string {
	k := secretKeyChars.ReplaceAllString(connector+"."+key, "_")
	out := k
	for n := 2; ; n++ {
		if !slices.ContainsFunc(taken, func(m map[string]string) bool { _, dup := m[out]; return dup }) {
			return out
		}
		out = fmt.Sprintf("%s-%d", k, n)
	}
}

var secretKeyChars = regexp.MustCompile(`[^-._a-zA-Z0-9]`)

// secretManifest is a Kubernetes Secret with the values the manifests reference.
type secretManifest struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   secretMeta        `yaml:"metadata"`
	Type       string            `yaml:"type"`
	StringData map[quoted]quoted `yaml:"stringData"`
}

type secretMeta struct {
	Name        quoted            `yaml:"name"`
	Namespace   quoted            `yaml:"namespace"`
	Annotations map[quoted]quoted `yaml:"annotations"`
}

// writeSecret writes the Secret manifest holding values to SecretFile, for its owner alone.
func (s *Target) writeSecret(values map[string]string, migrationID string) error {
	ns, name, _ := strings.Cut(s.Secret, "/")
	m := secretManifest{APIVersion: "v1", Kind: "Secret", Type: "Opaque", StringData: map[quoted]quoted{},
		Metadata: secretMeta{Name: quoted(name), Namespace: quoted(ns), Annotations: map[quoted]quoted{"offsetagent.dev/migration-id": quoted(migrationID)}}}
	for k, v := range values {
		m.StringData[quoted(k)] = quoted(v)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Secret %s with the config values that the KafkaConnector manifests in %s reference (${secrets:%s:KEY}),\n", s.Secret, s.Dir, s.Secret)
	fmt.Fprintf(&buf, "# written by offsetagent migrate (migration %s). It holds them in clear text: apply it before the manifests, and keep it out of Git.\n", migrationID)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&m); err != nil {
		return fmt.Errorf("encode Secret %s: %w", s.Secret, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode Secret %s: %w", s.Secret, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.SecretFile), 0o700); err != nil {
		return fmt.Errorf("create the Secret's directory: %w", err)
	}
	if err := writePrivate(s.SecretFile, buf.Bytes()); err != nil {
		return fmt.Errorf("write Secret %s: %w", s.Secret, err)
	}
	return nil
}

// writePrivate writes data to path readable and writable by its owner only (0600), also when
// the file existed with a wider mode: a manifest holds a connector's config, secrets included.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("make %s private: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// clearParts returns the parts of the value of config key that hold a secret in clear text, in
// order and apart: a value of a secret key (by name, or a PASSWORD key of the class, secret)
// without a placeholder is a secret whole, as Connect hides a PASSWORD value whole; any other
// value's are events.SecretSpans, the text around and between its placeholders.
func clearParts(key, value string, secret func(string) bool) []events.SecretSpan {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	if len(events.ConfigVariables(value)) == 0 && (events.IsSecretKey(key) || (secret != nil && secret(key))) {
		return []events.SecretSpan{{End: len(value)}}
	}
	return events.SecretSpans(key, value, secret)
}

// clearNames names the parts of a value holding a secret for a warning: the JAAS options.
func clearNames(parts []events.SecretSpan) string {
	var names []string
	for _, p := range parts {
		if p.Name != "" && !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (option " + strings.Join(names, ", ") + ")"
}

// reference returns value as a manifest holds it with the Secret: a value without a placeholder
// whole as a reference to one key of the Secret, ${secrets:NAMESPACE/NAME:<connector>.<key>};
// in a value with placeholders, each of its parts as a reference to a key of its own
// (<connector>.<key>.<JAAS option>), the placeholders kept, since Connect reads a Secret's value
// as it is (events.ConfigVariables). secrets gets the values by key; taken are the keys other
// connectors' manifests reference. A value in which the references would change how Connect
// reads A's placeholders is an error: it cannot be split.
func (s *Target) reference(connector, key, value string, parts []events.SecretSpan, secrets, taken map[string]string) (string, error) {
	ref := func(name, v string) string {
		k := secretKey(connector, name, secrets, taken)
		secrets[k] = v
		return "${secrets:" + s.Secret + ":" + k + "}"
	}
	vars := events.ConfigVariables(value)
	if len(vars) == 0 {
		return ref(key, value), nil
	}
	var b strings.Builder
	var want [][2]int // where each placeholder of the value written must be found
	add := func(text string) {
		want = append(want, [2]int{b.Len(), b.Len() + len(text)})
		b.WriteString(text)
	}
	at, vi := 0, 0
	flushVars := func(upto int) {
		for ; vi < len(vars) && vars[vi].Start < upto; vi++ {
			b.WriteString(value[at:vars[vi].Start])
			add(value[vars[vi].Start:vars[vi].End])
			at = vars[vi].End
		}
	}
	for _, p := range parts {
		flushVars(p.Start)
		b.WriteString(value[at:p.Start])
		name := key
		if p.Name != "" {
			name = key + "." + p.Name
		}
		add(ref(name, value[p.Start:p.End]))
		at = p.End
	}
	flushVars(len(value))
	b.WriteString(value[at:])
	out := b.String()
	got := events.ConfigVariables(out)
	if !slices.EqualFunc(got, want, func(v events.ConfigVariable, w [2]int) bool { return v.Start == w[0] && v.End == w[1] }) {
		return "", fmt.Errorf("config %q holds a secret in clear text beside config provider placeholders, and references to the Secret "+
			"in its place would change how Connect reads the value (a \"${\" before them that no '}' closes would take them in): "+
			"put the whole value in a Secret of your own and reference it", key)
	}
	return out, nil
}
