// Package deploy_test checks the files under deploy/ against the agent they deploy: every
// PromQL expression of the dashboard and the alerts parses and names only series the agent
// exports, the Kubernetes manifests and the compose file are wired consistently (names, ports,
// probe paths, topics) and use only environment variables the agent reads, and every alert has
// a runbook in docs/operations.md. deploy/ holds no other Go code.
package deploy_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
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

// exportedMetricNames returns the series the agent exports. For now it gathers a fresh
// registry holding agent.NewMetrics and the Go and process collectors, which is what the
// agent's /metrics serves; it is the one place to switch to scraping a running agent.
func exportedMetricNames(t *testing.T) exported {
	t.Helper()
	reg := prometheus.NewRegistry()
	agent.NewMetrics(reg, "test")
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	require.NoError(t, reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})))
	families, err := reg.Gather()
	require.NoError(t, err)

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
			}
			names[s] = pairs
		}
	}
	require.NotEmpty(t, names["offsetagent_requests_total"], "agent metrics missing from the gathered registry")
	return names
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
	return strings.HasPrefix(name, envPrefix+"SASL_") || strings.HasPrefix(name, envPrefix+"TLS_")
}
