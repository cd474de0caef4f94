package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/offsetagent/offsetagent/migrate/cutover"
)

// cmdMigrateVerify is `migrate verify REPORT` (the old spelling: migrate --verify
// --cutover-report REPORT): verify the cutover REPORT records on B's brokers (the report's,
// unless --to-brokers) and write REPORT back; or, with --manifests DIR --to-connect-url URL,
// that each connector of an operator-managed B runs with the offsets placed. Exit status: 0
// verified, 1 a mismatch, 2 bad flags or B unreadable, 3 waiting or unordered, 4 a replay.
func cmdMigrateVerify(args []string, stdout, stderr io.Writer) int {
	var c migrateCmd
	fs := verbFlagSet("verify", &c, nil)
	path, _, code, done := parseVerb(fs, args, "REPORT", stdout, stderr)
	if done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.sf.manifests != "" {
		if path != "" {
			fmt.Fprintln(stderr, "offsetagent migrate verify: a cutover REPORT, or --manifests DIR (an operator-managed B), not both")
			return 2
		}
		toHTTP, err := c.mf.toConnectClient(stderr)
		if err != nil {
			fmt.Fprintf(stderr, "offsetagent migrate verify: %s\n", errorText(err))
			return 2
		}
		c.sf.verify = true
		code, _ := c.sf.run(ctx, *c.mf.toConnectURL, toHTTP, stdout, stderr)
		return code
	}
	if path == "" {
		fmt.Fprintln(stderr, "offsetagent migrate verify: the cutover report is required: offsetagent migrate verify REPORT (or --manifests DIR --to-connect-url URL)")
		return 2
	}
	c.vf.cutoverReport = path
	if c.f.toBrokers == "" {
		cut, err := cutover.Read(path)
		if err != nil {
			fmt.Fprintf(stderr, "offsetagent migrate verify: %s\n", errorText(err))
			return 2
		}
		c.f.toBrokers = cut.To // B's brokers, where the offsets were placed
	}
	return c.vf.runAlone(ctx, &c.f, stdout, stderr)
}
