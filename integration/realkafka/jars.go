package realkafka

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// DefaultVersion is the Apache Kafka version the tier runs: the newest for which Maven Central
// serves every artifact the pom needs (4.4.0 has kafka_2.13 and connect-runtime, but not yet
// connect-file and connect-mirror).
const DefaultVersion = "4.3.1"

// project is the Maven project that resolves the jars and builds the test connectors.
//
//go:embed pom.xml src
var project embed.FS

// completeMark marks a cache folder whose jars were all copied.
const completeMark = ".complete"

// ErrNoJava means no java executable was found: the JVM peers cannot run.
var ErrNoJava = errors.New("java is not on the PATH (and JAVA_HOME is unset)")

// ErrNoMaven means the jars are not cached yet and mvn, which would fetch them, is not on the PATH.
var ErrNoMaven = errors.New("mvn is not on the PATH and the Kafka jars are not cached yet")

// JarsConfig says which Kafka version to resolve and where to keep it.
type JarsConfig struct {
	// Version is the Apache Kafka version; empty means DefaultVersion.
	Version string
	// CacheDir is the folder that holds one sub-folder per version and project content; empty
	// means the user's cache folder ($XDG_CACHE_HOME or ~/.cache) + "/offsetagent".
	CacheDir string
	// Debezium also installs Debezium's PostgreSQL and MariaDB source connectors and its JDBC
	// sink connector into a plugin.path folder (PluginPath), in a cache folder of its own.
	Debezium bool
	// Log receives Maven's output; nil discards it.
	Log io.Writer
}

// PluginPath is the plugin.path folder beside the jar folder lib that Jars returned with
// Debezium set: one sub-folder per connector, as Debezium's plugin archives unpack.
func PluginPath(lib string) string { return filepath.Join(filepath.Dir(lib), "plugins") }

// Jars returns the folder holding every jar the broker and the workers need (Kafka, Connect,
// FileStream, MirrorMaker 2, log4j2 and the test connectors), running Maven once per version and
// project content when the folder is not complete yet.
func Jars(ctx context.Context, cfg JarsConfig) (string, error) {
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find the cache folder: %w", err)
		}
		cfg.CacheDir = filepath.Join(base, "offsetagent")
	}
	sum, err := projectSum()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cfg.CacheDir, "kafka-"+cfg.Version+"-"+sum)
	args := []string{"-q", "-B", "-Dmaven.test.skip=true", "-Dkafka.version=" + cfg.Version}
	if cfg.Debezium {
		dir += "-debezium"
		args = append(args, "-Pdebezium")
	}
	lib := filepath.Join(dir, "lib")
	if _, err := os.Stat(filepath.Join(dir, completeMark)); err == nil {
		return lib, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", ErrNoMaven
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create the jar cache: %w", err)
	}
	tmp, err := os.MkdirTemp(cfg.CacheDir, ".resolve-")
	if err != nil {
		return "", fmt.Errorf("create the jar cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "project")
	if err := os.CopyFS(src, project); err != nil {
		return "", fmt.Errorf("write the Maven project: %w", err)
	}
	out := filepath.Join(tmp, "out")
	cmd := exec.CommandContext(ctx, mvn, append(args, "-Dout.dir="+out, "package", "dependency:copy-dependencies")...)
	cmd.Dir = src
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if cfg.Log != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, cfg.Log), io.MultiWriter(&buf, cfg.Log)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("resolve Kafka %s jars with Maven: %w\n%s", cfg.Version, err, buf.Bytes())
	}
	if err := os.WriteFile(filepath.Join(out, completeMark), []byte(cfg.Version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("mark the jar cache complete: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(out, "build")); err != nil {
		return "", fmt.Errorf("clean the Maven build folder: %w", err)
	}
	// A concurrent run may have finished first: its folder is as good as ours.
	if err := os.Rename(out, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, completeMark)); serr != nil {
			return "", fmt.Errorf("move the jars into the cache: %w", err)
		}
	}
	return lib, nil
}

// projectSum is a short hash of the embedded Maven project, so that a changed pom or test
// connector gets a fresh cache folder.
func projectSum() (string, error) {
	var names []string
	err := fs.WalkDir(project, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("list the Maven project: %w", err)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := project.ReadFile(n)
		if err != nil {
			return "", fmt.Errorf("read the Maven project: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Java returns the java executable: $JAVA_HOME/bin/java, else java on the PATH.
func Java() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", ErrNoJava
	}
	return p, nil
}
