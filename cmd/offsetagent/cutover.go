package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// defaultVerifyTimeout is --verify-timeout's default: long enough for a connector with
// traffic to commit once after B starts it (Connect commits source offsets every 60 s by
// default, offset.flush.interval.ms), short enough not to hold a run on idle connectors.
const defaultVerifyTimeout = 90 * time.Second

// verifyFlags are migrate's flags for the cutover's verification and its report.
type verifyFlags struct {
	noVerify      bool
	verifyTimeout time.Duration
	cutoverReport string
}

func (f *verifyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.noVerify, "no-verify", false, "do not verify the cutover at the end of the migration (verify later with --verify --cutover-report FILE)")
	fs.DurationVar(&f.verifyTimeout, "verify-timeout", defaultVerifyTimeout, "how long the verification waits for each moved connector to commit on B after the offsets placed; a partition without a new commit by then is reported waiting")
	fs.StringVar(&f.cutoverReport, "cutover-report", "", "write the cutover report to this file (JSON, mode 0600: per moved connector and partition, the offset on A, the offset placed on B, its translation, the first offset B committed after it, for a Debezium source the positions of its first record on B and of A's last, for a replay what B produces again, the verdict and its evidence); with --verify, read it and write it back verified")
}

// timeout is MigrateOptions.Verify: 0 with --no-verify or --dry-run.
func (f *verifyFlags) timeout(dry bool) time.Duration {
	if f.noVerify || dry || f.verifyTimeout <= 0 {
		return 0
	}
	return f.verifyTimeout
}

// Exit statuses of the cutover's verification besides 0, 1 (a mismatch) and 2 (bad flags,
// B unreadable).
const (
	// exitWaiting: migrate --verify found partitions still waiting or unordered (and no
	// mismatch): run it again once they have traffic, or compare them by hand.
	exitWaiting = 3
	// exitReplay: every partition is decided and none is a mismatch, but one is a replay: B
	// continues from the offset placed and produces again records A produced past its last
	// commit (A's worker died): expect those duplicates downstream.
	exitReplay = 4
)

// worseExit is the exit status of a run that ended with statuses a and b: the worse one,
// where a failure (1, 2) is worse than a replay (4), and a replay worse than 0.
func worseExit(a, b int) int {
	rank := func(c int) int {
		if c == exitReplay {
			return 1 // between 0 and 1
		}
		return 2 * c
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// finish prints the summary of a verified cutover to stdout, writes the cutover report when
// asked, and returns 1 when a partition is a mismatch (or the report cannot be written),
// exitReplay when one is a replay.
func (f *verifyFlags) finish(cut *cutover.Cutover, verified bool, stdout, stderr io.Writer) int {
	if cut == nil {
		return 0
	}
	if verified {
		_ = writeSummary(stdout, cut)
	}
	if err := f.write(cut); err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate: write cutover report: %s\n", errorText(err))
		return 1
	}
	switch {
	case !cut.OK():
		return 1
	case cut.Replays():
		return exitReplay
	}
	return 0
}

// write writes the cutover report to --cutover-report FILE whole or not at all: to a
// private file beside it, renamed over FILE once written (a re-verification that cannot write
// keeps the report it read).
func (f *verifyFlags) write(cut *cutover.Cutover) error {
	if f.cutoverReport == "" {
		return nil
	}
	fleet.SpellIn(cut, flagWords)
	return replacePrivate(f.cutoverReport, cut.WriteJSON)
}

// runAlone is migrate --verify --cutover-report FILE: verify the cutover FILE records on B's
// brokers and write FILE back. Exit status: 0 every partition verified, 1 a mismatch, 2 bad
// flags or B unreadable, 3 partitions still waiting or unordered (and no mismatch), 4 every
// partition verified or a replay, and one a replay.
func (f *verifyFlags) runAlone(ctx context.Context, ff *fleetFlags, stdout, stderr io.Writer) int {
	if f.cutoverReport == "" || ff.toBrokers == "" {
		fmt.Fprintln(stderr, "offsetagent migrate --verify: needs --cutover-report FILE (the migration's) and --to-brokers, or --manifests DIR and --to-connect-url (a migration into an operator-managed cluster)")
		return 2
	}
	if f.noVerify {
		fmt.Fprintln(stderr, "offsetagent migrate --verify: not with --no-verify")
		return 2
	}
	cut, err := cutover.Read(f.cutoverReport)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate --verify: %s\n", errorText(err))
		return 2
	}
	_, cl, err := ff.clusters(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate --verify: %s\n", errorText(err))
		return 2
	}
	vo := cutover.VerifyOptions{Brokers: splitList(ff.toBrokers), Transport: cl.to.Transport, Principal: cl.toPrincipal,
		Timeout: max(f.verifyTimeout, 0), Progress: verifyProgress(stderr)}
	if ff.fromBrokers != "" || ff.fromCommandConfig != "" {
		// A's Kafka cluster, where a connector stopped on A without its REST API is checked
		// again (the report's brokers when --from-brokers is not given).
		vo.FromBrokers, vo.FromTransport, vo.FromPrincipal = splitList(ff.fromBrokers), cl.from.Transport, cl.fromPrincipal
	}
	if err := cutover.Verify(ctx, cut, vo); err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate --verify: %s\n", errorText(err))
		return 2
	}
	_ = writeSummary(stdout, cut)
	if err := f.write(cut); err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate --verify: write cutover report: %s\n", errorText(err))
		return 1
	}
	switch {
	case !cut.OK():
		return 1
	case !cut.Decided():
		return exitWaiting
	case cut.Replays():
		return exitReplay
	default:
		return 0
	}
}
