package realkafka_test

import (
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// TestRollbackAfterVerifiedMove proves `migrate rollback` on real Connect (tier.RollbackAfterMove):
// a FileStream source and sink moved to B and verified go back to A with --execute at B's
// progress (every line and record once), nothing is left on B, and a connector the cutover
// report did not move is refused and left alone. It shares cluster B with TestMigrateStopSource.
func TestRollbackAfterVerifiedMove(t *testing.T) {
	tier.RollbackAfterMove(t, env)
}
