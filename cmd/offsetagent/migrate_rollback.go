package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/rollback"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// rollbackFlags are the flags of `migrate rollback REPORT`.
type rollbackFlags struct {
	fromConnectURL, fromConnectConfig, fromBrokers, fromCommandConfig string
	toBrokers, toCommandConfig, toConnectURL, toConnectConfig         string
	stateTopic, report                                                string
	include, exclude                                                  listFlag
	timeout, connectTimeout                                           time.Duration
	execute                                                           bool
}

func (f *rollbackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.fromConnectURL, "from-connect-url", "", "A's Connect REST API, where the connectors go back (default: the report's; credentials: --from-connect-config or OFFSETAGENT_FROM_CONNECT_USER_INFO)")
	fs.StringVar(&f.fromConnectConfig, "from-connect-config", "", "properties `file` for A's Connect REST API: basic.auth.user.info, ssl.truststore.*, ssl.keystore.* (PEM)")
	fs.StringVar(&f.fromBrokers, "from-brokers", "", "A's Kafka cluster, optional: checks that A still holds the records a sink resumes at (else \"not checked\"), and reads MirrorMaker 2's offset syncs for a sink moved across it")
	fs.StringVar(&f.fromCommandConfig, "from-command-config", "", "Kafka client properties `file` for A's brokers (default: the OFFSETAGENT_SASL_*/TLS_* variables or OFFSETAGENT_COMMAND_CONFIG)")
	fs.StringVar(&f.toBrokers, "to-brokers", "", "B's Kafka cluster (default: the report's)")
	fs.StringVar(&f.toCommandConfig, "to-command-config", "", "Kafka client properties `file` for B's brokers (default: the OFFSETAGENT_SASL_*/TLS_* variables or OFFSETAGENT_COMMAND_CONFIG)")
	fs.StringVar(&f.toConnectURL, "to-connect-url", "", "B's Connect REST API, where the connectors are stopped and deleted (default: the report's; credentials: --to-connect-config or OFFSETAGENT_TO_CONNECT_USER_INFO)")
	fs.StringVar(&f.toConnectConfig, "to-connect-config", "", "properties `file` for B's Connect REST API: basic.auth.user.info, ssl.truststore.*, ssl.keystore.* (PEM)")
	fs.StringVar(&f.stateTopic, "state-topic", "", "the topic on B holding each connector's state on A before the move (default: the report's)")
	fs.Var(&f.include, "include", "roll back only the report's connectors whose whole name on A matches this Go regexp (repeatable); a name the report does not hold is refused")
	fs.Var(&f.exclude, "exclude", "leave out the report's connectors whose whole name on A matches this Go regexp (repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound on each connector's stop on B and its resume on A")
	f.connectTimeout = defaultConnectTimeout
	fs.DurationVar(&f.connectTimeout, "connect-timeout", defaultConnectTimeout,
		"how long to wait for a Kafka cluster's first answer before giving up with the address and the cause")
	fs.BoolVar(&f.execute, "execute", false, "roll back; without it, print what would be done and change nothing")
	fs.StringVar(&f.report, "report", "", "write the rollback report (JSON, mode 0600) to this file")
}

// rollbackHelp is `migrate rollback --help`, and rollbackFlagGroups its flags in the order and
// groups it lists them (every flag rollbackFlags registers is in exactly one group).
var (
	rollbackHelp = cmdHelp{
		synopsis: "offsetagent migrate rollback REPORT [--execute] [flags]",
		about: "Roll back the connectors of a migration's cutover report REPORT (written by migrate or\n" +
			"migrate apply): stop each on B behind a barrier, carry B's progress back to A (PATCH\n" +
			"/connectors/NAME/offsets on A's Connect REST API; across MirrorMaker 2 by its offset syncs and\n" +
			"the records themselves), resume each on A in its state before the move, and delete it on B\n" +
			"once that is safe. Without --execute it prints what it would do, per connector and partition,\n" +
			"and changes nothing.",
		after: "B's Connect config topic and result topic come from OFFSETAGENT_CONFIG_TOPIC and\n" +
			"OFFSETAGENT_RESULT_TOPIC (defaults connect-configs, connect-offset-results); SASL and TLS\n" +
			"from OFFSETAGENT_SASL_* and OFFSETAGENT_TLS_* unless a --*-command-config is given.\n" +
			"Outcomes: rolled_back, would_roll_back (a dry run), refused (left as it is, with why),\n" +
			"failed, kept_on_b (A took it back; deleting it on B was not safe). Partitions: carried,\n" +
			"not_carried (A replays what B delivered since the cutover; counted), skip (A's log start\n" +
			"is past the offset: records skipped; counted).\n" +
			"Exit status: 0 everything rolled back (or, dry run, could be) with nothing replayed or\n" +
			"skipped, 4 rolled back with replays or skips announced, 1 any refused, failed or kept on B,\n" +
			"2 bad flags, an unreadable report or an unreachable cluster. See docs/migration.md, \"Rollback\".",
	}
	rollbackFlagGroups = []struct {
		title string
		flags []string
	}{
		{"A (where the connectors go back)", []string{"from-connect-url", "from-connect-config", "from-brokers", "from-command-config"}},
		{"B (where they are stopped and deleted)", []string{"to-brokers", "to-command-config", "to-connect-url", "to-connect-config", "state-topic"}},
		{"selection", []string{"include", "exclude", "execute"}},
		{"timing", []string{"connect-timeout", "timeout"}},
		{"output", []string{"report"}},
	}
)

// writeRollbackUsage writes `migrate rollback --help`: the synopsis, what the verb does, its
// flags by group, then outputs and exit status.
func writeRollbackUsage(w io.Writer, fs *flag.FlagSet) {
	h := rollbackHelp
	fmt.Fprintf(w, "usage: %s\n\n%s\n", h.synopsis, h.about)
	for _, g := range rollbackFlagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			arg, text := flag.UnquoteUsage(f)
			head := "  --" + f.Name
			if arg != "" {
				head += " " + strings.ToUpper(argName(f.Name, arg))
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				head += "  (default " + f.DefValue + ")"
			}
			fmt.Fprintf(w, "%s\n      %s\n", head, text)
		}
	}
	fmt.Fprintf(w, "\n%s\n", h.after)
}

// parseRollback parses `migrate rollback` args: flags before and after the one REPORT.
func parseRollback(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (report string, code int, done bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	parse := func(args []string) (int, bool) {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeRollbackUsage(stdout, fs)
				return 0, true
			}
			fmt.Fprintf(stderr, "run 'offsetagent %s --help' for usage\n", fs.Name())
			return 2, true
		}
		return 0, false
	}
	if code, done := parse(args); done {
		return "", code, true
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "offsetagent %s: give the cutover report of the migration to roll back\nrun 'offsetagent %s --help' for usage\n", fs.Name(), fs.Name())
		return "", 2, true
	}
	report = fs.Arg(0)
	if code, done := parse(fs.Args()[1:]); done {
		return "", code, true
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "offsetagent %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return "", 2, true
	}
	return report, 0, false
}

// cmdMigrateRollback is `offsetagent migrate rollback REPORT [--execute]`.
func cmdMigrateRollback(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate rollback", flag.ContinueOnError)
	var f rollbackFlags
	f.register(fs)
	path, code, done := parseRollback(fs, args, stdout, stderr)
	if done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "offsetagent migrate rollback: "+format+"\n", a...)
		return 2
	}
	cut, err := cutover.Read(path)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ff := fleetFlags{fromCommandConfig: f.fromCommandConfig, toCommandConfig: f.toCommandConfig, fromBrokers: f.fromBrokers}
	cfg, cl, err := ff.clusters(ctx, stderr)
	if err != nil {
		return fail("%v", err)
	}
	o := migrate.RollbackOptions{Cutover: cut, FromConnectURL: f.fromConnectURL, ToConnectURL: f.toConnectURL, StateTopic: f.stateTopic,
		Include: f.include, Exclude: f.exclude, Execute: f.execute, Timeout: f.timeout,
		To: target.Target{Brokers: splitList(f.toBrokers), ConfigTopic: cfg.ConfigTopic, OffsetsTopic: cfg.OffsetsTopic, ResultTopic: cfg.ResultTopic,
			RequestTopic: cfg.RequestTopic, Transport: cl.to.Transport, Dialer: cl.to.Dialer, Principal: cl.toPrincipal}}
	if len(o.To.Brokers) == 0 {
		o.To.Brokers = splitList(cut.To)
	}
	if f.fromBrokers != "" {
		o.From = kafkaio.Options{Brokers: splitList(f.fromBrokers), Transport: cl.from.Transport, Principal: cl.fromPrincipal}
	}
	fromURL, toURL := firstOf(f.fromConnectURL, cut.FromConnectURL), firstOf(f.toConnectURL, cut.ToConnectURL)
	switch {
	case fromURL == "":
		return fail("--from-connect-url: the report names no Connect REST API of A; give it")
	case toURL == "":
		return fail("--to-connect-url: the report names no Connect REST API of B; give it")
	}
	if o.FromHTTPClient, err = connectClient(fromURL, "--from-connect-url", f.fromConnectConfig, "--from-connect-config", fromConnectUserInfoVar, stderr); err != nil {
		return fail("%v", err)
	}
	if o.ToHTTPClient, err = connectClient(toURL, "--to-connect-url", f.toConnectConfig, "--to-connect-config", toConnectUserInfoVar, stderr); err != nil {
		return fail("%v", err)
	}
	clusters := []cluster{{what: "B's Kafka cluster", from: "--to-brokers, else the report's", brokers: o.To.Brokers, tr: cl.to.Transport, principal: cl.toPrincipal}}
	if len(o.From.Brokers) > 0 {
		clusters = append(clusters, cluster{what: "A's Kafka cluster", from: "--from-brokers", brokers: o.From.Brokers, tr: cl.from.Transport, principal: cl.fromPrincipal})
	}
	if err := reach(ctx, stderr, nil, f.connectTimeout, 500*time.Millisecond, clusters...); err != nil {
		return fail("%v", err)
	}
	rep, err := migrate.Rollback(ctx, o)
	if err != nil {
		return fail("%v", err)
	}
	_ = writeRollbackTable(stdout, rep)
	if f.report != "" {
		if err := rep.WriteFile(f.report); err != nil {
			fmt.Fprintf(stderr, "offsetagent migrate rollback: %v\n", err)
			return 1
		}
	}
	return rollback.ExitCode(rep)
}

// firstOf is the first of its arguments that is not "".
func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// writeRollbackTable draws a rollback's report: one row per connector (its outcome, A's state,
// whether it was deleted on B, and why), then one row per partition (B's progress, what A
// resumes at, the verdict, the records A replays or skips), then the counts.
func writeRollbackTable(w io.Writer, r *rollback.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONNECTOR\tNAME ON B\tTYPE\tOUTCOME\tSTATE ON A\tDELETED ON B\tREASON")
	for _, c := range r.Connectors {
		deleted := "no"
		if c.DeletedOnB {
			deleted = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, dash(c.TargetName), dash(c.Type), c.Outcome, dash(c.StateOnA), deleted,
			dash(oneLine(c.Reason, 160)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	parts := false
	for _, c := range r.Connectors {
		if len(c.Partitions) > 0 {
			parts = true
		}
	}
	if parts {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CONNECTOR\tPARTITION\tFROM B\tTO A\tVERDICT\tREPLAY\tSKIP\tDETAIL")
		for _, c := range r.Connectors {
			for _, p := range c.Partitions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, mapText(p.Partition), mapText(p.FromB), mapText(p.ToA), p.Verdict,
					count(p.Replay), count(p.Skip), dash(oneLine(p.Detail, 120)))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, c := range r.Connectors {
		if c.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", c.Name, c.Note)
		}
	}
	var line strings.Builder
	fmt.Fprintf(&line, "%d connectors: %d rolled back, %d would roll back, %d refused, %d failed, %d kept on B; partitions: %d carried, %d not carried, %d skip",
		len(r.Connectors), r.Counts[rollback.RolledBack], r.Counts[rollback.WouldRollBack], r.Counts[rollback.Refused], r.Counts[rollback.Failed],
		r.Counts[rollback.KeptOnB], r.Verdicts[rollback.Carried], r.Verdicts[rollback.NotCarried], r.Verdicts[rollback.Skip])
	if !r.Execute {
		line.WriteString(" (a dry run: nothing was changed; --execute rolls back)")
	}
	_, err := fmt.Fprintln(w, line.String())
	return err
}

// mapText is a partition or offset map as compact JSON, "-" for none.
func mapText(m jsonvalue.Map) string {
	if m == nil {
		return "-"
	}
	return jsonvalue.SortedText(m)
}

// count is a count, "-" for none.
func count(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
