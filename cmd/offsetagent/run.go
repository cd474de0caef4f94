package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sethvargo/go-envconfig"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// embeddedAddr is where `run --embedded-broker` and `demo` listen.
const embeddedAddr = "127.0.0.1:9092"

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	embedded := fs.Bool("embedded-broker", false, "start an in-process Kafka broker on "+embeddedAddr+" holding Connect's topics")
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "offsetagent run: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// A misspelt variable is named first: it may be why the configuration is wrong.
	unknown := unknownVariables(os.Environ())
	cfg, notes, err := loadConfigNotes(ctx)
	if err != nil {
		warnUnknown(stderr, unknown)
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	log, err := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		warnUnknown(stderr, unknown)
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	for _, w := range unknown {
		log.Warn("unknown variable", "warning", w)
	}
	for _, n := range notes {
		log.Info("client properties key without effect", "note", n)
	}
	// The soft memory limit (memlimit.go): before the views are loaded, so that it holds for
	// them too.
	container, err := containerMemoryLimit("/")
	if err != nil {
		log.Warn("no container memory limit", "err", err)
	}
	mem := newMemoryPolicy(cfg, os.Getenv("GOMEMLIMIT"), container)
	logMemoryLimit(log, mem, startMemoryLimiter(ctx, mem))
	if *embedded {
		b, err := startEmbedded(embeddedAddr)
		if err != nil {
			log.Error("start embedded broker", "err", err)
			return 1
		}
		defer b.Close()
		cfg.Brokers = []string{b.Addr()}
		cfg.CreateConnectTopics = true
		log.Info("embedded broker started", "addr", b.Addr())
	}
	reg := newRegistry()
	a, err := agent.New(cfg, agent.Options{Logger: log, Registry: reg, Gatherer: reg, Version: version, Fault: faultFromEnv()})
	if err != nil {
		log.Error("build agent", "err", err)
		return 2
	}
	switchPprofOnSignals(ctx, a) // `offsetagent pprof on|off`
	log.Info("starting", "version", version, "brokers", strings.Join(cfg.Brokers, ","), "request_topic", cfg.RequestTopic)
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("agent stopped", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// loadConfig reads the agent's configuration from the environment.
func loadConfig(ctx context.Context) (agent.Config, error) {
	cfg, _, err := loadConfigNotes(ctx)
	return cfg, err
}

// loadConfigNotes reads the agent's configuration from the environment, with the brokers'
// security settings from the file OFFSETAGENT_COMMAND_CONFIG names when it is set; the notes
// are that file's accepted tuning keys.
func loadConfigNotes(ctx context.Context) (agent.Config, []string, error) {
	cfg, err := readConfig(ctx, envconfig.OsLookuper())
	// Every value that cannot be read, then every one Validate refuses, all at once.
	errs := []error{err, cfg.Validate()}
	if cfg.CommandConfig != "" && cfg.Security.FromVariables() {
		// Judged here, where it is known that Security came from the variables: once the
		// file's settings are in it, Security looks the same as if they had.
		errs = append(errs, errors.New("OFFSETAGENT_COMMAND_CONFIG: set together with OFFSETAGENT_SASL_*/OFFSETAGENT_TLS_* variables: give the brokers' security settings one way, not both"))
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if cfg.CommandConfig == "" {
		return cfg, nil, nil
	}
	sec, notes, err := clientconfig.ReadCommandConfig(cfg.CommandConfig)
	if err != nil {
		return cfg, nil, fmt.Errorf("OFFSETAGENT_COMMAND_CONFIG: %w", err)
	}
	cfg.Security = sec
	return cfg, notes, nil
}

// clientConfig is the configuration and connections of the client subcommands (publish,
// offsets, results): the same environment as the agent's. Unknown OFFSETAGENT_ variables are
// warned about on stderr.
func clientConfig(ctx context.Context, stderr io.Writer) (agent.Config, *clientconfig.Connections, error) {
	warnUnknown(stderr, unknownVariables(os.Environ()))
	cfg, err := loadConfig(ctx)
	if err != nil {
		return cfg, nil, err
	}
	conns, err := clientconfig.NewConnections(cfg.Security)
	return cfg, conns, err
}

// warnUnknown writes the warnings of unknownVariables, one a line.
func warnUnknown(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "offsetagent: warning: %s\n", s)
	}
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("OFFSETAGENT_LOG_LEVEL: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("OFFSETAGENT_LOG_FORMAT: %q, must be json or text", format)
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func cmdVersion(w io.Writer) int {
	fmt.Fprintf(w, "offsetagent %s (commit %s, %s)\n", version, commit, runtime.Version())
	return 0
}
