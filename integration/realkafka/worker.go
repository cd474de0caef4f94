package realkafka

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// WorkerConfig says how to start a Kafka Connect distributed worker.
type WorkerConfig struct {
	// Lib is the jar folder from Jars; its FileStream, MirrorMaker 2 and test connectors are on
	// the worker's classpath.
	Lib string
	// Dir holds the worker's config and log; it must exist.
	Dir string
	// Brokers are the bootstrap servers.
	Brokers []string
	// GroupID, ConfigTopic, OffsetsTopic and StatusTopic name the Connect cluster; empty means
	// Connect's example names connect-cluster, connect-configs, connect-offsets, connect-status.
	GroupID, ConfigTopic, OffsetsTopic, StatusTopic string
	// PluginPath is the worker's plugin.path (connectors installed in isolation, such as
	// Debezium's, see PluginPath); empty means none.
	PluginPath string
	// Extra worker properties, added last.
	Extra map[string]string
	// StartTimeout bounds start-up; zero means 3 minutes.
	StartTimeout time.Duration
	// JVMProperties are system properties (-Dkey=value) for the worker's JVM, such as
	// java.security.auth.login.config for the basic auth REST extension.
	JVMProperties map[string]string
	// REST, when set, serves the REST API over HTTPS with basic auth (see RESTSecurity).
	REST *RESTSecurity
}

// RESTSecurity says how the worker serves REST over HTTPS and how the fixture calls it. The
// worker's key material and the basic auth extension go in WorkerConfig.Extra
// (listeners.https.ssl.*, rest.extension.classes) and JVMProperties.
type RESTSecurity struct {
	// TLS is the fixture's client side: the CA it trusts, the server name it checks.
	TLS *tls.Config
	// User and Password are sent as basic auth on every call.
	User, Password string
}

// Worker is a running Connect distributed worker.
type Worker struct {
	// URL is the REST base URL, http://127.0.0.1:port (https:// when WorkerConfig.REST is set).
	URL  string
	proc *jvm
	http *http.Client
	rest *RESTSecurity
}

// StartWorker starts org.apache.kafka.connect.cli.ConnectDistributed with JSON converters without
// schemas and the internal topics as a deployment sets them (config: 1 partition, offsets: 25,
// status: 5, all compacted, replication factor 1), and returns once GET /health is healthy.
// A worker whose REST port another process took between its pick and the JVM's bind starts
// again on another port, up to three times.
func StartWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		w, err := startWorker(ctx, cfg)
		if err == nil || attempt == 3 || !portTaken(filepath.Join(cfg.Dir, "worker.log")) {
			return w, err
		}
	}
}

func startWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if cfg.REST != nil {
		scheme = "https"
	}
	props := map[string]string{
		"bootstrap.servers":                 strings.Join(cfg.Brokers, ","),
		"group.id":                          or(cfg.GroupID, "connect-cluster"),
		"key.converter":                     "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                   "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":      "false",
		"value.converter.schemas.enable":    "false",
		"config.storage.topic":              or(cfg.ConfigTopic, "connect-configs"),
		"config.storage.replication.factor": "1",
		"offset.storage.topic":              or(cfg.OffsetsTopic, "connect-offsets"),
		"offset.storage.replication.factor": "1",
		"offset.storage.partitions":         "25",
		"status.storage.topic":              or(cfg.StatusTopic, "connect-status"),
		"status.storage.replication.factor": "1",
		"status.storage.partitions":         "5",
		"offset.flush.interval.ms":          "1000",
		"listeners":                         fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0]),
		"rest.advertised.listener":          scheme,
		"rest.advertised.host.name":         "127.0.0.1",
		"rest.advertised.port":              fmt.Sprint(ports[0]),
		"plugin.discovery":                  "service_load",
		"scheduled.rebalance.max.delay.ms":  "0",
	}
	if cfg.PluginPath != "" {
		props["plugin.path"] = cfg.PluginPath
	}
	for k, v := range cfg.Extra {
		props[k] = v
	}
	var b strings.Builder
	for _, k := range sortedKeys(props) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	propsPath := filepath.Join(cfg.Dir, "worker.properties")
	if err := os.WriteFile(propsPath, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("write the worker config: %w", err)
	}
	var opts []string
	if len(cfg.JVMProperties) > 0 {
		opts = append([]string{}, jvmOptions...)
		for _, k := range sortedKeys(cfg.JVMProperties) {
			opts = append(opts, "-D"+k+"="+cfg.JVMProperties[k])
		}
	}
	p, err := startJVM(cfg.Dir, cfg.Lib, "worker", opts, "org.apache.kafka.connect.cli.ConnectDistributed", propsPath)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 100 * time.Second}
	if cfg.REST != nil {
		client.Transport = &http.Transport{TLSClientConfig: cfg.REST.TLS}
	}
	w := &Worker{URL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0]), proc: p, http: client, rest: cfg.REST}
	err = p.waitFor(ctx, "the Connect worker", func(ctx context.Context) error {
		status, body, err := w.call(ctx, http.MethodGet, "/health", nil)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("GET /health: %d %s", status, body)
		}
		return nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return w, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Stop stops the worker (SIGTERM, then SIGKILL after 20 s). It is idempotent.
func (w *Worker) Stop() { w.proc.stop() }

// Kill kills the worker with SIGKILL: its tasks neither stop nor commit their offsets. Stop
// afterwards does nothing.
func (w *Worker) Kill() { w.proc.kill() }

// Log is the path of the worker's log file.
func (w *Worker) Log() string { return w.proc.log }

// Do calls the worker's REST API with body (marshalled to JSON unless nil, a string or []byte)
// and returns the status and the response body. Answers that say "try again" are retried for up
// to 60 s, as an operator would: a 409 other than "already exists" (a rebalance or a config change
// in progress: "Cannot complete request momentarily..."), and the 500 of a worker that has just
// read a config change and is about to rebalance ("Request cannot be completed because a
// rebalance is expected") or whose request to the herder timed out.
func (w *Worker) Do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, resp, err := w.call(ctx, method, path, body)
		if err != nil || !tryAgain(status, resp) || time.Now().After(deadline) {
			return status, resp, err
		}
		select {
		case <-ctx.Done():
			return status, resp, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tryAgain reports whether Connect's answer says the request may succeed if repeated.
func tryAgain(status int, body []byte) bool {
	switch status {
	case http.StatusConflict:
		return !bytes.Contains(body, []byte("already exists"))
	case http.StatusInternalServerError:
		return bytes.Contains(body, []byte("Request cannot be completed because a rebalance is expected")) ||
			bytes.Contains(body, []byte("Request timed out"))
	}
	return false
}

func (w *Worker) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, fmt.Errorf("encode the %s %s body: %w", method, path, err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if w.rest != nil {
		req.SetBasicAuth(w.rest.User, w.rest.Password)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
