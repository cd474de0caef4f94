package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// cmdHelp is what `offsetagent COMMAND --help` prints besides the flags.
type cmdHelp struct {
	// synopsis is the usage line after "usage: ".
	synopsis string
	// about says what the command does, one paragraph.
	about string
	// required names the flags the command cannot run without, marked "(required)".
	required []string
	// env maps a flag to the OFFSETAGENT_* variable its default comes from when the flag is
	// not given; the variable's own default is the flag's DefValue or envDefault.
	env map[string]string
	// envDefault is the default of an env-backed flag whose DefValue is "".
	envDefault map[string]string
	// after is printed after the flags: outputs, exit status, where to read more.
	after string
	// groups, when given, list the command's flags under their titles, in order: every flag
	// the command registers is in exactly one (usage_test.go).
	groups []flagGroup
}

// flagGroup is a title and the flags listed under it in a command's help.
type flagGroup struct {
	title string
	flags []string
}

// helpOf is the help of a command or of a verb of migrate ("migrate plan").
func helpOf(name string) cmdHelp {
	if h, ok := helps[name]; ok {
		return h
	}
	return verbHelps[name]
}

// helps holds every subcommand's help.
var helps = map[string]cmdHelp{
	"run": {
		synopsis: "offsetagent run [--embedded-broker]",
		about: "Run the agent: consume create requests from the request topic and write Connect's topics.\n" +
			"Configuration comes from OFFSETAGENT_* variables (see docs/operations.md).",
		after: "Exit status: 0 stopped by SIGINT/SIGTERM, 1 the agent failed, 2 invalid configuration.",
	},
	"publish": {
		synopsis: "offsetagent publish [--wait] [--timeout D] [--mode binary|structured] [--dry-run] FILE|-",
		about: "Publish a KIP-995 body (POST /connectors with initial_offsets) from FILE, or stdin with -, as a\n" +
			"create request to OFFSETAGENT_REQUEST_TOPIC on OFFSETAGENT_BROKERS.",
		after: "Output: without --wait nothing; the request is published when the command exits 0.\n" +
			"With --wait, the result event as indented JSON on stdout: {\"type\": \"offsetagent.connector.create.\n" +
			"succeeded|failed|planned\", \"subject\": NAME, \"data\": {...}} (data as in docs/events.md).\n" +
			"Exit status: 0 published (with --wait: succeeded or planned), 1 failed, no result within\n" +
			"--timeout or a broker that does not answer, 2 bad usage or configuration.",
	},
	"offsets": {
		synopsis: "offsetagent offsets [--connect-timeout D] NAME",
		about: "Print connector NAME's offsets as GET /connectors/NAME/offsets shows them, read from the\n" +
			"Connect topics OFFSETAGENT_CONFIG_TOPIC and OFFSETAGENT_OFFSETS_TOPIC on OFFSETAGENT_BROKERS.",
		after: "Exit status: 0 printed, 1 not readable (the message names the broker and the cause), 2 bad usage.",
	},
	"export": {
		synopsis: "offsetagent export (--from-brokers HOSTS | --from-connect-url URL) [flags]",
		about: "Read Connect cluster A and write one KIP-995 create body per selected connector, as JSON\n" +
			"lines, to stdout or -o FILE (mode 0600: the bodies hold the configs' secrets in plain text).\n" +
			"The summary table goes to stderr; every exported connector's outcome is \"planned\".",
		required: []string{"from-brokers|from-connect-url"},
		after: "Exit status: 0 every selected connector exported (planned), 1 any skipped or failed, or\n" +
			"a selection that matches no connector or an --include, --exclude or --rename that matches none\n" +
			"(unless --allow-empty), 2 bad flags, an unreachable cluster or a refused precheck.\n" +
			"See docs/migration.md.",
	},
	"migrate": {
		synopsis: "offsetagent migrate --to-brokers HOSTS (--from-brokers HOSTS | --from-connect-url URL) [flags]\n" +
			"       offsetagent migrate plan -o PLAN  |  migrate apply PLAN  |  migrate verify REPORT  |  migrate rollback REPORT\n" +
			"       (each verb: --help)",
		about: "Export the selected connectors of Connect cluster A and create each on Connect cluster B\n" +
			"through the agents running on B, offsets included; print a table of outcomes. This is the\n" +
			"shortcut of migrate plan and migrate apply in one run, with nothing written to review.",
		required: []string{"to-brokers", "from-brokers|from-connect-url"},
		env: map[string]string{"to-config-topic": "OFFSETAGENT_CONFIG_TOPIC", "to-offsets-topic": "OFFSETAGENT_OFFSETS_TOPIC",
			"request-topic": "OFFSETAGENT_REQUEST_TOPIC", "result-topic": "OFFSETAGENT_RESULT_TOPIC"},
		envDefault: map[string]string{"to-config-topic": "connect-configs", "to-offsets-topic": "connect-offsets",
			"request-topic": "connect-offset-requests", "result-topic": "connect-offset-results"},
		groups: migrateGroups,
		after: "SASL and TLS for A and B come from OFFSETAGENT_SASL_* and OFFSETAGENT_TLS_*.\n" +
			"Before publishing, migrate checks that an agent consumes B's request topic and serves B's\n" +
			"Connect topics (--to-config-topic, --to-offsets-topic).\n" +
			"Outcomes: succeeded, planned (--dry-run), failed, skipped, pending.\n" +
			"Then, unless --no-verify, the cutover is verified on B (up to --verify-timeout, saying on\n" +
			"stderr what it waits for, and the counts every 10s): per moved connector and partition,\n" +
			"verified, waiting (nothing committed after the offset placed yet), mismatch (B does not\n" +
			"continue from the offset placed, or it skips records), unordered (compare by hand) or replay\n" +
			"(B continues from A's last committed offset and produces again what A produced past it before\n" +
			"its worker died); --cutover-report FILE keeps it. migrate verify FILE (the old spelling:\n" +
			"migrate --verify --cutover-report FILE) verifies it again (exit 0 all verified, 1 a mismatch, 2 bad flags or B\n" +
			"unreadable, 3 some waiting or unordered, 4 all decided and some replay).\n" +
			"Exit status: 0 every selected connector succeeded (or planned), 1 any failed, skipped or\n" +
			"pending, a mismatch in the cutover, or a selection that matches no connector or an --include,\n" +
			"--exclude or --rename that matches none (unless --allow-empty), 2 bad flags, an unreachable\n" +
			"cluster or a refused precheck (nothing stopped or published), 4 all succeeded and the cutover\n" +
			"has a replay (and no mismatch). See docs/migration.md.",
	},
	"demo": {
		synopsis: "offsetagent demo",
		about:    "Start an embedded broker and an agent, publish KIP-995's seed example, print the results\nand Connect's records, then exit.",
	},
	"demo-migrate": {
		synopsis: "offsetagent demo-migrate",
		about: "On an embedded broker: Connect cluster A with a few connectors and cluster B with its agent;\n" +
			"run export, migrate --dry-run, migrate --stop-source and migrate again as a user would, print what\n" +
			"is on B, then migrate rollback (a dry run, then --execute) and A's connectors after.",
	},
	"version": {
		synopsis: "offsetagent version",
		about:    "Print the version, the commit and the Go version.",
	},
	"healthcheck": {
		synopsis: "offsetagent healthcheck",
		about: "Exit 0 when the agent listening on OFFSETAGENT_HTTP_ADDR's port answers /readyz with 200,\n" +
			"else 1 (for container healthchecks: the image has no shell or curl).",
	},
}

// parseArgs parses args into fs. --help (or -h) prints the command's usage on stdout; a bad
// flag prints the error and a pointer to --help on stderr. done says the command must return
// code now.
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if sawFlagSet != nil {
		sawFlagSet(fs)
	}
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(stdout, fs)
			return 0, true
		}
		fmt.Fprintf(stderr, "run 'offsetagent %s --help' for usage\n", fs.Name())
		return 2, true
	}
	return 0, false
}

// noFlags parses the arguments of a command that takes none.
func noFlags(name string, args []string, stdout, stderr io.Writer) (int, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return code, true
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "offsetagent %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2, true
	}
	return 0, false
}

// writeUsage writes fs's usage: the synopsis, what the command does, every flag with its
// argument, whether it is required and where its default comes from.
func writeUsage(w io.Writer, fs *flag.FlagSet) {
	h := helpOf(fs.Name())
	fmt.Fprintf(w, "usage: %s\n", h.synopsis)
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", h.about)
	}
	var required []string
	for _, r := range h.required {
		if strings.Contains(r, "|") {
			required = append(required, "one of --"+strings.ReplaceAll(r, "|", ", --"))
		} else if len(r) == 1 {
			required = append(required, "-"+r) // a one-letter flag: -o
		} else {
			required = append(required, "--"+r)
		}
	}
	if len(required) > 0 {
		fmt.Fprintf(w, "\nrequired: %s\n", strings.Join(required, "; "))
	}
	line := func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		head := "  " + dashes + f.Name
		if arg != "" {
			head += " " + strings.ToUpper(argName(f.Name, arg))
		}
		var notes []string
		if isRequired(h.required, f.Name) {
			notes = append(notes, "required")
		}
		for _, r := range h.required {
			if alts := strings.Split(r, "|"); len(alts) > 1 && slices.Contains(alts, f.Name) {
				others := slices.DeleteFunc(slices.Clone(alts), func(a string) bool { return a == f.Name })
				notes = append(notes, "required unless --"+strings.Join(others, " or --"))
			}
		}
		switch env := h.env[f.Name]; {
		case env != "":
			def := f.DefValue
			if def == "" {
				def = h.envDefault[f.Name]
			}
			notes = append(notes, fmt.Sprintf("default: $%s, else %s", env, def))
		case f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]":
			notes = append(notes, "default "+f.DefValue)
		}
		if len(notes) > 0 {
			head += "  (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", head, strings.ReplaceAll(text, "\n", "\n      "))
	}
	if len(h.groups) > 0 {
		for _, g := range h.groups {
			fmt.Fprintf(w, "\n%s:\n", g.title)
			for _, name := range g.flags {
				if f := fs.Lookup(name); f != nil {
					line(f)
				}
			}
		}
	} else {
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if first {
				fmt.Fprintln(w, "\nflags:")
				first = false
			}
			line(f)
		})
	}
	if h.after != "" {
		fmt.Fprintf(w, "\n%s\n", h.after)
	}
}

// argName names a flag's argument: by what the flag takes, else by its type.
func argName(flag, a string) string {
	switch {
	case strings.HasSuffix(flag, "brokers"):
		return "hosts"
	case strings.HasSuffix(flag, "-url"):
		return "url"
	case strings.HasSuffix(flag, "-topic"):
		return "topic"
	case flag == "include" || flag == "exclude":
		return "re"
	case flag == "rename":
		return "re=repl"
	case flag == "set":
		return "key=value"
	case flag == "unset" || flag == "keep-a":
		return "key"
	case flag == "map-value":
		return "from=to"
	case flag == "o" || flag == "report":
		return "file"
	case flag == "mode":
		return "binary|structured"
	}
	switch a {
	case "string", "value":
		return "value"
	case "duration":
		return "duration"
	case "int":
		return "n"
	}
	return a
}

func isRequired(required []string, name string) bool {
	return slices.Contains(required, name)
}

// defaultConnectTimeout is --connect-timeout's default.
const defaultConnectTimeout = 10 * time.Second

// connectTimeoutFlag registers --connect-timeout on fs.
func connectTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("connect-timeout", defaultConnectTimeout,
		"how long to wait for a Kafka cluster's first answer before giving up with the address and the cause")
}

// The help groups of migrate's flags (design: each verb's --help lists only its own flags).
var (
	planGroups = []flagGroup{
		{"A (the Connect cluster the connectors leave)", []string{"from-brokers", "from-config-topic", "from-offsets-topic", "from-connect-url",
			"from-command-config", "from-connect-config", "allow-unreadable-offsets"}},
		{"B (the Connect cluster they move to)", []string{"to-brokers", "to-config-topic", "to-offsets-topic", "to-connect-url", "to-connect-config",
			"to-command-config", "request-topic", "result-topic", "state-topic", "allow-no-agent"}},
		{"selection and edits", []string{"include", "exclude", "rename", "set", "unset", "map-value", "keep-a", "allow-empty", "initial-state",
			"sink-offsets", "stop-source", "sink-follows-source", "migration-id"}},
		{"MirrorMaker 2", []string{"mm2-source-alias", "mm2-target-alias", "replication-policy", "replication-separator", "checkpoint-max-age",
			"mm2-config-topic", "exact", "allow-replay"}},
		{"Strimzi", []string{"to-strimzi-cluster", "manifests", "strimzi-namespace", "strimzi-api-version", "strimzi-secret"}},
		{"timing", []string{"connect-timeout", "timeout"}},
		{"output", []string{"o"}},
	}
	applyGroups = []flagGroup{
		{"A (credentials; the addresses are the plan's)", []string{"from-command-config", "from-connect-config"}},
		{"B (credentials; the addresses are the plan's)", []string{"to-command-config", "to-connect-config"}},
		{"selection and edits", []string{"set"}},
		{"Strimzi", []string{"strimzi-secret-file"}},
		{"timing", []string{"connect-timeout", "timeout", "grace", "concurrency", "wave-size", "checkpoint-wait", "verify-timeout", "no-verify"}},
		{"output", []string{"report", "cutover-report"}},
	}
	verifyGroups = []flagGroup{
		{"A", []string{"from-brokers", "from-command-config"}},
		{"B", []string{"to-brokers", "to-command-config", "to-connect-url", "to-connect-config"}},
		{"Strimzi", []string{"manifests"}},
		{"timing", []string{"connect-timeout", "verify-timeout"}},
	}
	// migrateGroups are the shortcut's: plan's, apply's and the old spellings, each once.
	migrateGroups = []flagGroup{
		planGroups[0], planGroups[1],
		{"selection and edits", append(slices.Clone(planGroups[2].flags), "dry-run")},
		planGroups[3],
		{"Strimzi", append(slices.Clone(planGroups[4].flags), "strimzi-secret-file", "verify")},
		{"timing", applyGroups[4].flags},
		{"output", []string{"report", "cutover-report"}},
	}
)

// verbHelps are the helps of migrate's verbs, by their flag set's name.
var verbHelps = map[string]cmdHelp{
	"migrate plan": {
		synopsis: "offsetagent migrate plan -o PLAN --to-brokers HOSTS (--from-brokers HOSTS | --from-connect-url URL) [flags]",
		about: "Read A and B, run every check of the migration and ask B's agents to plan each connector\n" +
			"(nothing is stopped on A, nothing written on B), and write the plan to PLAN (YAML, mode\n" +
			"0600; secrets hidden) for review. Then: offsetagent migrate apply PLAN.",
		required: []string{"o", "to-brokers", "from-brokers|from-connect-url"},
		env: map[string]string{"to-config-topic": "OFFSETAGENT_CONFIG_TOPIC", "to-offsets-topic": "OFFSETAGENT_OFFSETS_TOPIC",
			"request-topic": "OFFSETAGENT_REQUEST_TOPIC", "result-topic": "OFFSETAGENT_RESULT_TOPIC"},
		envDefault: map[string]string{"to-config-topic": "connect-configs", "to-offsets-topic": "connect-offsets",
			"request-topic": "connect-offset-requests", "result-topic": "connect-offset-results"},
		groups: planGroups,
		after: "Exit status: 0 nothing refused, 1 a connector refused (or not planned by B's agent), 2 bad\n" +
			"flags, an unreachable cluster or a refused precheck (no plan written). See docs/migration.md.",
	},
	"migrate apply": {
		synopsis: "offsetagent migrate apply [flags] PLAN",
		about: "Carry out PLAN (written by migrate plan): read A and B again, refuse each connector that\n" +
			"drifted since the plan (its config or state on A, or a connector of its name on B), move the\n" +
			"others as migrate does, write the cutover report and verify it. Run again on the same PLAN,\n" +
			"it continues the same migration.",
		groups: applyGroups,
		after: "--set KEY=VALUE gives the values of the secret --set edits the plan marks value_at_apply.\n" +
			"The cutover report goes to --cutover-report, by default PLAN.cutover.json.\n" +
			"Exit status: as migrate's: 0 every connector succeeded, 1 any failed, skipped (a drift) or\n" +
			"pending, or a mismatch, 2 bad flags, an unreadable plan, an unreachable cluster, a refused\n" +
			"precheck or a plan whose clusters are not A and B, 4 all succeeded and a replay.",
	},
	"migrate verify": {
		synopsis: "offsetagent migrate verify [flags] REPORT  |  offsetagent migrate verify --manifests DIR --to-connect-url URL",
		about: "Verify the cutover REPORT records (written by migrate apply or migrate) on B's brokers, and\n" +
			"write REPORT back verified; with --manifests, that each connector of an operator-managed B\n" +
			"runs with the offsets placed. migrate --verify --cutover-report REPORT is the old spelling.",
		groups: verifyGroups,
		after: "--to-brokers defaults to the report's B (its \"to\"); --from-brokers, when given, is A's Kafka\n" +
			"cluster, where a connector stopped on A without its REST API is checked again.\n" +
			"Exit status: 0 every partition verified, 1 a mismatch, 2 bad flags or B unreadable, 3 some\n" +
			"waiting or unordered, 4 all decided and some replay.",
	},
}
