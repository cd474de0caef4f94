// Command secrets-oracle regenerates the golden table of how Kafka reads a config value's
// secrets (events/testdata/secrets-oracle.json) from its inputs
// (events/testdata/secrets-oracle-cases.json) with a real JVM: Connect's ConfigTransformer finds
// each value's config provider placeholders and JaasConfig reads it as a sasl.jaas.config (see
// SecretsOracle.java). kafka-clients comes from the jar folder of the real Kafka tier
// (integration/realkafka: Maven, cached after the first run), so java and, the first time,
// mvn must be on the PATH. Run from the repository's root: make secrets-goldens.
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
	Name  string `json:"name"`
	Value string `json:"value"`
}

type golden struct {
	Name  string          `json:"name"`
	Value string          `json:"value"`
	Kafka json.RawMessage `json:"kafka"`
}

func main() {
	cases := flag.String("cases", "events/testdata/secrets-oracle-cases.json", "the inputs")
	out := flag.String("out", "events/testdata/secrets-oracle.json", "the golden table to write")
	src := flag.String("java", "tools/secrets-oracle/SecretsOracle.java", "the oracle's Java source")
	flag.Parse()
	if err := run(context.Background(), *cases, *out, *src); err != nil {
		fmt.Fprintf(os.Stderr, "secrets-oracle: %v\n", err)
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
	tmp, err := os.MkdirTemp("", "secrets-oracle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cp := filepath.Join(lib, "*")
	javac := filepath.Join(filepath.Dir(java), "javac")
	if b, err := exec.CommandContext(ctx, javac, "-nowarn", "-cp", cp, "-d", tmp, src).CombinedOutput(); err != nil {
		return fmt.Errorf("javac: %w\n%s", err, b)
	}
	args := []string{"-cp", tmp + string(os.PathListSeparator) + cp, "org.apache.kafka.common.security.SecretsOracle"}
	for i, in := range inputs {
		p := filepath.Join(tmp, fmt.Sprintf("case-%03d.txt", i))
		if err := os.WriteFile(p, []byte(in.Value), 0o600); err != nil {
			return err
		}
		args = append(args, p)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("java SecretsOracle: %w\n%s", err, stderr.Bytes())
	}
	var table []golden
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(table) == len(inputs) {
			return fmt.Errorf("java SecretsOracle: more answers than inputs")
		}
		in := inputs[len(table)]
		table = append(table, golden{Name: in.Name, Value: in.Value, Kafka: json.RawMessage(strings.TrimSpace(sc.Text()))})
	}
	if len(table) != len(inputs) {
		return fmt.Errorf("java SecretsOracle: %d answers for %d inputs\n%s", len(table), len(inputs), stderr.Bytes())
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
	fmt.Fprintf(os.Stderr, "secrets-oracle: wrote %s (%d cases)\n", outPath, len(table))
	return nil
}
