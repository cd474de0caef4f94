package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RequestSourcePrefix is the CloudEvent source of migration requests, followed by the
// migration id.
const RequestSourcePrefix = "/offsetagent/migrate/"

// DeriveMigrationID is the default migration id: a hash of A's cluster id and the selection
// flags, so the same command run again continues the same migration.
func DeriveMigrationID(clusterA, selectionKey string) string {
	h := sha256.Sum256([]byte(clusterA + "\x00" + selectionKey))
	return "m-" + hex.EncodeToString(h[:8])
}

// ValidMigrationID reports whether id can name a migration: it is the first part of its
// request ids and of its state records' keys, which '/' separates, and no space.
func ValidMigrationID(id string) bool {
	return !strings.ContainsAny(id, "/ \t\n")
}
