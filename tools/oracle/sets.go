package oracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/offsetagent/offsetagent/internal/javaregex"
)

// Sets are the golden sets, in the order make goldens writes them.
var Sets = []Set{
	{Name: "props", Make: makeProps},
	{Name: "regex", Make: makeRegex},
	{Name: "secrets", Make: makeSecrets},
	{Name: "connect", Make: makeConnect},
	{Name: "mm2", Make: fixed("org.apache.kafka.connect.mirror.RecordsOracle", "mm2/testdata/mm2-goldens.json")},
	{Name: "policy", Make: fixed("PolicyOracle", "mm2/testdata/replication-policy-goldens.json")},
}

// fixed is a set whose program takes no input and prints its golden file.
func fixed(main, path string) func(context.Context, *JVM, string) ([]File, error) {
	return func(ctx context.Context, j *JVM, _ string) ([]File, error) {
		out, err := j.Run(ctx, main, nil)
		if err != nil {
			return nil, err
		}
		return []File{{Path: path, Data: out}}, nil
	}
}

// makeProps asks PropsOracle about the properties files of
// internal/clientconfig/testdata/props-oracle-cases.json. An input's text is the file's bytes:
// every character of the JSON string is one byte (U+0000 to U+00FF), as
// Properties.load(InputStream) reads ISO 8859-1.
func makeProps(ctx context.Context, j *JVM, root string) ([]File, error) {
	const cases = "internal/clientconfig/testdata/props-oracle-cases.json"
	var inputs []struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	if err := readJSON(root, cases, &inputs); err != nil {
		return nil, err
	}
	files := make([][]byte, len(inputs))
	for i, in := range inputs {
		for _, r := range in.Text {
			if r > 0xFF {
				return nil, fmt.Errorf("%s: case %q: character U+%04X is not one byte (write a \\u escape of the properties format instead)", cases, in.Name, r)
			}
			files[i] = append(files[i], byte(r))
		}
	}
	answers, err := perFile(ctx, j, "PropsOracle", files)
	if err != nil {
		return nil, err
	}
	type golden struct {
		Name  string          `json:"name"`
		Text  string          `json:"text"`
		Kafka json.RawMessage `json:"kafka"`
	}
	table := make([]golden, len(inputs))
	for i, in := range inputs {
		table[i] = golden{Name: in.Name, Text: in.Text, Kafka: answers[i]}
	}
	return encode("internal/clientconfig/testdata/props-oracle.json", table)
}

// makeSecrets asks SecretsOracle about the config values of
// events/testdata/secrets-oracle-cases.json (each file the value's UTF-8 bytes).
func makeSecrets(ctx context.Context, j *JVM, root string) ([]File, error) {
	var inputs []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if err := readJSON(root, "events/testdata/secrets-oracle-cases.json", &inputs); err != nil {
		return nil, err
	}
	files := make([][]byte, len(inputs))
	for i, in := range inputs {
		files[i] = []byte(in.Value)
	}
	answers, err := perFile(ctx, j, "org.apache.kafka.common.security.SecretsOracle", files)
	if err != nil {
		return nil, err
	}
	type golden struct {
		Name  string          `json:"name"`
		Value string          `json:"value"`
		Kafka json.RawMessage `json:"kafka"`
	}
	table := make([]golden, len(inputs))
	for i, in := range inputs {
		table[i] = golden{Name: in.Name, Value: in.Value, Kafka: answers[i]}
	}
	return encode("events/testdata/secrets-oracle.json", table)
}

// perFile writes each input to a file of its own, runs main with their paths, and returns its
// answers: one JSON line per file, in order.
func perFile(ctx context.Context, j *JVM, main string, inputs [][]byte) ([]json.RawMessage, error) {
	tmp, err := os.MkdirTemp("", "oracle-input-")
	if err != nil {
		return nil, fmt.Errorf("create the inputs' folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	args := make([]string, len(inputs))
	for i, in := range inputs {
		args[i] = filepath.Join(tmp, fmt.Sprintf("case-%03d", i))
		if err := os.WriteFile(args[i], in, 0o600); err != nil {
			return nil, fmt.Errorf("write input %d: %w", i, err)
		}
	}
	out, err := j.Run(ctx, main, nil, args...)
	if err != nil {
		return nil, err
	}
	answers := lines(out)
	if len(answers) != len(inputs) {
		return nil, fmt.Errorf("java %s: %d answers for %d inputs", main, len(answers), len(inputs))
	}
	return answers, nil
}

// regexCase is one pattern and the names it is matched against. Unsupported, when set, is part
// of the reason javaregex gives for not evaluating the pattern: the refusals are listed, so
// that no other pattern is refused unnoticed.
type regexCase struct {
	Pattern     string   `json:"pattern"`
	Names       []string `json:"names"`
	Unsupported string   `json:"unsupported,omitempty"`
}

// prefixCase is one pattern moved behind a prefix, and the names it is matched against (on B:
// prefix+name). Unsupported, when set, is part of the reason javaregex.AfterPrefix gives for
// a refusal that Java may not need: the refusals are listed, so that no other pattern is
// refused unnoticed.
type prefixCase struct {
	Prefix      string   `json:"prefix"`
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

// makeRegex asks RegexOracle about the patterns of
// internal/javaregex/testdata/java-oracle-cases.json (Pattern.compile, Matcher.matches per
// name), the patterns moved behind a prefix of prefix-oracle-cases.json beside it (the pattern
// against each name, and the regex javaregex.AfterPrefix makes of it against prefix+name; for
// one it refuses, the plain Quote(prefix)+"(?:pattern)" it would otherwise make, so that the
// table shows why it refuses), and the filter settings of mm2/testdata/filter-oracle-cases.json
// (MirrorMaker 2's own DefaultGroupFilter and DefaultTopicFilter: Connect's LIST parsing, the
// entries joined by |, compiled and matched whole).
func makeRegex(ctx context.Context, j *JVM, root string) ([]File, error) {
	const filterCasesPath = "mm2/testdata/filter-oracle-cases.json"
	var regexCases []regexCase
	if err := readJSON(root, "internal/javaregex/testdata/java-oracle-cases.json", &regexCases); err != nil {
		return nil, err
	}
	var prefixCases []prefixCase
	if err := readJSON(root, "internal/javaregex/testdata/prefix-oracle-cases.json", &prefixCases); err != nil {
		return nil, err
	}
	var filterCases []filterCase
	if err := readJSON(root, filterCasesPath, &filterCases); err != nil {
		return nil, err
	}
	// Every string in hex of its UTF-8 bytes, "-" for a setting not set.
	var in strings.Builder
	line := func(kind string, fields []*string, names []string) {
		in.WriteString(kind)
		for _, f := range fields {
			if f == nil {
				in.WriteString(" -")
			} else {
				in.WriteString(" " + hex.EncodeToString([]byte(*f)))
			}
		}
		for _, n := range names {
			in.WriteString(" " + hex.EncodeToString([]byte(n)))
		}
		in.WriteByte('\n')
	}
	for _, c := range regexCases {
		line("P", []*string{&c.Pattern}, c.Names)
	}
	rewritten := make([]string, len(prefixCases))
	refused := make([]bool, len(prefixCases))
	for i, c := range prefixCases {
		out, err := javaregex.AfterPrefix(c.Prefix, c.Pattern)
		if err != nil {
			out, refused[i] = javaregex.Quote(c.Prefix)+"(?:"+c.Pattern+")", true
		}
		rewritten[i] = out
		onB := make([]string, len(c.Names))
		for k, n := range c.Names {
			onB[k] = c.Prefix + n
		}
		line("P", []*string{&c.Pattern}, c.Names)
		line("P", []*string{&rewritten[i]}, onB)
	}
	for _, c := range filterCases {
		kind := map[string]string{"group": "G", "topic": "T"}[c.Filter]
		if kind == "" {
			return nil, fmt.Errorf("%s: filter %q is neither group nor topic", filterCasesPath, c.Filter)
		}
		line(kind, []*string{c.Include, c.Exclude}, c.Names)
	}
	out, err := j.Run(ctx, "RegexOracle", []byte(in.String()))
	if err != nil {
		return nil, err
	}
	answers := lines(out)
	var head struct {
		KafkaVersion string `json:"kafka_version"`
	}
	if len(answers) == 0 || json.Unmarshal(answers[0], &head) != nil {
		return nil, fmt.Errorf("java RegexOracle: no version line")
	}
	answers = answers[1:]
	if want := len(regexCases) + 2*len(prefixCases) + len(filterCases); len(answers) != want {
		return nil, fmt.Errorf("java RegexOracle: %d answers for %d questions", len(answers), want)
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
	}{Generator: "tools/oracle (make goldens): java.util.regex.Pattern", KafkaVersion: head.KafkaVersion}
	for i, c := range regexCases {
		regexTable.Cases = append(regexTable.Cases, regexGolden{c, answers[i]})
	}
	answers = answers[len(regexCases):]
	type prefixGolden struct {
		prefixCase
		Rewritten string `json:"rewritten"`
		Refused   bool   `json:"refused"`
		Java      struct {
			OnA json.RawMessage `json:"on_a"`
			OnB json.RawMessage `json:"on_b"`
		} `json:"java"`
	}
	prefixTable := struct {
		Generator    string         `json:"generator"`
		KafkaVersion string         `json:"kafka_version"`
		Cases        []prefixGolden `json:"cases"`
	}{Generator: "tools/oracle (make goldens): javaregex.AfterPrefix judged by java.util.regex.Pattern", KafkaVersion: head.KafkaVersion}
	for i, c := range prefixCases {
		g := prefixGolden{prefixCase: c, Rewritten: rewritten[i], Refused: refused[i]}
		g.Java.OnA, g.Java.OnB = answers[2*i], answers[2*i+1]
		prefixTable.Cases = append(prefixTable.Cases, g)
	}
	answers = answers[2*len(prefixCases):]
	filterTable := struct {
		Generator    string         `json:"generator"`
		KafkaVersion string         `json:"kafka_version"`
		Cases        []filterGolden `json:"cases"`
	}{Generator: "tools/oracle (make goldens): org.apache.kafka.connect.mirror.DefaultGroupFilter and DefaultTopicFilter", KafkaVersion: head.KafkaVersion}
	for i, c := range filterCases {
		filterTable.Cases = append(filterTable.Cases, filterGolden{c, answers[i]})
	}
	regexFile, err := encode("internal/javaregex/testdata/java-oracle.json", regexTable)
	if err != nil {
		return nil, err
	}
	prefixFile, err := encode("internal/javaregex/testdata/prefix-oracle.json", prefixTable)
	if err != nil {
		return nil, err
	}
	filterFile, err := encode("mm2/testdata/filter-oracle.json", filterTable)
	if err != nil {
		return nil, err
	}
	return append(append(regexFile, prefixFile...), filterFile...), nil
}

// makeConnect asks ConnectOracle about offsetstore/testdata/oracle-input.json (its protocol
// is at the top of ConnectOracle.java; offsetstore/testdata/gen-input.py writes the input).
// The answer is indented, its strings written in UTF-8 rather than Jackson's escapes, so that
// diffs stay readable. The committed golden is a JDK 17's (OpenJDK 17.0.15): its
// Double.toString is not always the shortest form JDK 19 and later print, and the inputs avoid
// those doubles (offsetstore/javadouble_test.go).
func makeConnect(ctx context.Context, j *JVM, root string) ([]File, error) {
	in, err := os.ReadFile(filepath.Join(root, "offsetstore/testdata/oracle-input.json"))
	if err != nil {
		return nil, fmt.Errorf("read the Connect oracle's input: %w", err)
	}
	out, err := j.Run(ctx, "ConnectOracle", in)
	if err != nil {
		return nil, err
	}
	data, err := readable(out)
	if err != nil {
		return nil, fmt.Errorf("java ConnectOracle's answer: %w", err)
	}
	return []File{{Path: "offsetstore/testdata/oracle-golden.json", Data: data}}, nil
}

// lines returns the non-empty lines of out.
func lines(out []byte) []json.RawMessage {
	var answers []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			answers = append(answers, json.RawMessage(bytes.Clone(l)))
		}
	}
	return answers
}

func readJSON(root, path string, v any) error {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return fmt.Errorf("read the inputs: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// encode is the golden file path holding v: indented by one space, characters as they are.
func encode(path string, v any) ([]File, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %s: %w", path, err)
	}
	return []File{{Path: path, Data: buf.Bytes()}}, nil
}

// readable indents the JSON document doc by one space, in its own key order, with every
// string written in UTF-8 instead of the \u escapes it may hold.
func readable(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	type level struct {
		object bool
		n      int // the tokens in it so far
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			compact.WriteByte(byte(d))
			continue
		}
		if len(stack) > 0 {
			l := &stack[len(stack)-1]
			switch {
			case l.n > 0 && l.object && l.n%2 == 1:
				compact.WriteByte(':')
			case l.n > 0:
				compact.WriteByte(',')
			}
			l.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			compact.WriteByte(byte(t))
			stack = append(stack, level{object: t == '{'})
		case json.Number:
			compact.WriteString(t.String())
		default:
			if err := enc.Encode(t); err != nil {
				return nil, err
			}
			compact.Truncate(compact.Len() - 1) // Encode's newline
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", " "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
