package deploy_test

import (
	"bufio"
	"bytes"
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
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
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
}

// createTopicLine is a call of the create function of compose/kafka/create-topics.sh.
var createTopicLine = regexp.MustCompile(`^create (\S+) (\d+) (compact|delete)$`)

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
		topics[m[1]] = topicSpec{partitions: n, policy: m[3]}
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
