package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Options are the agent's dependencies besides its Config.
type Options struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Gatherer serves /metrics (usually the same registry as Registry).
	Gatherer prometheus.Gatherer
	// Version is the build's version for offsetagent_build_info.
	Version string
	// Fault, when not nil, is called at named points of every request (see handlers.Options).
	Fault func(point, connector string)
	// Listener, when not nil, is used instead of listening on Config.HTTPAddr (tests).
	Listener net.Listener
	// Stages, when not nil, replaces the staged creation (benchmarks measure the request/result
	// loop with a no-op here).
	Stages Processor
	// Backoff, when its Attempts is not 0, replaces the stages' retry schedule
	// (kafkaio.DefaultBackoff): tests that go through every attempt use short delays.
	Backoff kafkaio.Backoff
}

// Processor turns a decoded request into an outcome. *handlers.Creator is the real one.
type Processor interface {
	Create(ctx context.Context, req *events.Request) *handlers.Outcome
}

// Agent is one running offsetagent replica.
type Agent struct {
	cfg     Config
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	conns   *clientconfig.Connections
	client  *kafka.Client
	store   *offsetstore.Store
	proc    Processor
	results *resultLog
	intents *intentLog
	// inflight holds the bytes of the request records fetched and not yet processed
	// (MaxInflightBytes).
	inflight *budget
	// running holds the start time of every request being worked on.
	running *running
	health  *health

	// resultMaxBytes is the result topic's max.message.bytes (publish.go).
	resultMaxBytes atomic.Int64

	ready    atomic.Bool
	stopping atomic.Bool
	// pprof is whether /debug/pprof answers (Config.Pprof at start, then SetPprof).
	pprof atomic.Bool
	// joined is set once the consumer group handed this replica its first assignment.
	joined atomic.Bool
	// permKick asks the permission loop for a round now (permissions.go).
	permKick chan struct{}
	// principal names the agent's principal in refused-permission messages
	// (Security.Principal, read once: it may read the client certificate).
	principal string
	// clusterID is the Kafka cluster id of the brokers, read at start-up before the group is
	// joined: the agent advertises it (advertise.go).
	clusterID string
}

// New builds an agent. It validates cfg and reads TLS files but never dials.
func New(cfg Config, opts Options) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	opts = opts.withDefaults()
	conns, err := clientconfig.NewConnections(cfg.Security)
	if err != nil {
		return nil, err
	}
	a := newAgent(cfg, opts, conns)
	if err := a.openTopics(); err != nil {
		return nil, err
	}
	if a.proc, err = a.newProcessor(); err != nil {
		return nil, err
	}
	return a, nil
}

// withDefaults returns o with the fields left unset filled (a logger that discards, a fresh
// registry that also gathers, version dev) and its logger wrapped to write a repeated WARN
// line once per repeatWindow.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// A broker outage repeats the same WARN lines from every fetcher.
	o.Logger = slog.New(newRepeatLimiter(o.Logger.Handler(), repeatWindow))
	if o.Registry == nil {
		r := prometheus.NewRegistry()
		o.Registry, o.Gatherer = r, r
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

// newAgent builds the agent's own state from a valid cfg: its metrics, the in-flight byte
// budget, the running requests and health, and the Kafka client on conns.
func newAgent(cfg Config, opts Options, conns *clientconfig.Connections) *Agent {
	a := &Agent{cfg: cfg, opts: opts, log: opts.Logger, conns: conns, permKick: make(chan struct{}, 1),
		principal: cfg.Security.Principal()}
	if cfg.PermissionCheckInterval == 0 {
		a.cfg.PermissionCheckInterval = defaultPermissionCheckInterval
	}
	a.pprof.Store(cfg.Pprof)
	a.metrics = NewMetrics(opts.Registry, opts.Version)
	inflightMax := cfg.InflightBound()
	a.inflight = newBudget(inflightMax, minFetchBytes, func(used int64) { a.metrics.InFlightBytes.Set(float64(used)) })
	a.metrics.MaxInflightBytes.Set(float64(inflightMax))
	a.running = newRunning()
	a.health = newHealth(cfg.sessionTimeout(), cfg.StuckAfter, a.running.oldest)
	a.client = kafkaio.NewClient(kafkaio.Options{Brokers: cfg.Brokers, Transport: conns.Transport, Principal: a.principal})
	a.client.Timeout = 30 * time.Second
	return a
}

// openTopics builds the readers and writers of the topics the agent uses: Connect's config
// and offsets topics (the store), and its own result and intent topics. Nothing is read yet.
func (a *Agent) openTopics() error {
	cfg, opts, conns := a.cfg, a.opts, a.conns
	var err error
	a.store, err = offsetstore.New(offsetstore.Options{
		Brokers: cfg.Brokers, ConfigTopic: cfg.ConfigTopic, OffsetsTopic: cfg.OffsetsTopic,
		Transport: conns.Transport, Dialer: conns.Dialer, Logger: opts.Logger, Principal: a.principal,
		SyncedReads: true, // the stages read the views after Sync (handlers.Creator)
	})
	if err != nil {
		return err
	}
	logOpts := offsetstore.Options{Brokers: cfg.Brokers, Transport: conns.Transport, Dialer: conns.Dialer, Logger: opts.Logger,
		Principal: a.principal}
	if a.results, err = newResultLog(logOpts, cfg.ResultTopic, cfg.DedupeWindow, cfg.DedupeMaxEntries); err != nil {
		return err
	}
	stateGauges(opts.Registry, a.Ready, a.running.oldest, a.results.size)
	if a.intents, err = newIntentLog(logOpts, cfg.IntentTopic, a.store.Producer(), a.results.seen); err != nil {
		return err
	}
	a.intents.syncResults = a.results.log.Sync
	a.intents.refused = func(err error) error {
		if _, ok := kafkaio.AuthorizationCode(err); !ok {
			return err
		}
		a.kickPermissions()
		return err // the producer's *kafkaio.AuthzError
	}
	return nil
}

// newProcessor returns Options.Stages when set, else the staged creation on the agent's
// store and logs, validating configs with the Connect REST API when Config.ConnectURL is set.
func (a *Agent) newProcessor() (Processor, error) {
	if a.opts.Stages != nil {
		return a.opts.Stages, nil
	}
	cfg, opts := a.cfg, a.opts
	// Both compile: Validate checked them.
	pattern, err := cfg.OffsetsTopicPattern()
	if err != nil {
		return nil, err
	}
	groups, err := cfg.GroupsPattern()
	if err != nil {
		return nil, err
	}
	validator, err := connectValidator(cfg, opts.Logger)
	if err != nil {
		return nil, err
	}
	creator, err := handlers.NewCreator(handlers.Options{
		Store: a.store, Registry: connectors.Builtin(),
		ConfigTopic: cfg.ConfigTopic, OffsetsTopic: cfg.OffsetsTopic,
		AllowedOffsetsTopics: pattern,
		AllowedGroups:        groups,
		OnRetry:              func(r kafkaio.Reason) { a.metrics.Retries.WithLabelValues(string(r)).Inc() },
		Intents:              a.intents,
		Claims:               a.intents,
		ResultOut:            a.results.seen,
		Validator:            validator,
		ManagedBy:            cfg.ConnectorsManagedBy,
		ResultReserve:        cfg.ResultReserve,
		Fault:                opts.Fault,
		Backoff:              opts.Backoff,
		Logger:               opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	return creator, nil
}

// Store returns the agent's view of Connect's topics (for the offsets subcommand and tests).
func (a *Agent) Store() *offsetstore.Store { return a.store }

// Ready reports whether the agent serves requests (see readiness).
func (a *Agent) Ready() bool { return a.readiness() == nil }

// readiness returns why the agent does not serve requests now, nil when it does: views loaded
// and group joined, not stopping, and able to consume (health).
func (a *Agent) readiness() error {
	switch {
	case a.stopping.Load():
		return errors.New("shutting down")
	}
	if err := a.health.deniedErr(); err != nil {
		return err // also why the views may not load or the group not be joined
	}
	if mixed := a.health.mixedGroup(); mixed != "" {
		return errors.New(mixed)
	}
	if !a.ready.Load() {
		return errors.New("starting: loading views and joining the consumer group")
	}
	return a.health.check(time.Now())
}

// Run runs the agent until ctx is done or a part of it fails. On ctx's end it stops fetching,
// finishes in-flight requests within Config.ShutdownTimeout, publishes their results, commits
// and closes its clients, in that order.
func (a *Agent) Run(ctx context.Context) error {
	if len(a.cfg.AllowedSources) == 0 {
		// The default, convenient in development; in production every producer should be named.
		a.log.Warn("every request source is allowed", "hint", "set OFFSETAGENT_ALLOWED_SOURCES to the CloudEvent sources of your producers")
	}
	// The HTTP server comes first, so that /healthz answers (and /readyz says not ready) while
	// start-up waits for slow brokers: a liveness probe must not restart a replica for that.
	srv, err := a.httpServer()
	if err != nil {
		return err
	}
	sctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	// The HTTP server outlives ctx until the drain ends (or start-up does): a scrape during
	// the drain sees the requests still running and what the shutdown timeout cuts off, and
	// /readyz says "shutting down".
	httpCtx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHTTP()
	g, gctx := errgroup.WithContext(sctx)
	g.Go(func() error { return srv.run(httpCtx) })
	g.Go(func() error { a.permissionLoop(gctx, a.cfg.PermissionCheckInterval); return nil })
	if err := a.prepareTopicsRetrying(ctx); err != nil {
		stopServer()
		stopHTTP()
		_ = g.Wait()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil // stopped while starting
		}
		return err
	}
	// work outlives ctx by at most the shutdown timeout so that in-flight requests can finish;
	// it ends as soon as the consumer has drained.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	// work ends when the consumer has drained, when the shutdown timeout cuts it off, or when
	// a part of the agent failed (the consumer then returns at once).
	context.AfterFunc(work, stopHTTP)
	stopWork := context.AfterFunc(ctx, func() {
		a.stopping.Store(true)
		t := time.AfterFunc(a.cfg.ShutdownTimeout, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopWork()

	// The views run on the work context: requests that are finishing during a shutdown still
	// read and write Connect's topics and see the result and intent topics. They stop once the
	// consumer has drained (or the shutdown timeout cut it off).
	g.Go(func() error { return a.store.Run(work) })
	g.Go(func() error { return a.results.log.Run(work) })
	g.Go(func() error { return a.intents.log.Run(work) })
	g.Go(func() error {
		defer cancelWork()
		if err := a.store.WaitReady(gctx); err != nil {
			return nil
		}
		if err := a.results.log.WaitReady(gctx); err != nil {
			return nil
		}
		if err := a.intents.log.WaitReady(gctx); err != nil {
			return nil
		}
		a.log.Info("views loaded", "config_topic", a.cfg.ConfigTopic, "offsets_topic", a.cfg.OffsetsTopic)
		err := a.consume(gctx, work)
		// The intent removals queued by the last requests land before the views stop.
		a.intents.wait()
		return err
	})
	g.Go(func() error { a.lagLoop(gctx); return nil })
	err = g.Wait()
	cancelWork()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// startupRetryFor bounds how long start-up waits out brokers that are slow or not there yet.
const startupRetryFor = 2 * time.Minute

// prepareTopicsRetrying is prepareTopics, tried again for up to startupRetryFor after an error
// that only means the brokers are slow or busy: a timeout (kafka-go hands a timed-out first
// metadata refresh to every request until a later one succeeds), a refused connection, or a
// retriable Kafka error. Anything else ends the start-up at once, as do dropped connections,
// which are how brokers answer wrong SASL credentials or an untrusted certificate.
func (a *Agent) prepareTopicsRetrying(ctx context.Context) error {
	deadline := time.Now().Add(startupRetryFor)
	b := kafkaio.Backoff{Base: 200 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 1; ; attempt++ {
		err := a.prepareTopics(ctx)
		if _, refused := kafkaio.AuthorizationCode(err); refused {
			// A Create refused for a topic that looked missing may be refused for a topic that
			// exists and that the principal may not Describe: name what it lacks on its topics.
			if denied, _ := a.checkPermissions(ctx); len(denied) > 0 {
				return fmt.Errorf("%w (%w)", denied, err)
			}
		}
		if err == nil || !startupTransient(err) || time.Now().After(deadline) {
			return err
		}
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			// A topic the principal may not Describe looks missing: say so rather than
			// wait for it.
			if denied, _ := a.checkPermissions(ctx); len(denied) > 0 {
				return fmt.Errorf("%w (%w)", denied, err)
			}
			// A Connect topic that brokers which answer do not have is a wrong name (or
			// workers that never ran), not slow brokers: say which at once.
			if missing := a.missingConnectTopics(ctx); missing != nil {
				return missing
			}
		}
		d := b.Delay(attempt)
		a.log.Warn("brokers not ready; start-up tries again", "err", err, "attempt", attempt, "retry_in", d)
		if !kafkaio.Sleep(ctx, d) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// missingConnectTopics returns an error naming each of Connect's topics that the brokers,
// asked afresh, answer is not there, or nil when both are (or the brokers did not answer, or
// the agent creates them: OFFSETAGENT_CREATE_CONNECT_TOPICS). A client of its own asks: the
// agent's answers from a metadata cache up to a second old.
func (a *Agent) missingConnectTopics(ctx context.Context) error {
	if a.cfg.CreateConnectTopics {
		return nil
	}
	tr := a.conns.Separate()
	defer tr.CloseIdleConnections()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: a.cfg.Brokers, Transport: tr, Principal: a.principal})
	cl.Timeout = 10 * time.Second
	var errs []error
	for _, t := range []struct{ variable, what, property, topic string }{
		{"OFFSETAGENT_CONFIG_TOPIC", "config", "config.storage.topic", a.cfg.ConfigTopic},
		{"OFFSETAGENT_OFFSETS_TOPIC", "offsets", "offset.storage.topic", a.cfg.OffsetsTopic},
	} {
		if _, err := kafkaio.PartitionCount(ctx, cl, t.topic); errors.Is(err, kafka.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("%s: Connect's %s topic %q does not exist on the brokers: set it to the workers' %s, or set OFFSETAGENT_CREATE_CONNECT_TOPICS=true to have it created",
				t.variable, t.what, t.topic, t.property))
		}
	}
	return errors.Join(errs...)
}

// startupTransient reports whether a start-up error is worth another try (see
// prepareTopicsRetrying).
func startupTransient(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	switch reason, transient := kafkaio.Classify(err); reason {
	case kafkaio.ReasonNetwork, kafkaio.ReasonCanceled:
		return false
	default:
		return transient
	}
}

// prepareTopics checks Connect's topics (creating them only when configured to) and creates
// the agent's own request and result topics when they are missing.
func (a *Agent) prepareTopics(ctx context.Context) error {
	if err := offsetstore.CheckConnectTopics(ctx, a.client, a.cfg.ConfigTopic, a.cfg.OffsetsTopic, a.cfg.CreateConnectTopics); err != nil {
		// Brokers that reject SASL credentials often just close the connection: say what
		// was being attempted instead of a bare EOF.
		if s := a.cfg.Security; s.SASLMechanism != "" {
			if reason, _ := kafkaio.Classify(err); reason == kafkaio.ReasonNetwork {
				return fmt.Errorf("authenticate to brokers with SASL %s as %q (wrong credentials?): %w", s.SASLMechanism, s.SASLUsername, err)
			}
		}
		return fmt.Errorf("check Connect topics: %w", err)
	}
	// Requests may be as large as MaxRequestBytes: the broker's 1 MiB default would refuse them.
	reqConfigs := map[string]string{"max.message.bytes": fmt.Sprint(a.cfg.MaxRequestBytes + 1<<20)}
	if err := kafkaio.EnsureTopic(ctx, a.client, a.cfg.RequestTopic, a.cfg.RequestTopicPartitions, reqConfigs); err != nil {
		return fmt.Errorf("ensure request topic: %w", err)
	}
	if err := kafkaio.EnsureTopic(ctx, a.client, a.cfg.ResultTopic, a.cfg.RequestTopicPartitions, nil); err != nil {
		return fmt.Errorf("ensure result topic: %w", err)
	}
	a.readResultMaxBytes(ctx)
	md, err := a.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return fmt.Errorf("read the Kafka cluster's id: %w", err)
	}
	a.clusterID = md.ClusterID
	if err := kafkaio.EnsureTopic(ctx, a.client, a.cfg.IntentTopic, a.cfg.RequestTopicPartitions, map[string]string{
		"cleanup.policy": "compact", "max.message.bytes": fmt.Sprint(intentMaxBytes),
	}); err != nil {
		return fmt.Errorf("ensure intent topic: %w", err)
	}
	return nil
}

// SetPprof switches /debug/pprof on the HTTP port on or off while the agent runs
// (OFFSETAGENT_PPROF sets it at start). cmd/offsetagent calls it on SIGUSR1 and SIGUSR2.
func (a *Agent) SetPprof(on bool) {
	if a.pprof.Swap(on) != on {
		a.log.Info("pprof switched", "on", on)
	}
}

// httpServer serves metrics and probes.
func (a *Agent) httpServer() (*server, error) {
	return newServer(a.cfg.HTTPAddr, a.opts.Listener, a.opts.Gatherer, a.pprof.Load, a.readiness, a.log)
}
