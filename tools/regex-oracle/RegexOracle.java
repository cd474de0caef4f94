// RegexOracle: what Java makes of regular expressions and of MirrorMaker 2's group and topic
// filters, for the golden tables of internal/javaregex and mm2 (see main.go).
//
// It reads lines on stdin, every string in hex of its UTF-8 bytes ("-" for a setting not set),
// and prints one JSON line per input line:
//   P <pattern> <name>...      Pattern.compile(pattern), then matcher(name).matches() per name:
//                              {"matches": [true, ...]} or {"error": description}
//   G <groups> <groups.exclude> <name>...
//                              DefaultGroupFilter configured with the two settings, then
//                              shouldReplicateGroup(name): {"replicate": [...]} or {"error": ...}
//   T <topics> <topics.exclude> <name>...
//                              DefaultTopicFilter, shouldReplicateTopic(name), the same way
// A first line {"kafka_version": ...} comes before the answers. Every character outside
// printable ASCII is written as a JSON \\u escape, so the answer is the exact UTF-16 text Java holds.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.mirror.DefaultGroupFilter;
import org.apache.kafka.connect.mirror.DefaultTopicFilter;

public final class RegexOracle {
    private RegexOracle() {
    }

    static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        b.append('"');
    }

    static String unhex(String h) {
        if (h.equals("-")) {
            return null;
        }
        byte[] out = new byte[h.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    interface Judge {
        boolean judge(String name);
    }

    static String answer(String line) {
        String[] f = line.split(" ", -1);
        StringBuilder b = new StringBuilder("{");
        try {
            Judge judge;
            int first;
            String key;
            switch (f[0]) {
                case "P": {
                    Pattern p = Pattern.compile(unhex(f[1]));
                    judge = name -> p.matcher(name).matches();
                    first = 2;
                    key = "matches";
                    break;
                }
                case "G": {
                    Map<String, Object> props = new HashMap<>();
                    put(props, "groups", unhex(f[1]));
                    put(props, "groups.exclude", unhex(f[2]));
                    DefaultGroupFilter filter = new DefaultGroupFilter();
                    filter.configure(props);
                    judge = filter::shouldReplicateGroup;
                    first = 3;
                    key = "replicate";
                    break;
                }
                case "T": {
                    Map<String, Object> props = new HashMap<>();
                    put(props, "topics", unhex(f[1]));
                    put(props, "topics.exclude", unhex(f[2]));
                    DefaultTopicFilter filter = new DefaultTopicFilter();
                    filter.configure(props);
                    judge = filter::shouldReplicateTopic;
                    first = 3;
                    key = "replicate";
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown line " + f[0]);
            }
            b.append('"').append(key).append("\":[");
            for (int i = first; i < f.length; i++) {
                if (i > first) {
                    b.append(',');
                }
                b.append(judge.judge(unhex(f[i])));
            }
            b.append(']');
        } catch (PatternSyntaxException e) {
            b.append("\"error\":");
            string(b, e.getDescription());
        } catch (RuntimeException e) {
            b.append("\"error\":");
            string(b, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return b.append('}').toString();
    }

    static void put(Map<String, Object> props, String key, String value) {
        if (value != null) {
            props.put(key, value);
        }
    }

    public static void main(String[] args) throws Exception {
        StringBuilder head = new StringBuilder("{\"kafka_version\":");
        string(head, AppInfoParser.getVersion());
        System.out.println(head.append('}'));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null;) {
            System.out.println(answer(line));
        }
    }
}
