// Command offsetagent creates Kafka Connect connectors with initial offsets (KIP-995) from
// CloudEvents requests, writing directly to Connect's internal topics.
//
// Subcommands: run, publish, offsets, results, export, migrate (and its verbs migrate plan,
// apply, verify and rollback), demo, demo-migrate, version, healthcheck, pprof. See the README;
// `offsetagent COMMAND --help` (and `offsetagent migrate VERB --help`) prints a command's flags.
package main

import (
	"fmt"
	"io"
	"os"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: offsetagent <command> [flags]

commands:
  run [--embedded-broker]   run the agent (configuration from OFFSETAGENT_* variables)
  publish [--wait] [--timeout D] [--mode binary|structured] [--dry-run] FILE|-
                            publish a KIP-995 body as a create request
  offsets NAME              print a connector's offsets in the GET /connectors/NAME/offsets shape
  results [--failed] [-n N] print the latest N results (default 20; --failed: failed ones only,
                            with their step, error code and message), one JSON object a line
  export [flags]            write one KIP-995 body per connector of Connect cluster A (JSON lines)
  migrate plan -o PLAN [flags]
                            read Connect clusters A and B, run every check, write a plan file to review
  migrate apply PLAN [flags]
                            do exactly the plan (A and B read again, a connector that drifted refused),
                            write and verify the cutover report PLAN.cutover.json; run again, it continues
  migrate verify REPORT [flags]
                            verify on B that each moved connector continues where A stopped
  migrate rollback REPORT [--execute]
                            the way back: stop on B, carry B's progress to A, resume on A (a dry run
                            without --execute)
  migrate [flags]           the shortcut: plan and apply in one run, nothing written to review
  demo                      embedded broker + agent + the seed example, then exit
  demo-migrate              two Connect clusters on embedded brokers: migrate plan, apply, verify, rollback
  version                   print version, commit and Go version
  healthcheck               exit 0 if the agent on OFFSETAGENT_HTTP_ADDR is ready (for container healthchecks)
  pprof on|off --pid N      switch the running agent's /debug/pprof (signals process N: 1 in the agent's container)

Run 'offsetagent COMMAND --help' (or 'offsetagent migrate VERB --help') for a command's flags.
`

// run dispatches a subcommand and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "publish":
		return cmdPublish(args[1:], stdin, stdout, stderr)
	case "offsets":
		return cmdOffsets(args[1:], stdout, stderr)
	case "results":
		return cmdResults(args[1:], stdout, stderr)
	case "pprof":
		return cmdPprof(args[1:], stdout, stderr)
	case "export":
		return cmdExport(args[1:], stdout, stderr)
	case "migrate":
		return cmdMigrate(args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(args[1:], stdout, stderr)
	case "demo-migrate":
		return cmdDemoMigrate(args[1:], stdout, stderr)
	case "version":
		if code, done := noFlags("version", args[1:], stdout, stderr); done {
			return code
		}
		return cmdVersion(stdout)
	case "healthcheck":
		if code, done := noFlags("healthcheck", args[1:], stdout, stderr); done {
			return code
		}
		return cmdHealthcheck(stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "offsetagent: unknown command %q\n\n%s", args[0], usage)
	return 2
}
