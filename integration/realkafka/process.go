package realkafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopTimeout is how long a JVM gets to shut down cleanly before it is killed.
const stopTimeout = 20 * time.Second

// jvm is one JVM process in its own process group, logging to a file.
type jvm struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // set before done is closed
}

// log4j2Config logs INFO to stdout, which the fixture sends to the process's log file.
const log4j2Config = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
`

// jvmOptions keep the JVMs small and quick to start on a shared two-core machine.
var jvmOptions = []string{"-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Djava.awt.headless=true"}

// KafkaJVMOptions are the JVM options Apache Kafka's start scripts give a broker
// (kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, kafka-server-start.sh's KAFKA_HEAP_OPTS): G1
// with short pauses, a 1 GiB heap and the full JIT, for measurements. The tests use the small,
// quick-starting jvmOptions, whose serial collector and first-tier JIT make a busy broker slower
// and its pauses longer.
var KafkaJVMOptions = []string{"-Xms1G", "-Xmx1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
	"-Djava.awt.headless=true"}

// startJVM runs main with args on the classpath lib/*, logging to dir/name.log, with the JVM
// options opts (jvmOptions when nil).
func startJVM(dir, lib, name string, opts []string, main string, args ...string) (*jvm, error) {
	if opts == nil {
		opts = jvmOptions
	}
	java, err := Java()
	if err != nil {
		return nil, err
	}
	logCfg := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(logCfg, []byte(log4j2Config), 0o644); err != nil {
		return nil, fmt.Errorf("write the log4j2 config: %w", err)
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create the %s log: %w", name, err)
	}
	cds, archived := cdsArchive(lib, main, opts)
	full := append(append(append([]string{}, opts...), cds...),
		"-Dlog4j2.configurationFile="+logCfg, "-cp", filepath.Join(lib, "*"), main)
	cmd := exec.Command(java, append(full, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		archived(false)
		return nil, fmt.Errorf("start the %s JVM: %w", name, err)
	}
	p := &jvm{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		// A JVM exits with a status (143 after SIGTERM) when it ends cleanly; a SIGKILL
		// ends it with none.
		archived(cmd.ProcessState != nil && cmd.ProcessState.Exited())
		close(p.done)
	}()
	return p, nil
}

// exited returns a non-nil error once the process has ended.
func (p *jvm) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s exited (log: %s)", p.name, p.log)
		}
		return fmt.Errorf("%s exited: %w (log: %s)", p.name, p.err, p.log)
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after stopTimeout. It is idempotent.
func (p *jvm) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// kill sends SIGKILL to the process group and waits for the process to end: no clean shutdown,
// as when a machine dies. It is idempotent.
func (p *jvm) kill() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// tail returns the last n lines of the process's log.
func (p *jvm) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ready every 250 ms until it returns nil, the process exits or ctx ends.
func (p *jvm) waitFor(ctx context.Context, what string, ready func(context.Context) error) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		if err := p.exited(); err != nil {
			return fmt.Errorf("wait for %s: %w\n%s", what, err, p.tail(30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v; log: %s)\n%s", what, ctx.Err(), last, p.log, p.tail(30))
		case <-t.C:
		}
	}
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StopProcessGroup stops a process started in its own process group (Setpgid) whose Wait
// closes done: SIGTERM, then SIGKILL of the whole group after grace. It returns at once when
// the process has already ended.
func StopProcessGroup(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
