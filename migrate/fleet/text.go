package fleet

import (
	"errors"
	"fmt"
)

// ErrPrecheck marks a refusal before anything was stopped on A or published to B: bad flags,
// an unreachable cluster, a failed precheck. The caller should exit without retrying (status 2).
var ErrPrecheck = errors.New("precheck failed")

// Precheckf is an error wrapping ErrPrecheck with a message.
func Precheckf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPrecheck, fmt.Sprintf(format, args...))
}
