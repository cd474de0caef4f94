// Package deploy_test checks the files under deploy/ against the agent they deploy: every
// PromQL expression of the dashboard and the alerts parses and names only series the agent
// exports, the Kubernetes manifests and the compose file are wired consistently (names, ports,
// probe paths, topics) and use only environment variables the agent reads, and every alert has
// a runbook in docs/operations.md. deploy/ holds no other Go code.
package deploy_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.yaml.in/yaml/v3"

	"github.com/offsetagent/offsetagent/agent"
)

// Paths are relative to deploy/, the directory go test runs this package in.
const (
	dashboardPath   = "grafana/offsetagent.json"
	alertsPath      = "prometheus/alerts.yaml"
	promConfigPath  = "prometheus/prometheus.yml"
	kubernetesDir   = "kubernetes"
	composePath     = "compose/docker-compose.yml"
	operationsPath  = "../docs/operations.md"
	metricsDocPath  = "../docs/metrics.md"
	scrapeJob       = "offsetagent" // the job label of the agent's series in every setup
	healthzPath     = "/healthz"
	readyzPath      = "/readyz"
	metricsPath     = "/metrics"
	envPrefix       = "OFFSETAGENT_"
	httpAddrEnvName = envPrefix + "HTTP_ADDR"
)

// exported maps every series name the agent exports (histograms expanded to _bucket, _sum and
// _count) to the set of "label=value" pairs seen on its series.
type exported map[string]map[string]bool

// hasLabel reports whether any series of name carries label.
func (e exported) hasLabel(name, label string) bool {
	for pair := range e[name] {
		if strings.HasPrefix(pair, label+"=") {
			return true
		}
	}
	return false
}

// exportedMetricNames returns the series a running agent exports: it starts an in-process
// kfake broker and an agent on it, registered as cmd/offsetagent registers it (the agent's
// metrics plus the Go and process collectors), waits until the agent is ready and parses what
// its /metrics endpoint serves. Both are stopped when the test ends.
func exportedMetricNames(t *testing.T) exported {
	t.Helper()
	body := scrapeRunningAgent(t)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, "parse the agent's /metrics")

	names := exported{}
	for _, mf := range families {
		var series []string
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			series = []string{mf.GetName() + "_bucket", mf.GetName() + "_sum", mf.GetName() + "_count"}
		case dto.MetricType_SUMMARY:
			series = []string{mf.GetName(), mf.GetName() + "_sum", mf.GetName() + "_count"}
		default:
			series = []string{mf.GetName()}
		}
		for _, s := range series {
			pairs := map[string]bool{}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					pairs[lp.GetName()+"="+lp.GetValue()] = true
				}
				if strings.HasSuffix(s, "_bucket") { // the bucket bounds are the le label
					for _, b := range m.GetHistogram().GetBucket() {
						pairs["le="+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = true
					}
					pairs["le=+Inf"] = true
				}
			}
			names[s] = pairs
		}
	}
	require.NotEmpty(t, names["offsetagent_requests_total"], "agent metrics missing from the agent's /metrics")
	for _, name := range []string{"offsetagent_request_lag", "go_goroutines", "process_cpu_seconds_total"} {
		require.Contains(t, names, name, "the agent's /metrics lacks %s", name)
	}
	return names
}

// scrapeRunningAgent starts a kfake broker and an agent on it and returns the body of the
// agent's /metrics in the Prometheus text format.
func scrapeRunningAgent(t *testing.T) []byte {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)

	// Unique names, so that tests calling this in parallel never share a topic or group.
	suffix := strings.ReplaceAll(t.Name(), "/", "-") + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg := agent.Config{
		Brokers:                cluster.ListenAddrs(),
		RequestTopic:           "requests-" + suffix,
		ResultTopic:            "results-" + suffix,
		GroupID:                "offsetagent-" + suffix,
		ConfigTopic:            "connect-configs-" + suffix,
		OffsetsTopic:           "connect-offsets-" + suffix,
		IntentTopic:            "intents-" + suffix,
		CreateConnectTopics:    true,
		RequestTopicPartitions: 1,
		HTTPAddr:               "127.0.0.1:0",
		LogLevel:               "info",
		LogFormat:              "json",
		Concurrency:            1,
		MaxRequestBytes:        16 << 20,
		ShutdownTimeout:        5 * time.Second,
	}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	require.NoError(t, reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := agent.New(cfg, agent.Options{Registry: reg, Gatherer: reg, Listener: ln})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	// Registered after the broker's Close, so it runs first: the agent stops before its broker.
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "agent run")
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop within 30s")
		}
	})
	// The condition runs on another goroutine, where the test must not fail: it only reports
	// that waiting is over, and the test looks at why afterwards.
	stopped := func() (bool, error) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			return true, err
		default:
			return false, nil
		}
	}
	require.Eventually(t, func() bool {
		ok, _ := stopped()
		return ok || a.Ready()
	}, 30*time.Second, 20*time.Millisecond, "agent never became ready")
	if ok, err := stopped(); ok {
		require.Failf(t, "agent stopped before it was ready", "%v", err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+metricsPath, nil)
	require.NoError(t, err)
	// Ask for the classic text format: without it promhttp may negotiate OpenMetrics or
	// protobuf, which the text parser does not read.
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// readFile returns the contents of a file under deploy/ (or relative to it).
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	require.NoError(t, err, "read %s", path)
	return b
}

// decodeYAML decodes the single YAML document in path into v. With strict set, fields that v
// does not declare are errors, which catches misspelt keys in files whose whole schema v
// models.
func decodeYAML(t *testing.T, path string, v any, strict bool) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, path)))
	dec.KnownFields(strict)
	require.NoError(t, dec.Decode(v), "decode %s", path)
}

// portOf returns the port of a Go listen address such as ":8080" or "0.0.0.0:8080".
func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "split %q", addr)
	return port
}

// isCredential reports whether an agent variable belongs in a Secret rather than a ConfigMap.
func isCredential(name string) bool {
	return strings.HasPrefix(name, envPrefix+"SASL_") || strings.HasPrefix(name, envPrefix+"TLS_") ||
		name == envPrefix+"CONNECT_USER_INFO"
}
