// Package oracle makes the repository's golden tables with a real JVM: what Java, Kafka's
// clients, Kafka Connect and MirrorMaker 2 answer for a table of inputs, against which the Go
// code that reads or writes the same things is tested without a JVM. Each golden set (Sets) is
// one Java program in this folder, the inputs it is asked about, and the files it writes:
//
//   - props (PropsOracle.java): java.util.Properties and kafka-clients' ConfigDef, JaasContext
//     and ScramFormatter read client properties files (internal/clientconfig);
//   - regex (RegexOracle.java): java.util.regex and MirrorMaker 2's DefaultGroupFilter and
//     DefaultTopicFilter judge patterns (internal/javaregex, mm2's filters), and java.util.regex
//     judges a pattern and the regex javaregex.AfterPrefix makes of it behind a prefix (a
//     sink's topics.regex across MirrorMaker 2's default policy; its input is that regex);
//   - secrets (SecretsOracle.java): Connect's ConfigTransformer and kafka-clients' JaasConfig
//     read config values (events' secret parts);
//   - connect (ConnectOracle.java): the offsets-topic bytes Connect's REST offsets path writes,
//     with the Jackson that Connect ships (offsetstore);
//   - mm2 (RecordsOracle.java): MirrorMaker 2's checkpoint and offset-sync records;
//   - policy (PolicyOracle.java): MirrorMaker 2's DefaultReplicationPolicy's topic names.
//
// The JVM and the jars are the real Kafka tier's (integration/realkafka: java on the PATH, the
// jar folder Maven resolves once into the cache), so a golden set is what the Kafka version
// the tier runs says. Every Java source is compiled once, together, with javac beside java.
//
// `make goldens` (tools/oracle/cmd/goldens) writes the sets; the real tier's TestGoldens makes
// them again and requires the committed files to be equal, byte for byte.
package oracle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// File is one golden file: its path from the repository's root and its bytes.
type File struct {
	Path string
	Data []byte
}

// Set is one golden set: a Java program and the files it makes.
type Set struct {
	// Name names the set on the command line (make goldens GOLDENS=name).
	Name string
	// Make asks the JVM and returns the set's files; root is the repository's root.
	Make func(ctx context.Context, jvm *JVM, root string) ([]File, error)
}

// JVM runs the oracles' Java programs on the real tier's jars.
type JVM struct {
	java    string
	lib     string
	classes string
}

// NewJVM compiles every oracle's Java source (tools/oracle/*.java under root, the
// repository's root) against the jars of lib (a jar folder of realkafka.Jars) into dir, with
// java the java executable (realkafka.Java) and the javac beside it.
func NewJVM(ctx context.Context, java, lib, root, dir string) (*JVM, error) {
	srcs, err := filepath.Glob(filepath.Join(root, "tools", "oracle", "*.java"))
	if err != nil || len(srcs) == 0 {
		return nil, fmt.Errorf("find the oracles' Java sources in tools/oracle: %v", err)
	}
	javac := filepath.Join(filepath.Dir(java), "javac")
	cp := filepath.Join(lib, "*")
	out, err := exec.CommandContext(ctx, javac, append([]string{"-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", dir}, srcs...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("compile the oracles with %s: %w\n%s", javac, err, out)
	}
	return &JVM{java: java, lib: lib, classes: dir}, nil
}

// Run runs the class main with args and stdin, and returns what it printed.
func (j *JVM) Run(ctx context.Context, main string, stdin []byte, args ...string) ([]byte, error) {
	cp := j.classes + string(os.PathListSeparator) + filepath.Join(j.lib, "*")
	cmd := exec.CommandContext(ctx, j.java, append([]string{"-cp", cp, main}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("java %s: %w\n%s", main, err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// Lookup returns the sets named, in Sets' order; no name is every set.
func Lookup(names ...string) ([]Set, error) {
	if len(names) == 0 {
		return Sets, nil
	}
	var out []Set
	for _, s := range Sets {
		for _, n := range names {
			if n == s.Name {
				out = append(out, s)
			}
		}
	}
	if len(out) != len(names) {
		var known []string
		for _, s := range Sets {
			known = append(known, s.Name)
		}
		return nil, fmt.Errorf("golden sets %q: each must be one of %s", names, strings.Join(known, ", "))
	}
	return out, nil
}
