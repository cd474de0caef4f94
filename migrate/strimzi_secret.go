package migrate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/offsetagent/offsetagent/events"
)

// The Secret of a migration into an operator-managed B (StrimziTarget.Secret): the config values
// its manifests reference instead of holding them, and what counts as a secret in clear text.

// secretKey is the key in the Secret of config key of connector: "<connector>.<key>", every
// character a Secret's key cannot hold ([-._a-zA-Z0-9]) replaced by '_', and a suffix when
// that makes it one taken already.
func secretKey(connector, key string, taken map[string]string) string {
	k := secretKeyChars.ReplaceAllString(connector+"."+key, "_")
	out := k
	for n := 2; ; n++ {
		if _, dup := taken[out]; !dup {
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
func (s *StrimziTarget) writeSecret(values map[string]string, migrationID string) error {
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

// placeholder is a config provider reference, ${provider:path:key}.
var placeholder = regexp.MustCompile(`\$\{[^}]*\}`)

// clearSecret reports whether a config value holds a secret in clear text: a secret key
// (by name, or a PASSWORD key of the class) whose value references no placeholder, or a
// password inside a value (a URI's user info, a JDBC property), not counting placeholders.
func clearSecret(key, value string, secret func(string) bool) bool {
	if strings.TrimSpace(value) == "" {
		return false
	}
	if events.IsSecretKey(key) || (secret != nil && secret(key)) {
		return !placeholder.MatchString(value)
	}
	v := placeholder.ReplaceAllString(value, events.HiddenValue)
	return events.MaskCredentials(v) != v
}
