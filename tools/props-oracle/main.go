// Command props-oracle regenerates the golden table of the client properties reader
// (internal/clientconfig/testdata/props-oracle.json) from its inputs
// (internal/clientconfig/testdata/props-oracle-cases.json) with a real JVM: java.util.Properties.load reads each input, Kafka's ConfigDef parses the
// values of the keys AdminClientConfig defines, JaasContext reads sasl.jaas.config and
// ScramFormatter derives the SCRAM credentials of its password (see PropsOracle.java). kafka-clients comes from the jar folder of the real Kafka tier
// (integration/realkafka: Maven, cached after the first run), so java and, the first time,
// mvn must be on the PATH. Run from the repository's root: make props-goldens.
//
// An input's text is the file's bytes: every character of the JSON string is one byte
// (U+0000 to U+00FF), as Properties.load(InputStream) reads ISO 8859-1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

type input struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type golden struct {
	Name  string          `json:"name"`
	Text  string          `json:"text"`
	Kafka json.RawMessage `json:"kafka"`
}

func main() {
	cases := flag.String("cases", "internal/clientconfig/testdata/props-oracle-cases.json", "the inputs")
	out := flag.String("out", "internal/clientconfig/testdata/props-oracle.json", "the golden table to write")
	src := flag.String("java", "tools/props-oracle/PropsOracle.java", "the oracle's Java source")
	flag.Parse()
	if err := run(context.Background(), *cases, *out, *src); err != nil {
		fmt.Fprintf(os.Stderr, "props-oracle: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, casesPath, outPath, src string) error {
	data, err := os.ReadFile(casesPath)
	if err != nil {
		return err
	}
	var inputs []input
	if err := json.Unmarshal(data, &inputs); err != nil {
		return fmt.Errorf("read %s: %w", casesPath, err)
	}
	java, err := realkafka.Java()
	if err != nil {
		return err
	}
	lib, err := realkafka.Jars(ctx, realkafka.JarsConfig{Log: os.Stderr})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "props-oracle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cp := filepath.Join(lib, "*")
	javac := filepath.Join(filepath.Dir(java), "javac")
	if b, err := exec.CommandContext(ctx, javac, "-nowarn", "-cp", cp, "-d", tmp, src).CombinedOutput(); err != nil {
		return fmt.Errorf("javac: %w\n%s", err, b)
	}
	args := []string{"-cp", tmp + string(os.PathListSeparator) + cp, "PropsOracle"}
	for i, in := range inputs {
		b := make([]byte, 0, len(in.Text))
		for _, r := range in.Text {
			if r > 0xFF {
				return fmt.Errorf("case %q: character U+%04X is not one byte (write \\u escapes of the properties format instead)", in.Name, r)
			}
			b = append(b, byte(r))
		}
		p := filepath.Join(tmp, fmt.Sprintf("case-%03d.properties", i))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
		args = append(args, p)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("java PropsOracle: %w\n%s", err, stderr.Bytes())
	}
	var table []golden
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(table) == len(inputs) {
			return fmt.Errorf("java PropsOracle: more answers than inputs")
		}
		in := inputs[len(table)]
		table = append(table, golden{Name: in.Name, Text: in.Text, Kafka: json.RawMessage(strings.TrimSpace(sc.Text()))})
	}
	if len(table) != len(inputs) {
		return fmt.Errorf("java PropsOracle: %d answers for %d inputs\n%s", len(table), len(inputs), stderr.Bytes())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(table); err != nil {
		return err
	}
	if err := os.WriteFile(outPath, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "props-oracle: wrote %s (%d cases)\n", outPath, len(table))
	return nil
}
