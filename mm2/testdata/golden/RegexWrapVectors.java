// Prints the golden vectors of mm2's topics.regex rewrite (../regex-wrap-goldens.json), judged by
// java.util.regex as Kafka Connect judges a sink's topics.regex: Pattern.compile(regex) and
// matcher(topic).matches(). Each line of standard input is a case, its fields separated by tabs:
// the source alias, the replication separator, the pattern, the regex mm2 makes of it (or, for
// a pattern mm2 refuses, the plain "<alias><sep>(?:pattern)" it would otherwise have made), "1"
// when mm2 refuses it, and the topics, separated by spaces. For each case it prints whether the
// pattern matches each topic on A, and whether the rewritten regex matches the topic's name on
// B ("<alias><sep><topic>"); null where a regex does not compile.
// Run in source-file mode with any JDK 17+ (no classpath):
//   java RegexWrapVectors.java < input > ../regex-wrap-goldens.json
// (integration/realkafka's TestRegexWrapGoldens builds the input from ../regex-wrap-cases.tsv
// and compares.)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public class RegexWrapVectors {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static Pattern compile(String re) {
        try {
            return Pattern.compile(re);
        } catch (PatternSyntaxException e) {
            return null;
        }
    }

    static String matches(Pattern p, String prefix, String[] topics) {
        List<String> out = new ArrayList<>();
        for (String t : topics) out.add(p == null ? "null" : String.valueOf(p.matcher(prefix + t).matches()));
        return "[" + String.join(",", out) + "]";
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            String alias = f[0], sep = f[1], pattern = f[2], rewritten = f[3];
            boolean refused = f[4].equals("1");
            String[] topics = f[5].split(" ");
            List<String> qt = new ArrayList<>();
            for (String t : topics) qt.add(q(t));
            lines.add(String.format("{\"alias\":%s,\"separator\":%s,\"pattern\":%s,\"rewritten\":%s,\"refused\":%b,\"topics\":[%s],\"on_a\":%s,\"on_b\":%s}",
                q(alias), q(sep), q(pattern), q(rewritten), refused, String.join(",", qt),
                matches(compile(pattern), "", topics), matches(compile(rewritten), alias + sep, topics)));
        }
        System.out.print("{\n\"generator\": \"mm2/testdata/golden/RegexWrapVectors.java: java.util.regex.Pattern, Java "
            + System.getProperty("java.specification.version") + "\",\n\"cases\": [\n" + String.join(",\n", lines) + "\n]\n}\n");
    }
}
