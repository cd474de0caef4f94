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

// DefaultMariaDBPrefix is where Debian's mariadb-server package installs the server's programs:
// mariadbd in sbin, mariadb-install-db and the client mariadb in bin.
const DefaultMariaDBPrefix = "/usr"

// ErrNoMariaDB means MariaDB's programs (mariadbd, mariadb-install-db, mariadb) are not installed;
// MariaDBPrograms wraps it with the folder looked in.
var ErrNoMariaDB = errors.New("MariaDB is not installed")

// MariaDBConfig says how to start a MariaDB server.
type MariaDBConfig struct {
	// Prefix is the folder whose bin or sbin holds mariadbd, mariadb-install-db and mariadb;
	// empty means DefaultMariaDBPrefix.
	Prefix string
	// LogDir receives mariadb.log; it must exist. The data folder is a temporary folder of its
	// own, removed by Stop.
	LogDir string
	// StartTimeout bounds mariadb-install-db and start-up; zero means 2 minutes.
	StartTimeout time.Duration
}

// MariaDB is a running MariaDB server on loopback that writes a binary log as Debezium's
// MariaDB connector reads it (log_bin, binlog_format=ROW, binlog_row_image=FULL, server_id 1;
// MariaDB's GTIDs are always on), and whose user root logs in without a password from
// 127.0.0.1 with every privilege (replication included).
type MariaDB struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// ServerID is the server's server_id; a binlog client (Debezium's database.server.id) must
	// use another.
	ServerID int
	client   string
	data     string
	log      string
	cmd      *exec.Cmd
	done     chan struct{}
}

// MariaDBPrograms returns the paths of MariaDB's programs under prefix (each in bin or sbin), or
// an ErrNoMariaDB.
func MariaDBPrograms(prefix string) (server, installDB, client string, err error) {
	prefix = or(prefix, DefaultMariaDBPrefix)
	find := func(name string) string {
		for _, d := range []string{"sbin", "bin"} {
			p := filepath.Join(prefix, d, name)
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return ""
	}
	server, installDB, client = find("mariadbd"), find("mariadb-install-db"), find("mariadb")
	if server == "" || installDB == "" || client == "" {
		return "", "", "", fmt.Errorf("%w (no mariadbd, mariadb-install-db and mariadb in %s/bin or %s/sbin; apt-get install mariadb-server)",
			ErrNoMariaDB, prefix, prefix)
	}
	return server, installDB, client, nil
}

// StartMariaDB creates a data folder with mariadb-install-db in a new temporary folder and
// starts mariadbd on a free loopback port with its binary log on (see MariaDB), its Unix socket
// in that folder and no fsync, and returns once it accepts queries. A root caller runs both
// programs as the user nobody (the folder is given to it), as StartPostgres does.
func StartMariaDB(ctx context.Context, cfg MariaDBConfig) (*MariaDB, error) {
	server, installDB, client, err := MariaDBPrograms(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	root, err := os.MkdirTemp("", "offsetagent-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("create the MariaDB folder: %w", err)
	}
	data := filepath.Join(root, "data")
	asUser := func(ctx context.Context, prog string, args ...string) *exec.Cmd {
		if os.Geteuid() != 0 {
			return exec.CommandContext(ctx, prog, args...)
		}
		// setpriv execs the program itself, so the process is mariadbd and a signal reaches it.
		return exec.CommandContext(ctx, "setpriv", append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups",
			"--pdeathsig=KILL", "--", prog}, args...)...)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(root, 65534, 65534); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("give the MariaDB folder to nobody: %w", err)
		}
	}
	// The options after the install program's own go to the mariadbd it bootstraps with.
	fast := []string{"--innodb-flush-method=nosync", "--innodb-doublewrite=0", "--innodb-buffer-pool-size=32M", "--skip-name-resolve"}
	install := asUser(ctx, installDB, append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db"}, fast...)...)
	install.Dir = root
	if out, err := install.CombinedOutput(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	ports, err := freePorts(1)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	logPath := filepath.Join(cfg.LogDir, "mariadb.log")
	f, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("create the MariaDB log: %w", err)
	}
	const serverID = 1
	cmd := asUser(context.Background(), server, append([]string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(ports[0]),
		"--bind-address=127.0.0.1", "--socket=" + filepath.Join(root, "mariadbd.sock"), "--pid-file=" + filepath.Join(root, "mariadbd.pid"),
		"--log-bin=" + filepath.Join(data, "mariadb-bin"), "--binlog-format=ROW", "--binlog-row-image=FULL",
		"--server-id=" + strconv.Itoa(serverID), "--sync-binlog=0", "--innodb-flush-log-at-trx-commit=0",
		"--performance-schema=OFF", "--max-connections=40"}, fast...)...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		os.RemoveAll(root)
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	m := &MariaDB{Port: ports[0], ServerID: serverID, client: client, data: root, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(m.done) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, qerr := m.Query(ctx, "", "SELECT 1")
		if qerr == nil {
			return m, nil
		}
		select {
		case <-m.done:
			m.Stop()
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("mariadbd exited:\n%s", b)
		case <-ctx.Done():
			m.Stop()
			return nil, fmt.Errorf("wait for mariadbd: %w (last: %v; log: %s)", ctx.Err(), qerr, logPath)
		case <-tick.C:
		}
	}
}

// Query runs sql (one or more statements separated by ';', stopping at the first error; as
// MariaDB's client does, each statement commits unless inside BEGIN ... COMMIT) in database db
// ("" for none) as root with the client mariadb over TCP, and returns its output without
// headers: one line per row, columns separated by tabs.
func (m *MariaDB) Query(ctx context.Context, db, sql string) (string, error) {
	args := []string{"--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P", strconv.Itoa(m.Port), "-u", "root",
		"--batch", "--skip-column-names", "--connect-timeout=5"}
	if db != "" {
		args = append(args, "-D", db)
	}
	cmd := exec.CommandContext(ctx, m.client, args...)
	cmd.Stdin = strings.NewReader(sql)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mariadb on %q: %w: %s", db, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// Log is the path of the server's log file.
func (m *MariaDB) Log() string { return m.log }

// Stop stops the server (SIGTERM, a clean shutdown; SIGKILL after 20 s) and removes its data
// folder. It is idempotent.
func (m *MariaDB) Stop() {
	select {
	case <-m.done:
	default:
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	}
	_ = os.RemoveAll(m.data)
}
