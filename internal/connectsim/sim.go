package connectsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// DefaultVersion is the Apache Kafka version a Sim reports (GET /, the plugins' versions)
// when Config names none: the newest the real tier proves (docs/connect-internals.md,
// "Versions proven against real workers").
const DefaultVersion = "4.3.1"

// Plugin is a connector plugin the simulated worker has installed, as GET
// /connector-plugins lists it.
type Plugin struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

// Config configures a Sim.
type Config struct {
	// Topics is the Connect cluster's Kafka cluster and its config and offsets topics
	// (config.storage.topic, offset.storage.topic), with the client's security.
	Topics offsetstore.Options
	// StatusTopic is status.storage.topic; when set, its topic records give each connector's
	// active topics (GET /connectors/{name}/topics). Empty: every connector has none.
	StatusTopic string
	// TopicTrackingDisabled answers GET /connectors/{name}/topics as a worker with
	// topic.tracking.enable=false does.
	TopicTrackingDisabled bool
	// Plugins are the connector plugins installed; nil means every class of Registry, with
	// Version. A connector whose class is none of them has type "unknown".
	Plugins []Plugin
	// Registry types the classes and holds their alterOffsets twins; nil means
	// connectors.Builtin().
	Registry *connectors.Registry
	// Version and Commit are what GET / reports; "" means DefaultVersion and "connectsim".
	Version, Commit string
	// KafkaClusterID is what GET / reports; "" means the id the cluster's brokers answer
	// (asked by WaitReady).
	KafkaClusterID string
	// WorkerID is the worker_id of every status; "" means "connectsim".
	WorkerID string
	// Logger receives the sim's logs; nil discards them.
	Logger *slog.Logger
}

// Sim is a Connect worker's REST API over a Connect cluster's topics (see the package
// comment). It is an http.Handler, safe for concurrent use once Run runs.
type Sim struct {
	cfg     Config
	logger  *slog.Logger
	store   *offsetstore.Store
	reg     *connectors.Registry
	plugins []Plugin
	// byName finds a plugin by class, simple name or simple name without "Connector" (an
	// alias two plugins share finds neither, as in Connect).
	byName map[string]*Plugin

	// status tails StatusTopic; topics holds its topic records, by connector then topic.
	status   *kafkaio.Log
	topicsMu sync.RWMutex
	topics   map[string]map[string]bool

	// locks serialise the writes for one connector (a worker's herder runs one request at a
	// time; distinct connectors here go in parallel).
	seed  maphash.Seed
	locks [64]sync.Mutex

	clusterMu sync.Mutex
	clusterID string

	// pluginVersions: statuses name the plugin's version (Kafka 4.1 and later, KIP-891).
	pluginVersions bool
}

// New checks cfg and returns a Sim. It never dials; Run reads the topics.
func New(cfg Config) (*Sim, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Topics.Logger == nil {
		cfg.Topics.Logger = cfg.Logger
	}
	if cfg.Registry == nil {
		cfg.Registry = connectors.Builtin()
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.Commit == "" {
		cfg.Commit = "connectsim"
	}
	if cfg.WorkerID == "" {
		cfg.WorkerID = "connectsim"
	}
	store, err := offsetstore.New(cfg.Topics)
	if err != nil {
		return nil, fmt.Errorf("new connect sim: %w", err)
	}
	s := &Sim{cfg: cfg, logger: cfg.Logger, store: store, reg: cfg.Registry, topics: map[string]map[string]bool{},
		seed: maphash.MakeSeed(), clusterID: cfg.KafkaClusterID}
	s.plugins = cfg.Plugins
	if s.plugins == nil {
		for _, c := range cfg.Registry.Classes() {
			s.plugins = append(s.plugins, Plugin{Class: c.Name, Type: string(c.Type), Version: cfg.Version})
		}
	}
	s.plugins = slices.Clone(s.plugins)
	slices.SortFunc(s.plugins, func(a, b Plugin) int { return strings.Compare(a.Class, b.Class) })
	s.byName = pluginIndex(s.plugins)
	s.pluginVersions = atLeast(cfg.Version, 4, 1)
	if cfg.StatusTopic != "" {
		if s.status, err = kafkaio.NewLog(cfg.Topics.Cluster(), cfg.StatusTopic, s.applyStatus); err != nil {
			return nil, fmt.Errorf("new connect sim: %w", err)
		}
	}
	return s, nil
}

// pluginIndex indexes plugins by class name and Connect's aliases (PluginUtils: the simple
// name, and the simple name without "Connector"); an alias two plugins claim, or that names
// another class, finds neither, as in Connect.
func pluginIndex(plugins []Plugin) map[string]*Plugin {
	out := map[string]*Plugin{}
	aliases := map[string][]*Plugin{}
	for i := range plugins {
		p := &plugins[i]
		out[p.Class] = p
		simple := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		aliases[simple] = append(aliases[simple], p)
		if pruned, ok := strings.CutSuffix(simple, "Connector"); ok && pruned != "" {
			aliases[pruned] = append(aliases[pruned], p)
		}
	}
	for a, ps := range aliases {
		if _, isClass := out[a]; !isClass && len(ps) == 1 {
			out[a] = ps[0]
		}
	}
	return out
}

// atLeast reports whether version (major.minor[.patch...]) is major.minor or later; a version
// that does not read so is taken as the newest.
func atLeast(version string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(version, "%d.%d", &ma, &mi); err != nil {
		return true
	}
	return ma > major || (ma == major && mi >= minor)
}

// Run reads the topics until ctx is done; it returns nil when ctx ends it.
func (s *Sim) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.store.Run(gctx) })
	if s.status != nil {
		g.Go(func() error { return s.status.Run(gctx) })
	}
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("run connect sim: %w", err)
	}
	return nil
}

// WaitReady waits until the topics are loaded and the Kafka cluster id is known.
func (s *Sim) WaitReady(ctx context.Context) error {
	if err := s.store.WaitReady(ctx); err != nil {
		return fmt.Errorf("connect sim: load the config and offsets topics: %w", err)
	}
	if s.status != nil {
		if err := s.status.WaitReady(ctx); err != nil {
			return fmt.Errorf("connect sim: load status topic %q: %w", s.cfg.StatusTopic, err)
		}
	}
	_, err := s.kafkaClusterID(ctx)
	return err
}

// kafkaClusterID is the Kafka cluster's id, asked of its first broker once.
func (s *Sim) kafkaClusterID(ctx context.Context) (string, error) {
	s.clusterMu.Lock()
	defer s.clusterMu.Unlock()
	if s.clusterID != "" {
		return s.clusterID, nil
	}
	id, err := kafkaio.NewClusterIDs(10*time.Second, 1).Lookup(ctx, s.cfg.Topics.Brokers[0], s.cfg.Topics.Transport)
	if err != nil {
		return "", fmt.Errorf("connect sim: the Kafka cluster id of %s: %w", s.cfg.Topics.Brokers[0], err)
	}
	s.clusterID = id
	return id, nil
}

// lock takes the write lock of connector name; the returned func releases it.
func (s *Sim) lock(name string) func() {
	m := &s.locks[maphash.String(s.seed, name)%uint64(len(s.locks))]
	m.Lock()
	return m.Unlock
}

// apiError is an answer in Connect's error shape.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.code, e.msg) }

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// Connect's texts of answers the sim gives (docs/connect-internals.md, "The REST API's answers").
func notFound(name string) *apiError {
	return errorf(http.StatusNotFound, "Connector %s not found", name)
}
func unknownConnector(name string) *apiError {
	return errorf(http.StatusNotFound, "Unknown connector %s", name)
}

// answer is what a call answers: a status and a body (nil for none), or an error.
type answer struct {
	code int
	body any
}

// ServeHTTP routes a request to its call, as Connect's resources do.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, err := s.route(r)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{code: http.StatusInternalServerError, msg: err.Error()}
			s.logger.Error("connect sim call failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		a = answer{code: ae.code, body: map[string]any{"error_code": ae.code, "message": ae.msg}}
	}
	if a.body == nil {
		w.WriteHeader(a.code)
		return
	}
	b, err := json.Marshal(a.body)
	if err != nil {
		b, a.code = []byte(`{"error_code":500,"message":"encode the answer"}`), http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = w.Write(b)
}

// segments is the request's path split at '/', each part unescaped ("a%2Fb" is one part).
func segments(u *url.URL) ([]string, error) {
	raw := strings.Trim(u.EscapedPath(), "/")
	if raw == "" {
		return nil, nil
	}
	parts := strings.Split(raw, "/")
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil {
			return nil, err
		}
		parts[i] = v
	}
	return parts, nil
}

// route answers r. A path Connect does not serve is a 404, a method it does not take on a
// path it serves a 405, both as Jersey words them.
func (s *Sim) route(r *http.Request) (answer, error) {
	ctx := r.Context()
	seg, err := segments(r.URL)
	if err != nil {
		return answer{}, errorf(http.StatusNotFound, "HTTP 404 Not Found")
	}
	method := r.Method
	type call func() (answer, error)
	var calls map[string]call
	switch {
	case len(seg) == 0:
		calls = map[string]call{http.MethodGet: func() (answer, error) { return s.root(ctx) }}
	case seg[0] == "connectors" && len(seg) == 1:
		calls = map[string]call{
			http.MethodGet:  func() (answer, error) { return s.list(r.URL.Query()) },
			http.MethodPost: func() (answer, error) { return s.create(ctx, r) },
		}
	case seg[0] == "connectors" && len(seg) == 2:
		name := seg[1]
		calls = map[string]call{
			http.MethodGet:    func() (answer, error) { return s.info(ctx, name) },
			http.MethodDelete: func() (answer, error) { return s.delete(ctx, name) },
		}
	case seg[0] == "connectors" && len(seg) == 3:
		name := seg[1]
		switch seg[2] {
		case "config":
			calls = map[string]call{
				http.MethodGet: func() (answer, error) { return s.config(ctx, name) },
				http.MethodPut: func() (answer, error) { return s.putConfig(ctx, name, r) },
			}
		case "status":
			calls = map[string]call{http.MethodGet: func() (answer, error) { return s.statusOf(ctx, name) }}
		case "tasks":
			calls = map[string]call{http.MethodGet: func() (answer, error) { return s.tasks(ctx, name) }}
		case "topics":
			calls = map[string]call{http.MethodGet: func() (answer, error) { return s.activeTopics(ctx, name) }}
		case "offsets":
			calls = map[string]call{
				http.MethodGet:    func() (answer, error) { return s.offsets(ctx, name) },
				http.MethodPatch:  func() (answer, error) { return s.alterOffsets(ctx, name, r) },
				http.MethodDelete: func() (answer, error) { return s.resetOffsets(ctx, name) },
			}
		case "stop":
			calls = map[string]call{http.MethodPut: func() (answer, error) { return s.stop(ctx, name) }}
		case "pause":
			calls = map[string]call{http.MethodPut: func() (answer, error) { return s.setState(ctx, name, offsetstore.TargetPaused) }}
		case "resume":
			calls = map[string]call{http.MethodPut: func() (answer, error) { return s.setState(ctx, name, offsetstore.TargetStarted) }}
		case "restart":
			calls = map[string]call{http.MethodPost: func() (answer, error) { return s.restart(ctx, name, r.URL.Query()) }}
		}
	case seg[0] == "connector-plugins" && len(seg) == 1:
		calls = map[string]call{http.MethodGet: func() (answer, error) { return answer{code: http.StatusOK, body: s.plugins}, nil }}
	case seg[0] == "connector-plugins" && len(seg) == 4 && seg[2] == "config" && seg[3] == "validate":
		class := seg[1]
		calls = map[string]call{http.MethodPut: func() (answer, error) { return s.validate(class, r) }}
	}
	if calls == nil {
		return answer{}, errorf(http.StatusNotFound, "HTTP 404 Not Found")
	}
	c, ok := calls[method]
	if !ok {
		return answer{}, errorf(http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed")
	}
	return c()
}
