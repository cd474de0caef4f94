package plan

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/offsetagent/offsetagent/events"
)

// secretInFingerprint stands for a secret key's value in the canonical form of a config.
const secretInFingerprint = "<secret>"

// Fingerprint is "sha256:" and the hex SHA-256 of cfg's canonical form (Canonical): the same
// config in any key order has the same fingerprint, and neither a secret value nor a hash of
// one alone is in it.
func Fingerprint(cfg events.Config, secret func(key string) bool) string {
	sum := sha256.Sum256(Canonical(cfg, secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Canonical is cfg as the compact JSON array of its [key, value] pairs sorted by key
// (bytewise): value the stored string (a ${provider:...} placeholder as stored), null for a
// null value, "<secret>" for the value of a key secret calls secret, and a password inside
// any other value masked (events.MaskCredentials), as the plan shows it. A change of a
// secret value alone is therefore not in the fingerprint: the config record's offset on A
// catches it (FileConnector.ConfigRecordOnA).
func Canonical(cfg events.Config, secret func(key string) bool) []byte {
	pairs := make([][2]any, 0, len(cfg))
	for _, e := range cfg {
		var v any
		switch {
		case e.Null:
			v = nil
		case events.IsSecretKey(e.Key) || (secret != nil && secret(e.Key)):
			v = secretInFingerprint
		default:
			v = events.MaskCredentials(e.Value)
		}
		pairs = append(pairs, [2]any{e.Key, v})
	}
	slices.SortStableFunc(pairs, func(a, b [2]any) int { return cmp.Compare(a[0].(string), b[0].(string)) })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(pairs) // strings and nulls only: it cannot fail
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
