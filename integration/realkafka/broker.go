package realkafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// MaxMessageBytes is the largest record batch the broker accepts: the load scenarios send 20 MiB
// requests.
const MaxMessageBytes = 20 << 20

// BrokerConfig says how to start a broker.
type BrokerConfig struct {
	// Lib is the jar folder from Jars.
	Lib string
	// Dir holds the broker's data, config and log; it must exist.
	Dir string
	// StartTimeout bounds formatting and start-up; zero means 2 minutes.
	StartTimeout time.Duration
	// JVMOptions are the broker JVM's options; nil means small, quick-starting ones for tests
	// (KafkaJVMOptions are Kafka's own, for measurements).
	JVMOptions []string
	// Secure, when set, secures every listener; nil means PLAINTEXT everywhere.
	Secure *ListenerSecurity
}

// ListenerSecurity secures a broker's listeners: clients connect to Addr with ClientProtocol,
// and the broker talks to itself (inter-broker and controller listeners) over SSL, so that no
// listener lets a client in without credentials.
type ListenerSecurity struct {
	// ClientProtocol is the security protocol of the listener at Addr: SASL_SSL, SSL or
	// SASL_PLAINTEXT.
	ClientProtocol string
	// Props are broker properties added last: the key material (ssl.keystore.*,
	// ssl.truststore.*), the SASL mechanisms, the authorizer and super users. The listener
	// names are CLIENT (at Addr), INTERNAL (at InternalAddr) and CONTROLLER, for
	// listener.name.<name>.* properties; the broker's certificate is also its client
	// certificate on INTERNAL and CONTROLLER, so it must be a super user.
	Props map[string]string
	// Probe carries the metadata requests that wait for the broker to start, on InternalAddr
	// (TLS with a super user's client certificate).
	Probe *kafka.Transport
}

// Broker is a running single-node KRaft broker (combined broker and controller) on loopback.
type Broker struct {
	// Addr is the bootstrap address, 127.0.0.1:port.
	Addr string
	// InternalAddr is the INTERNAL listener's address when the broker is secured (see
	// ListenerSecurity), else empty.
	InternalAddr string
	cfg          BrokerConfig
	propsPath    string
	proc         *jvm
	restarts     int
}

// StartBroker formats a fresh storage folder with Kafka's StorageTool, starts kafka.Kafka in
// combined mode and returns once the broker answers metadata requests.
// The ports are free when picked and bound by the JVM seconds later: a broker whose port
// another process took meanwhile (tests of other packages run alongside) starts again on new
// ports, from a fresh storage folder, up to three times.
func StartBroker(ctx context.Context, cfg BrokerConfig) (*Broker, error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		b, err := startBroker(ctx, cfg)
		if err == nil || attempt == 3 || !portTaken(filepath.Join(cfg.Dir, "broker.log")) {
			return b, err
		}
		if err := os.RemoveAll(filepath.Join(cfg.Dir, "data")); err != nil {
			return nil, err
		}
	}
}

// portTaken reports whether the JVM that logged to path failed to bind a port.
func portTaken(path string) bool {
	log, err := os.ReadFile(path)
	return err == nil && bytes.Contains(log, []byte("Address already in use"))
}

func startBroker(ctx context.Context, cfg BrokerConfig) (*Broker, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	controller := fmt.Sprintf("127.0.0.1:%d", ports[1])
	listeners := []string{
		"listeners=PLAINTEXT://" + addr + ",CONTROLLER://" + controller,
		"advertised.listeners=PLAINTEXT://" + addr,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
	}
	var internal string
	if s := cfg.Secure; s != nil {
		internal = fmt.Sprintf("127.0.0.1:%d", ports[2])
		listeners = []string{
			"listeners=CLIENT://" + addr + ",INTERNAL://" + internal + ",CONTROLLER://" + controller,
			"advertised.listeners=CLIENT://" + addr + ",INTERNAL://" + internal,
			"listener.security.protocol.map=CLIENT:" + s.ClientProtocol + ",INTERNAL:SSL,CONTROLLER:SSL",
			"inter.broker.listener.name=INTERNAL",
			"listener.name.internal.ssl.client.auth=required",
			"listener.name.controller.ssl.client.auth=required",
		}
		keys := make([]string, 0, len(s.Props))
		for k := range s.Props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			listeners = append(listeners, k+"="+s.Props[k])
		}
	}
	props := strings.Join(append([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.bootstrap.servers=" + controller,
		"controller.listener.names=CONTROLLER",
		"log.dirs=" + filepath.Join(cfg.Dir, "data"),
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=5",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		// The crash and chaos tests of package integration run agents with a 1 s session
		// timeout, below Kafka's default minimum of 6 s.
		"group.min.session.timeout.ms=500",
		fmt.Sprintf("message.max.bytes=%d", MaxMessageBytes),
		fmt.Sprintf("replica.fetch.max.bytes=%d", MaxMessageBytes),
		"log.segment.bytes=67108864",
		"log.cleaner.dedupe.buffer.size=8388608",
	}, listeners...), "\n") + "\n"
	propsPath := filepath.Join(cfg.Dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, fmt.Errorf("write the broker config: %w", err)
	}
	if err := formatStorage(ctx, cfg, propsPath); err != nil {
		return nil, err
	}
	b := &Broker{Addr: addr, InternalAddr: internal, cfg: cfg, propsPath: propsPath}
	if err := b.start(ctx, "broker"); err != nil {
		return nil, err
	}
	return b, nil
}

// start runs the broker's JVM on its config and data, logging to name.log, and returns once it
// answers metadata requests as the controller's broker.
func (b *Broker) start(ctx context.Context, name string) error {
	p, err := startJVM(b.cfg.Dir, b.cfg.Lib, name, b.cfg.JVMOptions, "kafka.Kafka", b.propsPath)
	if err != nil {
		return err
	}
	b.proc = p
	// A transport of its own: the shared default may hold connections to the process that a
	// restart stopped.
	tr, probe := &kafka.Transport{}, b.Addr
	if s := b.cfg.Secure; s != nil {
		tr = &kafka.Transport{TLS: s.Probe.TLS, SASL: s.Probe.SASL, ClientID: s.Probe.ClientID}
		probe = b.InternalAddr
	}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(probe), Timeout: 2 * time.Second, Transport: tr}
	err = p.waitFor(ctx, "the broker", func(ctx context.Context) error {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return err
		}
		if len(md.Brokers) == 0 || md.Controller.ID != 1 {
			return fmt.Errorf("no controller yet")
		}
		return nil
	})
	if err != nil {
		p.stop()
		return err
	}
	return nil
}

// Restart stops the broker cleanly (a controlled shutdown) and starts it again on the same
// address, config and data, returning once it answers metadata requests. Each partition's
// leader epoch moves on: the shutdown takes leadership away and the start gives it back. The
// broker's peers see it go away: a test restarts only a broker of its own. Log names the new
// process's log afterwards (broker-restart-N.log).
func (b *Broker) Restart(ctx context.Context) error {
	b.proc.stop()
	timeout := b.cfg.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b.restarts++
	return b.start(ctx, fmt.Sprintf("broker-restart-%d", b.restarts))
}

// formatStorage runs `kafka-storage.sh format --standalone` for a new cluster id.
func formatStorage(ctx context.Context, cfg BrokerConfig, propsPath string) error {
	java, err := Java()
	if err != nil {
		return err
	}
	// A cluster id is a UUID in base64url, which may start with '-' (1 in 64): the storage tool
	// would read it as an option. Kafka's Uuid.randomUuid draws again in that case; so do we.
	var clusterID string
	for clusterID == "" || clusterID[0] == '-' {
		id := make([]byte, 16)
		_, _ = rand.Read(id)
		clusterID = base64.RawURLEncoding.EncodeToString(id)
	}
	cds, archived := cdsArchive(cfg.Lib, "kafka.tools.StorageTool", jvmOptions)
	args := append(append(append([]string{}, jvmOptions...), cds...),
		"-Dlog4j2.configurationFile="+filepath.Join(cfg.Dir, "log4j2.properties"),
		"-cp", filepath.Join(cfg.Lib, "*"), "kafka.tools.StorageTool",
		"format", "-t", clusterID, "-c", propsPath, "--standalone")
	if err := os.WriteFile(filepath.Join(cfg.Dir, "log4j2.properties"), []byte(log4j2Config), 0o644); err != nil {
		return fmt.Errorf("write the log4j2 config: %w", err)
	}
	out, err := exec.CommandContext(ctx, java, args...).CombinedOutput()
	archived(err == nil)
	if err != nil {
		return fmt.Errorf("format the broker storage: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the broker (SIGTERM, then SIGKILL after 20 s). It is idempotent.
func (b *Broker) Stop() { b.proc.stop() }

// PID is the broker's process id, for measuring its CPU time.
func (b *Broker) PID() int { return b.proc.cmd.Process.Pid }

// Log is the path of the broker's log file.
func (b *Broker) Log() string { return b.proc.log }
