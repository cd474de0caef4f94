package realkafka_test

import (
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestMigrateStopSource proves migrate on real Kafka (tier.MigrateStopSource): a busy
// FileStream source and sink are moved between two clusters of the tier's version with
// `offsetagent migrate --stop-source`; every line and record is produced and written once.
func TestMigrateStopSource(t *testing.T) {
	tier.MigrateStopSource(t, env, tier.Migration{})
}
