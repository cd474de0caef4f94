// Command regex-oracle regenerates the golden tables that prove Java's regular expressions are
// evaluated as Java evaluates them, with a real JVM (see RegexOracle.java):
//
//   - internal/javaregex/testdata/java-oracle.json, from java-oracle-cases.json beside it:
//     for each pattern, whether java.util.regex.Pattern.compile accepts it and, per name,
//     Matcher.matches();
//   - mm2/testdata/filter-oracle.json, from filter-oracle-cases.json beside it: MirrorMaker 2's
//     own DefaultGroupFilter and DefaultTopicFilter configured with groups / groups.exclude
//     (topics / topics.exclude) values, and what they decide per name: Connect's LIST parsing,
//     the entries joined by |, compiled and matched whole.
//
// kafka-clients and connect-mirror come from the jar folder of the real Kafka tier
// (integration/realkafka: Maven, cached after the first run), so java and, the first time, mvn
// must be on the PATH. Run from the repository's root: make regex-goldens.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// regexCase is one pattern and the names it is matched against. Unsupported, when set, is part
// of the reason javaregex gives for not evaluating the pattern: the refusals are listed, so
// that no other pattern is refused unnoticed.
type regexCase struct {
	Pattern     string   `json:"pattern"`
	Names       []string `json:"names"`
	Unsupported string   `json:"unsupported,omitempty"`
}

// filterCase is one configuration of MirrorMaker 2's group or topic filter ("group", "topic");
// a nil setting is not set (MirrorMaker 2's default applies).
type filterCase struct {
	Filter  string   `json:"filter"`
	Include *string  `json:"include"`
	Exclude *string  `json:"exclude"`
	Names   []string `json:"names"`
}

func main() {
	regexCases := flag.String("regex-cases", "internal/javaregex/testdata/java-oracle-cases.json", "the patterns")
	regexOut := flag.String("regex-out", "internal/javaregex/testdata/java-oracle.json", "their golden table")
	filterCases := flag.String("filter-cases", "mm2/testdata/filter-oracle-cases.json", "MirrorMaker 2's filter settings")
	filterOut := flag.String("filter-out", "mm2/testdata/filter-oracle.json", "their golden table")
	src := flag.String("java", "tools/regex-oracle/RegexOracle.java", "the oracle's Java source")
	flag.Parse()
	if err := run(context.Background(), *regexCases, *regexOut, *filterCases, *filterOut, *src); err != nil {
		fmt.Fprintf(os.Stderr, "regex-oracle: %v\n", err)
		os.Exit(1)
	}
}

func hexOf(s *string) string {
	if s == nil {
		return "-"
	}
	return hex.EncodeToString([]byte(*s))
}

func run(ctx context.Context, regexCasesPath, regexOut, filterCasesPath, filterOut, src string) error {
	var regexCases []regexCase
	if err := readJSON(regexCasesPath, &regexCases); err != nil {
		return err
	}
	var filterCases []filterCase
	if err := readJSON(filterCasesPath, &filterCases); err != nil {
		return err
	}
	var in strings.Builder
	line := func(kind string, fields []*string, names []string) {
		in.WriteString(kind)
		for _, f := range fields {
			in.WriteString(" " + hexOf(f))
		}
		for _, n := range names {
			in.WriteString(" " + hexOf(&n))
		}
		in.WriteByte('\n')
	}
	for _, c := range regexCases {
		line("P", []*string{&c.Pattern}, c.Names)
	}
	for _, c := range filterCases {
		kind := map[string]string{"group": "G", "topic": "T"}[c.Filter]
		if kind == "" {
			return fmt.Errorf("%s: filter %q is neither group nor topic", filterCasesPath, c.Filter)
		}
		line(kind, []*string{c.Include, c.Exclude}, c.Names)
	}
	answers, version, err := ask(ctx, src, in.String())
	if err != nil {
		return err
	}
	if len(answers) != len(regexCases)+len(filterCases) {
		return fmt.Errorf("java RegexOracle: %d answers for %d questions", len(answers), len(regexCases)+len(filterCases))
	}
	type regexGolden struct {
		regexCase
		Java json.RawMessage `json:"java"`
	}
	type filterGolden struct {
		filterCase
		Java json.RawMessage `json:"java"`
	}
	regexTable := struct {
		Generator    string        `json:"generator"`
		KafkaVersion string        `json:"kafka_version"`
		Cases        []regexGolden `json:"cases"`
	}{Generator: "tools/regex-oracle (make regex-goldens): java.util.regex.Pattern", KafkaVersion: version}
	for i, c := range regexCases {
		regexTable.Cases = append(regexTable.Cases, regexGolden{c, answers[i]})
	}
	filterTable := struct {
		Generator    string         `json:"generator"`
		KafkaVersion string         `json:"kafka_version"`
		Cases        []filterGolden `json:"cases"`
	}{Generator: "tools/regex-oracle (make regex-goldens): org.apache.kafka.connect.mirror.DefaultGroupFilter and DefaultTopicFilter", KafkaVersion: version}
	for i, c := range filterCases {
		filterTable.Cases = append(filterTable.Cases, filterGolden{c, answers[len(regexCases)+i]})
	}
	if err := writeJSON(regexOut, regexTable); err != nil {
		return err
	}
	if err := writeJSON(filterOut, filterTable); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "regex-oracle: wrote %s (%d cases) and %s (%d cases), Kafka %s\n", regexOut, len(regexCases), filterOut, len(filterCases), version)
	return nil
}

// ask compiles and runs the oracle on the questions, and returns its answers and the version
// of Kafka's jars it ran with.
func ask(ctx context.Context, src, questions string) ([]json.RawMessage, string, error) {
	java, err := realkafka.Java()
	if err != nil {
		return nil, "", err
	}
	lib, err := realkafka.Jars(ctx, realkafka.JarsConfig{Log: os.Stderr})
	if err != nil {
		return nil, "", err
	}
	tmp, err := os.MkdirTemp("", "regex-oracle-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	cp := filepath.Join(lib, "*")
	javac := filepath.Join(filepath.Dir(java), "javac")
	if b, err := exec.CommandContext(ctx, javac, "-nowarn", "-cp", cp, "-d", tmp, src).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("javac: %w\n%s", err, b)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, java, "-cp", tmp+string(os.PathListSeparator)+cp, "RegexOracle")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(questions), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("java RegexOracle: %w\n%s", err, stderr.Bytes())
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	var head struct {
		KafkaVersion string `json:"kafka_version"`
	}
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &head) != nil {
		return nil, "", fmt.Errorf("java RegexOracle: no version line\n%s", stderr.Bytes())
	}
	var answers []json.RawMessage
	for sc.Scan() {
		answers = append(answers, json.RawMessage(bytes.Clone(sc.Bytes())))
	}
	return answers, head.KafkaVersion, sc.Err()
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
