package realkafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultPostgresBin is where Debian's postgresql-15 package installs the server's programs.
const DefaultPostgresBin = "/usr/lib/postgresql/15/bin"

// ErrNoPostgres means PostgreSQL's server programs (initdb, postgres, psql) are not installed.
var ErrNoPostgres = errors.New("PostgreSQL is not installed (no initdb, postgres and psql in " + DefaultPostgresBin + "; apt-get install postgresql-15)")

// PostgresConfig says how to start a PostgreSQL server.
type PostgresConfig struct {
	// Bin is the folder of initdb, postgres and psql; empty means DefaultPostgresBin.
	Bin string
	// LogDir receives postgres.log; it must exist. The data folder is a temporary folder of its
	// own, removed by Stop.
	LogDir string
	// StartTimeout bounds initdb and start-up; zero means 1 minute.
	StartTimeout time.Duration
}

// Postgres is a running PostgreSQL server on loopback with logical decoding enabled, whose
// superuser "postgres" logs in without a password from 127.0.0.1 (also for replication).
type Postgres struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	bin  string
	data string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// PostgresBin returns the folder of PostgreSQL's programs, or ErrNoPostgres.
func PostgresBin(bin string) (string, error) {
	bin = or(bin, DefaultPostgresBin)
	for _, p := range []string{"initdb", "postgres", "psql"} {
		if _, err := os.Stat(filepath.Join(bin, p)); err != nil {
			return "", ErrNoPostgres
		}
	}
	return bin, nil
}

// StartPostgres creates a cluster with initdb in a new temporary folder and starts postgres on
// a free loopback port with wal_level=logical (room for 10 replication slots and WAL senders),
// no Unix socket and no fsync, and returns once it accepts queries. PostgreSQL refuses to run as
// root: a root caller runs both programs as the user nobody (the folder is given to it).
func StartPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	bin, err := PostgresBin(cfg.Bin)
	if err != nil {
		return nil, err
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	root, err := os.MkdirTemp("", "offsetagent-pg-")
	if err != nil {
		return nil, fmt.Errorf("create the PostgreSQL folder: %w", err)
	}
	data := filepath.Join(root, "data")
	asUser := func(prog string, args ...string) *exec.Cmd {
		if os.Geteuid() != 0 {
			return exec.Command(filepath.Join(bin, prog), args...)
		}
		// setpriv execs the program itself, so the process is postgres and a signal reaches it.
		return exec.Command("setpriv", append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups",
			"--pdeathsig=KILL", "--", filepath.Join(bin, prog)}, args...)...)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(root, 65534, 65534); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("give the PostgreSQL folder to nobody: %w", err)
		}
	}
	initdb := asUser("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C")
	initdb.Dir = root
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	ports, err := freePorts(1)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	logPath := filepath.Join(cfg.LogDir, "postgres.log")
	f, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("create the PostgreSQL log: %w", err)
	}
	cmd := asUser("postgres", "-D", data, "-p", strconv.Itoa(ports[0]),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "wal_level=logical", "-c", "max_replication_slots=10", "-c", "max_wal_senders=10",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB", "-c", "max_connections=40")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		os.RemoveAll(root)
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	p := &Postgres{Port: ports[0], bin: bin, data: root, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, qerr := p.Query(ctx, "postgres", "select 1")
		if qerr == nil {
			return p, nil
		}
		select {
		case <-p.done:
			p.Stop()
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("postgres exited:\n%s", b)
		case <-ctx.Done():
			p.Stop()
			return nil, fmt.Errorf("wait for postgres: %w (last: %v; log: %s)", ctx.Err(), qerr, logPath)
		case <-tick.C:
		}
	}
}

// Query runs sql (one or more statements, stopping at the first error; several statements in
// one call run in one transaction only inside BEGIN/COMMIT) in database db with psql and
// returns its unaligned output without headers: one line per row, columns separated by '|'.
func (p *Postgres) Query(ctx context.Context, db, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "-d", db, "-f", "-")
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	cmd.Stdin = strings.NewReader(sql)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql on %s: %w: %s", db, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// Log is the path of the server's log file.
func (p *Postgres) Log() string { return p.log }

// Stop stops the server (a fast shutdown, SIGKILL after 20 s) and removes its data folder. It is
// idempotent.
func (p *Postgres) Stop() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	_ = os.RemoveAll(p.data)
}
