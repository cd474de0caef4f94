package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// fleetFlags are the flags export and migrate share.
type fleetFlags struct {
	fromBrokers, fromConfigTopic, fromOffsetsTopic, fromConnectURL string
	include, exclude, rename, set, unset                           listFlag
	mapValue, keepA                                                listFlag
	initialState, sinkOffsets, toBrokers, report, stateTopic       string
	stopSource                                                     bool
	// MirrorMaker 2 (--sink-offsets translate).
	mm2SourceAlias, mm2TargetAlias, replicationPolicy, replicationSeparator string
	checkpointWait, checkpointMaxAge                                        time.Duration
	mm2ConfigTopics                                                         listFlag
	exact, allowReplay, sinkFollowsSource                                   bool
	// Per-cluster client settings (security.go).
	fromCommandConfig, toCommandConfig, fromConnectConfig string
	allowUnreadable                                       bool
	// allowEmpty: go on when a selection flag matches nothing, or nothing is selected.
	allowEmpty bool
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.fromBrokers, "from-brokers", "", "A's bootstrap brokers: read A's Connect topics and sink groups")
	fs.StringVar(&f.fromConfigTopic, "from-config-topic", "connect-configs", "A's config topic")
	fs.StringVar(&f.fromOffsetsTopic, "from-offsets-topic", "connect-offsets", "A's offsets topic")
	fs.StringVar(&f.fromConnectURL, "from-connect-url", "", "A's Connect REST API (credentials: --from-connect-config or OFFSETAGENT_FROM_CONNECT_USER_INFO, not in the URL)")
	fs.StringVar(&f.fromCommandConfig, "from-command-config", "", "Kafka client properties file (security.protocol, sasl.*, ssl.*) for A's brokers (default: the OFFSETAGENT_SASL_*/TLS_* variables or OFFSETAGENT_COMMAND_CONFIG)")
	fs.StringVar(&f.toCommandConfig, "to-command-config", "", "Kafka client properties file for B's brokers (default: the OFFSETAGENT_SASL_*/TLS_* variables or OFFSETAGENT_COMMAND_CONFIG)")
	fs.StringVar(&f.fromConnectConfig, "from-connect-config", "", "properties file for A's Connect REST API: basic.auth.user.info, ssl.truststore.*, ssl.keystore.* (PEM)")
	fs.BoolVar(&f.allowUnreadable, "allow-unreadable-offsets", false, "go on with a sink whose committed offsets cannot all be read (a topic or group the principal may not describe or read): its unreadable partitions get no offset")
	fs.Var(&f.include, "include", "select connectors whose whole name matches this Go regexp (repeatable)")
	fs.Var(&f.exclude, "exclude", "leave out connectors whose whole name matches this Go regexp (repeatable)")
	fs.BoolVar(&f.allowEmpty, "allow-empty", false, "go on (with a warning) when an --include, --exclude or --rename matches no connector, and exit 0 when nothing is selected (by default either is exit status 1 before anything is stopped or published)")
	fs.Var(&f.rename, "rename", "RE=REPL: rename on B (RE matches the whole name; REPL may use $1) (repeatable)")
	fs.Var(&f.set, "set", "KEY=VALUE config edit for every selected connector (repeatable)")
	fs.Var(&f.unset, "unset", "config key removed from every selected connector (repeatable)")
	fs.Var(&f.mapValue, "map-value", "every non-secret config value that is FROM (a list in any order), or lists FROM as one element, becomes TO, after --set and --unset: e.g. A's bootstrap list to B's (repeatable)")
	fs.Var(&f.keepA, "keep-a", "config key that may keep pointing at A on purpose (a MirrorMaker 2 source reading A): --map-value leaves it alone, and migrate warns about it instead of refusing the connector (repeatable)")
	fs.StringVar(&f.initialState, "initial-state", "", "RUNNING, PAUSED or STOPPED: overrides the state carried over from A")
	fs.StringVar(&f.sinkOffsets, "sink-offsets", "", "copy, none or translate: what happens to sink offsets (default: translate with --mm2-source-alias, else copy)")
	fs.BoolVar(&f.stopSource, "stop-source", false, "stop each selected connector on A first and wait for its final commit (needs --from-connect-url; for sinks --from-brokers; with export also --to-brokers, for the state records)")
	fs.StringVar(&f.stateTopic, "state-topic", source.DefaultStateTopic, "compacted topic on B (--to-brokers) where --stop-source records each connector's state on A before stopping it")
	fs.StringVar(&f.toBrokers, "to-brokers", "", "B's bootstrap brokers")
	fs.StringVar(&f.report, "report", "", "write the JSON report to this file (migrate: after each wave too, so that a killed run leaves one)")
	fs.StringVar(&f.mm2SourceAlias, "mm2-source-alias", "", "A's alias in MirrorMaker 2: sink offsets are translated through <ALIAS>.checkpoints.internal on B (--to-brokers)")
	fs.StringVar(&f.mm2TargetAlias, "mm2-target-alias", "", "B's alias in MirrorMaker 2: bounds replays with MM2's offset syncs, read from mm2-offset-syncs.<ALIAS>.internal on A (--from-brokers)")
	fs.StringVar(&f.replicationPolicy, "replication-policy", string(mm2.PolicyDefault), "default or identity: how MirrorMaker 2 names A's topics on B")
	fs.StringVar(&f.replicationSeparator, "replication-separator", mm2.DefaultSeparator, "MirrorMaker 2's replication.policy.separator")
	fs.DurationVar(&f.checkpointWait, "checkpoint-wait", mm2.DefaultWait, "how long to wait, in all, while a needed checkpoint is missing or still moving")
	fs.DurationVar(&f.checkpointMaxAge, "checkpoint-max-age", fleet.DefaultCheckpointMaxAge,
		"before anything stops, refuse a sink whose group's newest MirrorMaker 2 checkpoint is older than this while A's commits are ahead of it (0: no such check)")
	fs.Var(&f.mm2ConfigTopics, "mm2-config-topic", "Connect config topic on B (--to-brokers) holding MirrorMaker 2's connector configs, read to check that MM2 checkpoints each sink's group "+
		"(repeatable; default: B's Connect config topic, mm2-configs.<ALIAS>.internal and mirrormaker2-cluster-configs)")
	fs.BoolVar(&f.exact, "exact", false, "refine each translated offset by finding A's last consumed record on B")
	fs.BoolVar(&f.allowReplay, "allow-replay", false, "accept sink partitions translated with replay or not at all (missing ones get no offset)")
	fs.BoolVar(&f.sinkFollowsSource, "sink-follows-source", false, "move a sink together with a selected source that writes its topics (with --stop-source): on B it reads the topics the source writes there, not MirrorMaker 2's renamed copies, from where the source starts writing (by default such a pair is refused when the replication policy renames topics)")
}

// sinkMode resolves --sink-offsets: translate by default when --mm2-source-alias is given.
func (f *fleetFlags) sinkMode() string {
	switch {
	case f.sinkOffsets != "":
		return f.sinkOffsets
	case f.mm2SourceAlias != "":
		return string(fleet.SinkOffsetsTranslate)
	default:
		return string(fleet.SinkOffsetsCopy)
	}
}

// translator builds MirrorMaker 2's settings for --sink-offsets translate (nil for the other
// modes).
// B is read through --to-brokers, A through --from-brokers (for --exact and the offset syncs),
// each with its cluster's SASL/TLS transport (nil for none) and principal.
func (f *fleetFlags) translator(cl clusters, logger *slog.Logger) (*fleet.MM2, error) {
	if f.sinkMode() != string(fleet.SinkOffsetsTranslate) {
		if f.mm2SourceAlias != "" || f.mm2TargetAlias != "" || f.exact || f.allowReplay || f.sinkFollowsSource || len(f.mm2ConfigTopics) > 0 {
			return nil, fmt.Errorf("--mm2-source-alias, --mm2-target-alias, --mm2-config-topic, --exact, --allow-replay and --sink-follows-source apply to --sink-offsets translate, not %s", f.sinkMode())
		}
		return nil, nil
	}
	var errs []error
	if f.mm2SourceAlias == "" {
		errs = append(errs, errors.New("--sink-offsets translate needs --mm2-source-alias (A's alias in MirrorMaker 2)"))
	}
	if f.toBrokers == "" {
		errs = append(errs, errors.New("--sink-offsets translate reads MirrorMaker 2's checkpoints on B: --to-brokers is required"))
	}
	if f.fromBrokers == "" && (f.exact || f.mm2TargetAlias != "") {
		errs = append(errs, errors.New("--exact and --mm2-target-alias read A's records and offset syncs: --from-brokers is required"))
	}
	if f.checkpointWait < 0 {
		errs = append(errs, fmt.Errorf("--checkpoint-wait %s: must not be negative", f.checkpointWait))
	}
	if f.checkpointMaxAge < 0 {
		errs = append(errs, fmt.Errorf("--checkpoint-max-age %s: must not be negative", f.checkpointMaxAge))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	policy := mm2.Policy{Kind: mm2.PolicyKind(f.replicationPolicy), SourceAlias: f.mm2SourceAlias, TargetAlias: f.mm2TargetAlias,
		Separator: f.replicationSeparator}
	cfg := mm2.Config{
		Target: kafkaio.Options{Brokers: splitList(f.toBrokers), Transport: cl.to.Transport, Principal: cl.toPrincipal},
		Source: kafkaio.Options{Brokers: splitList(f.fromBrokers), Transport: cl.from.Transport, Principal: cl.fromPrincipal},
		Policy: policy, Wait: f.checkpointWait, Exact: f.exact, Logger: logger,
	}
	if f.mm2TargetAlias != "" {
		// MM2's default offset-syncs.topic.location=source: on A, named after B's alias.
		cfg.OffsetSyncs = &mm2.OffsetSyncsLocation{Cluster: cfg.Source, Topic: policy.OffsetSyncsTopic(f.mm2TargetAlias)}
	}
	tr, err := mm2.NewTranslator(cfg)
	if err != nil {
		return nil, err
	}
	return &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: f.allowReplay, Logger: logger,
		CheckpointMaxAge: f.checkpointMaxAge, ConfigTopics: f.mm2ConfigTopics}, nil
}

// options turns the flags into migrate.Options; the environment supplies SASL/TLS.
func (f *fleetFlags) options(stderr io.Writer) (migrate.Options, error) {
	sel, err := source.NewSelection(source.SelectionFlags{Include: f.include, Exclude: f.exclude, Rename: f.rename, Set: f.set, Unset: f.unset,
		MapValue: f.mapValue, KeepA: f.keepA})
	if err != nil {
		return migrate.Options{}, err
	}
	o := migrate.Options{
		ConnectURL: f.fromConnectURL, Selection: sel, InitialState: strings.ToUpper(f.initialState),
		SinkOffsets: fleet.SinkOffsetsMode(f.sinkMode()), StopSource: f.stopSource, SinkFollowsSource: f.sinkFollowsSource,
		AllowEmpty: f.allowEmpty, Logger: spellingLogger(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	o.States = &source.StateStore{Brokers: splitList(f.toBrokers), Topic: f.stateTopic, SelectionKey: f.selectionKey()}
	if f.fromBrokers != "" {
		o.Topics = &source.TopicsSource{Brokers: splitList(f.fromBrokers), ConfigTopic: f.fromConfigTopic, OffsetsTopic: f.fromOffsetsTopic,
			AllowUnreadable: f.allowUnreadable}
	}
	return o, nil
}

// selectionKey is the text a derived migration id hashes: every flag that changes what is
// created on B, in an encoding that tells apart every two selections.
//
// Left out on purpose: --to-strimzi-cluster (an offsets-only request has ids of its own
// within the migration, so a plain run after it creates the connectors, and both share
// --stop-source's state records), --stop-source (it changes what happens on A), --dry-run
// (its request ids are its own, and plans never count as results), and the flags that decide
// only whether a connector can be published and how exactly its offsets are found (--exact,
// --allow-replay, --mm2-target-alias, --checkpoint-wait, --checkpoint-max-age,
// --mm2-config-topic, --allow-unreadable-offsets,
// --allow-empty): the runbook re-runs the same migration with them to complete its failed
// connectors, and a new id would re-publish, and so fail as existing, those it created.
//
// Where each repeatable flag was given at most once, and never empty, the key is the flags
// joined by NUL bytes, as it always was, so that a migration begun by an earlier version keeps
// its id: a command-line value holds no NUL, and the number of fields is fixed. A flag given
// twice (`--set a=1 --set b=2`) was joined by commas before, which gave it the id of `--set
// a=1,b=2`; such selections, and a flag given once with an empty value, are now keyed by a
// JSON object instead, which holds no NUL and so never equals a key of the first form.
func (f *fleetFlags) selectionKey() string {
	mm2 := f.sinkMode() == string(fleet.SinkOffsetsTranslate)
	lists := []listFlag{f.include, f.exclude, f.rename, f.set, f.unset}
	// --map-value and --keep-a are newer than the NUL-joined key: given, they key by JSON.
	legacy := len(f.mapValue) == 0 && len(f.keepA) == 0
	for _, l := range lists {
		if len(l) > 1 || (len(l) == 1 && l[0] == "") {
			legacy = false
		}
	}
	if legacy {
		key := []string{f.fromConfigTopic, f.fromOffsetsTopic, f.include.String(), f.exclude.String(), f.rename.String(),
			f.set.String(), f.unset.String(), f.initialState, f.sinkMode()}
		if mm2 {
			// Only here, so that the ids of migrations without MirrorMaker 2 stay as they were.
			key = append(key, f.mm2SourceAlias, f.replicationPolicy, f.replicationSeparator)
			if f.sinkFollowsSource {
				key = append(key, "sink-follows-source")
			}
		}
		return strings.Join(key, "\x00")
	}
	type mm2Key struct {
		SourceAlias string `json:"source_alias"`
		Policy      string `json:"policy"`
		Separator   string `json:"separator"`
		// Only when given, so that the ids of migrations without it stay as they were.
		FollowsSource bool `json:"sink_follows_source,omitempty"`
	}
	k := struct {
		ConfigTopic  string   `json:"config_topic"`
		OffsetsTopic string   `json:"offsets_topic"`
		Include      []string `json:"include"`
		Exclude      []string `json:"exclude"`
		Rename       []string `json:"rename"`
		Set          []string `json:"set"`
		Unset        []string `json:"unset"`
		// Only when given, so that the ids of migrations without them stay as they were.
		MapValue     []string `json:"map_value,omitempty"`
		KeepA        []string `json:"keep_a,omitempty"`
		InitialState string   `json:"initial_state"`
		SinkOffsets  string   `json:"sink_offsets"`
		MM2          *mm2Key  `json:"mm2,omitempty"`
	}{f.fromConfigTopic, f.fromOffsetsTopic, f.include, f.exclude, f.rename, f.set, f.unset, f.mapValue, f.keepA, f.initialState, f.sinkMode(), nil}
	if mm2 {
		k.MM2 = &mm2Key{f.mm2SourceAlias, f.replicationPolicy, f.replicationSeparator, f.sinkFollowsSource}
	}
	b, _ := json.Marshal(k) // strings and lists of strings only: it cannot fail
	return string(b)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseFleet parses args into fs and refuses positional arguments; --help prints the usage
// (usage.go). done says the command must return code now.
func parseFleet(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return code, true
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "offsetagent %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, true
	}
	return 0, false
}

// setup builds the options of the flags, with each cluster's client settings (security.go)
// and B's topics from the agent's environment variables.
func (f *fleetFlags) setup(ctx context.Context, stderr io.Writer) (migrate.Options, agent.Config, clusters, error) {
	opts, err := f.options(stderr)
	if err != nil {
		return opts, agent.Config{}, clusters{}, err
	}
	cfg, cl, err := f.clusters(ctx, stderr)
	if err != nil {
		return opts, cfg, cl, err
	}
	if opts.Topics != nil {
		opts.Topics.Transport, opts.Topics.Dialer, opts.Topics.Principal = cl.from.Transport, cl.from.Dialer, cl.fromPrincipal
	}
	opts.States.Transport, opts.States.Principal = cl.to.Transport, cl.toPrincipal
	if f.fromConnectURL != "" {
		if opts.HTTPClient, err = connectClient(f.fromConnectURL, "--from-connect-url", f.fromConnectConfig, "--from-connect-config",
			fromConnectUserInfoVar, stderr); err != nil {
			return opts, cfg, cl, err
		}
	} else if f.fromConnectConfig != "" {
		return opts, cfg, cl, errors.New("--from-connect-config: given without --from-connect-url")
	}
	if opts.MM2, err = f.translator(cl, opts.Logger); err != nil {
		return opts, cfg, cl, err
	}
	return opts, cfg, cl, nil
}

func cmdExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	var f fleetFlags
	f.register(fs)
	out := fs.String("o", "", "write the bodies to this file instead of stdout")
	migrationID := fs.String("migration-id", "", "with --stop-source: the migration whose state records to use (default: the id migrate derives from the same flags)")
	connectTimeout := connectTimeoutFlag(fs)
	if code, done := parseFleet(fs, args, stdout, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, _, cl, err := f.setup(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent export: %s\n", errorText(err))
		return 2
	}
	if err := opts.Check(); err != nil {
		fmt.Fprintf(stderr, "offsetagent export: %s\n", errorText(err))
		return 2
	}
	if err := f.reach(ctx, stderr, cl, *connectTimeout, f.stopSource || f.mm2SourceAlias != ""); err != nil {
		fmt.Fprintf(stderr, "offsetagent export: %s\n", errorText(err))
		return 2
	}
	opts.States.MigrationID = *migrationID
	rep, err := migrate.Export(ctx, opts)
	if err != nil {
		return fleetError(stderr, "export", err)
	}
	w := stdout
	if *out != "" {
		file, err := createPrivate(*out)
		if err != nil {
			fmt.Fprintf(stderr, "offsetagent export: %s\n", errorText(err))
			return 2
		}
		defer file.Close()
		w = file
	}
	if err := apply.WriteBodies(w, rep); err != nil {
		fmt.Fprintf(stderr, "offsetagent export: %s\n", errorText(err))
		return 1
	}
	return finishReport(rep, f.report, stderr, stderr)
}

// migrateCmd holds every flag of migrate, the shortcut (plan and apply in one run); each
// verb's flag set takes the subset its help groups name (usage.go).
type migrateCmd struct {
	f  fleetFlags
	mf migrateFlags
	vf verifyFlags
	sf strimziFlags
}

func (c *migrateCmd) register(fs *flag.FlagSet) {
	c.f.register(fs)
	c.mf.register(fs)
	c.vf.register(fs)
	c.sf.register(fs)
}

func cmdMigrate(args []string, stdout, stderr io.Writer) int {
	// A verb is the first argument (a positional argument of migrate itself is an error, so
	// this was never a valid call of it).
	if len(args) > 0 {
		if verb, ok := migrateVerbs[args[0]]; ok {
			return verb(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var c migrateCmd
	c.register(fs)
	if code, done := parseFleet(fs, args, stdout, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	toHTTP, err := c.mf.toConnectClient(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate: %s\n", errorText(err))
		return 2
	}
	if code, done := c.sf.run(ctx, *c.mf.toConnectURL, toHTTP, stdout, stderr); done {
		return code
	}
	if c.sf.verify {
		if c.vf.cutoverReport != "" {
			fmt.Fprintf(stderr, "offsetagent migrate: --verify --cutover-report FILE is spelt `offsetagent migrate verify %s` now\n", c.vf.cutoverReport)
		}
		return c.vf.runAlone(ctx, &c.f, stdout, stderr)
	}
	mo, code, done := c.options(ctx, "migrate", toHTTP, stderr)
	if done {
		return code
	}
	rep, cut, err := migrate.Migrate(ctx, mo)
	if err != nil {
		return fleetError(stderr, "migrate", err)
	}
	if *c.mf.dry {
		if err := writePlans(stdout, rep); err != nil {
			fmt.Fprintf(stderr, "offsetagent migrate: %s\n", errorText(err))
			return 1
		}
	}
	code = finishReport(rep, c.f.report, stdout, stderr)
	if !*c.mf.dry {
		code = worseExit(code, c.vf.finish(cut, mo.Verify > 0 && mo.Strimzi == nil, stdout, stderr))
	}
	return code
}

// options are the migration's options of the flags, checked, with A and B reached (command
// names the command in messages); done with the exit status when they cannot be had.
func (c *migrateCmd) options(ctx context.Context, command string, toHTTP *http.Client, stderr io.Writer) (mo migrate.MigrateOptions, code int, done bool) {
	f, mf := &c.f, &c.mf
	opts, cfg, cl, err := f.setup(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent %s: %s\n", command, errorText(err))
		return mo, 2, true
	}
	mo = migrate.MigrateOptions{
		Options: opts,
		To: target.Target{Brokers: splitList(f.toBrokers), RequestTopic: cfg.RequestTopic, ResultTopic: cfg.ResultTopic,
			ConfigTopic: cfg.ConfigTopic, OffsetsTopic: cfg.OffsetsTopic, Transport: cl.to.Transport, Dialer: cl.to.Dialer,
			Principal: cl.toPrincipal, AgentGroup: cfg.GroupID,
			ConnectURL: *mf.toConnectURL, HTTPClient: toHTTP, Compression: cfg.RequestCompression, MaxRequestBytes: cfg.MaxRequestBytes},
		MigrationID: *mf.migrationID, SelectionKey: f.selectionKey(), Concurrency: *mf.concurrency, WaveSize: *mf.waveSize, Timeout: *mf.timeout, Grace: *mf.grace, DryRun: *mf.dry,
		Progress: progressFor(stderr), Strimzi: c.sf.target(), Verify: c.vf.timeout(*mf.dry), VerifyProgress: verifyProgress(stderr),
		Words: flagWords,
	}
	if f.report != "" || c.vf.cutoverReport != "" {
		files := &reportFiles{report: f.report, cutover: c.vf.cutoverReport, stderr: stderr}
		mo.Checkpoint = files.checkpoint
	}
	mf.setTarget(&mo.To)
	if err := mo.Check(); err != nil {
		fmt.Fprintf(stderr, "offsetagent %s: %s\n", command, errorText(err))
		return mo, 2, true
	}
	if err := f.reach(ctx, stderr, cl, *mf.connectTimeout, true); err != nil {
		fmt.Fprintf(stderr, "offsetagent %s: %s\n", command, errorText(err))
		return mo, 2, true
	}
	return mo, 0, false
}

// migrateFlags are the flags of migrate that export does not have.
type migrateFlags struct {
	requestTopic, resultTopic, migrationID *string
	toConnectURL, toConnectConfig          *string
	toConfigTopic, toOffsetsTopic          *string
	concurrency, waveSize                  *int
	timeout, grace, connectTimeout         *time.Duration
	dry, allowNoAgent                      *bool
}

func (mf *migrateFlags) register(fs *flag.FlagSet) {
	mf.requestTopic = fs.String("request-topic", "", "the request topic B's agents consume")
	mf.resultTopic = fs.String("result-topic", "", "the result topic B's agents write")
	mf.migrationID = fs.String("migration-id", "", "the migration's id (default: derived from A's cluster id and the selection)")
	mf.concurrency = fs.Int("concurrency", 16, "requests in flight")
	mf.waveSize = fs.Int("wave-size", 0, "with --stop-source: connectors stopped on A and published per wave, each wave bounded by --timeout (default: --concurrency)")
	mf.timeout = fs.Duration("timeout", 30*time.Minute, "bound on the prechecks and on each wave: its stop on A, and its requests' deadline (from its publishing), which B's agents honour (0: none; refused with --stop-source)")
	mf.grace = fs.Duration("grace", 30*time.Second, "how long past the requests' deadline to wait for results still on their way")
	mf.dry = fs.Bool("dry-run", false, "publish dry-run requests: print the plans, change nothing on B")
	mf.toConnectURL = fs.String("to-connect-url", "", "B's Connect REST API (for the prechecks: without it B's plugins and configs are not checked; and --verify; credentials: --to-connect-config or OFFSETAGENT_TO_CONNECT_USER_INFO)")
	mf.toConnectConfig = fs.String("to-connect-config", "", "properties file for B's Connect REST API: basic.auth.user.info, ssl.truststore.*, ssl.keystore.* (PEM)")
	mf.toConfigTopic = fs.String("to-config-topic", "", "B's Connect config topic")
	mf.toOffsetsTopic = fs.String("to-offsets-topic", "", "B's Connect offsets topic")
	mf.allowNoAgent = fs.Bool("allow-no-agent", false, "publish even when no agent consumes B's request topic now: the requests wait for one until --timeout")
	mf.connectTimeout = connectTimeoutFlag(fs)
}

// toConnectClient returns the client of B's Connect REST API, nil without --to-connect-url.
func (mf *migrateFlags) toConnectClient(stderr io.Writer) (*http.Client, error) {
	if *mf.toConnectURL != "" {
		return connectClient(*mf.toConnectURL, "--to-connect-url", *mf.toConnectConfig, "--to-connect-config",
			toConnectUserInfoVar, stderr)
	} else if *mf.toConnectConfig != "" {
		return nil, errors.New("--to-connect-config: given without --to-connect-url")
	}
	return nil, nil
}

// setTarget applies the flags that override the agents' configuration to B's target.
func (mf *migrateFlags) setTarget(to *target.Target) {
	if *mf.requestTopic != "" {
		to.RequestTopic = *mf.requestTopic
	}
	if *mf.resultTopic != "" {
		to.ResultTopic = *mf.resultTopic
	}
	if *mf.toConfigTopic != "" {
		to.ConfigTopic = *mf.toConfigTopic
	}
	if *mf.toOffsetsTopic != "" {
		to.OffsetsTopic = *mf.toOffsetsTopic
	}
	to.RequireAgent = !*mf.allowNoAgent
}

// progressFor draws a bar when w is a terminal, else one line per connector.
func progressFor(w io.Writer) apply.Progress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

// createPrivate creates (or truncates) path readable and writable by its owner only (0600),
// also when it existed with a wider mode: export's bodies hold the configs as stored, secrets
// in plain text. The report is masked, but gets the same mode, since it names the fleet.
func createPrivate(path string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := file.Chmod(0o600); err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("make %s private: %w", path, err)
	}
	return file, nil
}

// replacePrivate writes path whole or not at all: write fills path+".tmp", private (0600)
// and in path's directory, which is synced and renamed over path, and the directory synced,
// so that a run killed at any moment leaves either the file before or the file after. A
// failed write leaves path as it was.
func replacePrivate(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	file, err := createPrivate(tmp)
	if err != nil {
		return err
	}
	if err := errors.Join(write(file), file.Sync(), file.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil { // the rename itself, on disk
		_ = dir.Sync()
		_ = dir.Close()
	}
	return nil
}

// reportFiles are migrate's --report and --cutover-report files, written after each wave
// (checkpoint: MigrateOptions.Checkpoint) and at the end: a run killed before its end leaves
// what its waves did up to the last one.
type reportFiles struct {
	report, cutover string
	stderr          io.Writer
	// failed: a write failed once, and was said; the next ones are tried without a word.
	failed bool
}

func (f *reportFiles) checkpoint(rep *apply.Report, cut *cutover.Cutover) {
	var errs []error
	if f.report != "" {
		fleet.SpellIn(rep, flagWords)
		errs = append(errs, replacePrivate(f.report, rep.WriteJSON))
	}
	if f.cutover != "" && cut != nil {
		fleet.SpellIn(cut, flagWords)
		errs = append(errs, replacePrivate(f.cutover, cut.WriteJSON))
	}
	if err := errors.Join(errs...); err != nil && !f.failed {
		f.failed = true
		fmt.Fprintf(f.stderr, "offsetagent migrate: write the reports of the run so far: %s\n", errorText(err))
	}
}

// finishReport writes the summary table to table, the JSON report to path (when given) and
// returns the exit status: 0 when every connector succeeded or was planned, else 1.
func finishReport(rep *apply.Report, path string, table, stderr io.Writer) int {
	_ = writeTable(table, rep)
	if path != "" {
		fleet.SpellIn(rep, flagWords)
		if err := replacePrivate(path, rep.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "offsetagent: write report: %s\n", errorText(err))
			return 1
		}
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
