package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const composeDir = "compose"

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string            `yaml:"context"`
		Dockerfile string            `yaml:"dockerfile"`
		Args       map[string]string `yaml:"args"`
	} `yaml:"build"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	ReadOnly bool `yaml:"read_only"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

// containerPorts returns the container side of a service's "host:container" port mappings.
func (s composeService) containerPorts() []string {
	var ports []string
	for _, p := range s.Ports {
		ports = append(ports, p[strings.LastIndex(p, ":")+1:])
	}
	return ports
}

// mounts maps a service's bind mount targets to their sources, relative to deploy/.
func (s composeService) mounts() map[string]string {
	m := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		m[parts[1]] = path.Join(composeDir, parts[0])
	}
	return m
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	decodeYAML(t, composePath, &c, false)
	return c
}

// loadProperties reads a Java properties file of plain key=value lines.
func loadProperties(t *testing.T, path string) map[string]string {
	t.Helper()
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: %q is not key=value", path, line)
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props
}

type topicSpec struct {
	partitions int
	policy     string
	configs    string // further topic configs, space-separated key=value
}

// createTopicLine is a call of the create function of compose/kafka/create-topics.sh.
var createTopicLine = regexp.MustCompile(`^create (\S+) (\d+) (compact|delete)((?: \S+=\S+)*)$`)

// composeTopics returns the topics kafka-init creates.
func composeTopics(t *testing.T) map[string]topicSpec {
	t.Helper()
	topics := map[string]topicSpec{}
	for _, line := range strings.Split(string(readFile(t, composeDir+"/kafka/create-topics.sh")), "\n") {
		m := createTopicLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		topics[m[1]] = topicSpec{partitions: n, policy: m[3], configs: strings.TrimSpace(m[4])}
	}
	require.NotEmpty(t, topics)
	return topics
}

func TestComposeWiring(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"kafka", "kafka-init", "connect", "offsetagent", "prometheus", "grafana"} {
		require.Contains(t, c.Services, name)
	}
	kafka, connect, agent := c.Services["kafka"], c.Services["connect"], c.Services["offsetagent"]
	env := agent.Environment
	props := loadProperties(t, composeDir+"/connect/connect-distributed.properties")
	topics := composeTopics(t)

	t.Run("services", func(t *testing.T) {
		hostPorts := map[string]string{}
		for name, s := range c.Services {
			for dep := range s.DependsOn {
				require.Contains(t, c.Services, dep, "%s depends on an unknown service", name)
			}
			for target, src := range s.mounts() {
				_, err := os.Stat(filepath.FromSlash(src))
				require.NoError(t, err, "%s mounts %s at %s", name, src, target)
			}
			for _, p := range s.Ports {
				host := p[:strings.LastIndex(p, ":")]
				require.NotContains(t, hostPorts, host, "host port %s used by %s and %s", host, name, hostPorts[host])
				hostPorts[host] = name
			}
		}
	})

	t.Run("offsetagent built from the Dockerfile", func(t *testing.T) {
		require.NotNil(t, agent.Build)
		_, err := os.Stat(filepath.Join(composeDir, filepath.FromSlash(agent.Build.Context), "go.mod"))
		require.NoError(t, err, "build context must be the repository root")
		require.Equal(t, "Dockerfile", agent.Build.Dockerfile)
		require.Equal(t, map[string]string{"VERSION": "${VERSION:-dev}", "COMMIT": "${COMMIT:-unknown}"}, agent.Build.Args,
			"the version and commit reach the image")
		require.Equal(t, []string{"run"}, agent.Command)
		require.True(t, agent.ReadOnly)
		require.Contains(t, agent.containerPorts(), portOf(t, env[httpAddrEnvName]))
	})

	t.Run("brokers", func(t *testing.T) {
		// The listener that containers use is the one advertised under the broker's service name.
		var internal string
		for _, l := range strings.Split(kafka.Environment["KAFKA_ADVERTISED_LISTENERS"], ",") {
			u, err := url.Parse(l)
			require.NoError(t, err)
			if u.Hostname() == "kafka" {
				internal = u.Host
			}
		}
		require.NotEmpty(t, internal, "kafka advertises no listener under its service name")
		require.Equal(t, internal, env[envPrefix+"BROKERS"])
		require.Equal(t, internal, props["bootstrap.servers"])
		require.Equal(t, internal, c.Services["kafka-init"].Environment["BOOTSTRAP_SERVERS"])
	})

	t.Run("connect worker", func(t *testing.T) {
		require.Equal(t, "/opt/kafka/bin/connect-distributed.sh", connect.Command[0])
		require.Equal(t, connect.mounts()[connect.Command[1]], composeDir+"/connect/connect-distributed.properties")
		require.NotEmpty(t, props["group.id"])
		require.NotEqual(t, env[envPrefix+"GROUP_ID"], props["group.id"], "the agent and the workers need separate groups")
		require.Equal(t, props["config.storage.topic"], env[envPrefix+"CONFIG_TOPIC"])
		require.Equal(t, props["offset.storage.topic"], env[envPrefix+"OFFSETS_TOPIC"])

		// Connect refuses internal topics that are not compacted, and a config topic with more
		// than one partition.
		cfg := topics[props["config.storage.topic"]]
		require.Equal(t, topicSpec{partitions: 1, policy: "compact"}, cfg)
		for _, key := range []string{"offset", "status"} {
			n, err := strconv.Atoi(props[key+".storage.partitions"])
			require.NoError(t, err)
			require.Equal(t, topicSpec{partitions: n, policy: "compact"}, topics[props[key+".storage.topic"]], key)
		}

		u, err := url.Parse(env[envPrefix+"CONNECT_URL"])
		require.NoError(t, err)
		require.Contains(t, c.Services, u.Hostname())
		listener, err := url.Parse(props["listeners"])
		require.NoError(t, err)
		require.Equal(t, listener.Port(), u.Port())
		require.Contains(t, connect.containerPorts(), u.Port())

		// plugin.path names the FileStream jar of the image's Kafka version.
		tag := connect.Image[strings.LastIndex(connect.Image, ":")+1:]
		require.Equal(t, "/opt/kafka/libs/connect-file-"+tag+".jar", props["plugin.path"])
		require.Equal(t, kafka.Image, connect.Image)
	})

	t.Run("agent topics", func(t *testing.T) {
		for _, name := range []string{"REQUEST_TOPIC", "RESULT_TOPIC"} {
			topic := env[envPrefix+name]
			require.Contains(t, topics, topic, "kafka-init does not create %s", topic)
			require.Equal(t, "delete", topics[topic].policy)
		}
		// As the agent creates its request topic: room for the largest request plus 1 MiB.
		maxRequest, err := strconv.Atoi(env[envPrefix+"MAX_REQUEST_BYTES"])
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("max.message.bytes=%d", maxRequest+1<<20), topics[env[envPrefix+"REQUEST_TOPIC"]].configs)
	})

	t.Run("healthchecks and start order", func(t *testing.T) {
		for name, s := range c.Services {
			if name == "kafka-init" { // one-shot: the others wait for it to complete
				require.Nil(t, s.Healthcheck)
			} else {
				require.NotNil(t, s.Healthcheck, "%s has no healthcheck", name)
				require.NotEmpty(t, s.Healthcheck.Test, name)
			}
			for dep, cond := range s.DependsOn {
				want := "service_healthy"
				if dep == "kafka-init" {
					want = "service_completed_successfully"
				}
				require.Equal(t, want, cond.Condition, "%s waits for %s", name, dep)
			}
		}
		require.Equal(t, []string{"CMD", "/offsetagent", "healthcheck"}, agent.Healthcheck.Test, "the image has no shell")
	})

	t.Run("ports only on the loopback interface", func(t *testing.T) {
		for name, s := range c.Services {
			for _, p := range s.Ports {
				require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s beyond this machine", name, p)
			}
		}
	})
}

type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func TestComposeMonitoring(t *testing.T) {
	c := loadCompose(t)
	prom, grafana, agent := c.Services["prometheus"], c.Services["grafana"], c.Services["offsetagent"]
	var cfg promConfig
	decodeYAML(t, promConfigPath, &cfg, false)

	t.Run("prometheus scrapes the agent", func(t *testing.T) {
		require.Equal(t, promConfigPath, prom.mounts()[strings.TrimPrefix(prom.Command[0], "--config.file=")])
		require.Len(t, cfg.ScrapeConfigs, 1)
		sc := cfg.ScrapeConfigs[0]
		require.Equal(t, scrapeJob, sc.JobName)
		require.Equal(t, metricsPath, sc.MetricsPath)
		require.Len(t, sc.StaticConfigs, 1)
		want := net.JoinHostPort("offsetagent", portOf(t, agent.Environment[httpAddrEnvName]))
		require.Equal(t, []string{want}, sc.StaticConfigs[0].Targets)
		require.Equal(t, []string{"/etc/prometheus/alerts.yaml"}, cfg.RuleFiles)
		require.Equal(t, alertsPath, prom.mounts()[cfg.RuleFiles[0]])
	})

	t.Run("grafana provisioned", func(t *testing.T) {
		provisioning := grafana.mounts()["/etc/grafana/provisioning"]
		require.Equal(t, composeDir+"/grafana/provisioning", provisioning)

		var ds struct {
			Datasources []struct {
				Type      string `yaml:"type"`
				URL       string `yaml:"url"`
				IsDefault bool   `yaml:"isDefault"`
			} `yaml:"datasources"`
		}
		decodeYAML(t, provisioning+"/datasources/prometheus.yml", &ds, false)
		require.Len(t, ds.Datasources, 1)
		require.Equal(t, "prometheus", ds.Datasources[0].Type)
		require.True(t, ds.Datasources[0].IsDefault, "the dashboard's datasource variable picks the default")
		u, err := url.Parse(ds.Datasources[0].URL)
		require.NoError(t, err)
		require.Equal(t, "prometheus", u.Hostname())
		require.Contains(t, prom.containerPorts(), u.Port())

		var providers struct {
			Providers []struct {
				Type    string `yaml:"type"`
				Options struct {
					Path string `yaml:"path"`
				} `yaml:"options"`
			} `yaml:"providers"`
		}
		decodeYAML(t, provisioning+"/dashboards/offsetagent.yml", &providers, false)
		require.Len(t, providers.Providers, 1)
		var dashboardTarget string
		for target, src := range grafana.mounts() {
			if src == path.Join(composeDir, "..", dashboardPath) {
				dashboardTarget = target
			}
		}
		require.NotEmpty(t, dashboardTarget, "grafana does not mount %s", dashboardPath)
		require.Equal(t, providers.Providers[0].Options.Path, path.Dir(dashboardTarget))
		require.Equal(t, dashboardTarget, grafana.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
	})

	t.Run("grafana has no anonymous admin", func(t *testing.T) {
		if grafana.Environment["GF_AUTH_ANONYMOUS_ENABLED"] == "true" {
			require.Equal(t, "Viewer", grafana.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"])
		}
		require.NotEqual(t, "true", grafana.Environment["GF_AUTH_DISABLE_LOGIN_FORM"], "the admin must be able to log in")
		require.NotEmpty(t, grafana.Environment["GF_SECURITY_ADMIN_PASSWORD"])
	})
}

// composeEnvNames returns the agent variables the compose file sets.
func composeEnvNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for name := range loadCompose(t).Services["offsetagent"].Environment {
		require.True(t, strings.HasPrefix(name, envPrefix), "%s lacks the %s prefix", name, envPrefix)
		names = append(names, name)
	}
	return names
}

// TestDockerImage checks the Dockerfile against the binary and the build context: the
// version and commit reach both `offsetagent version` (cmd/offsetagent's main.version and
// main.commit) and the OCI labels, and .dockerignore keeps the repository's history, build
// outputs and credentials out of the context.
func TestDockerImage(t *testing.T) {
	dockerfile := string(readFile(t, "../Dockerfile"))
	stages := strings.Split(dockerfile, "\nFROM ")
	require.Len(t, stages, 3, "comments, a build stage and a runtime stage")
	build, runtime := stages[1], stages[2]
	require.Contains(t, build, "ARG VERSION")
	require.Contains(t, build, "ARG COMMIT")
	require.Contains(t, build, "-X main.version=${VERSION} -X main.commit=${COMMIT}")
	require.Contains(t, string(readFile(t, "../Makefile")), "-X main.version=$(VERSION) -X main.commit=$(COMMIT)")
	for _, label := range []string{
		`org.opencontainers.image.source="https://github.com/offsetagent/offsetagent"`,
		`org.opencontainers.image.version="${VERSION}"`,
		`org.opencontainers.image.revision="${COMMIT}"`,
	} {
		require.Contains(t, runtime, label)
	}
	// An ARG is scoped to its stage: the runtime stage must declare its own for the labels.
	require.Contains(t, runtime, "ARG VERSION")
	require.Contains(t, runtime, "ARG COMMIT")
	require.Contains(t, runtime, "USER 65532:65532")

	ignored := strings.Split(string(readFile(t, "../.dockerignore")), "\n")
	for _, want := range []string{".git", "bin/", "deploy/kubernetes/secret.env"} {
		require.Contains(t, ignored, want)
	}
}
