// PolicyOracle: the golden vectors of MirrorMaker 2's DefaultReplicationPolicy for mm2's policy
// tests (mm2/testdata/replication-policy-goldens.json), computed by Kafka's own class from connect-mirror-client:
// topicSource, upstreamTopic, originalTopic and formatRemoteTopic, and the rename of
// MirrorCheckpointTask.renameTopicPartition (source alias A, target alias B), for topic names
// with empty segments among others (Java's String.split drops trailing empty strings).
// Takes no input; prints the golden file.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.mirror.DefaultReplicationPolicy;

public class PolicyOracle {
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

    public static void main(String[] args) {
        String[] separators = {".", "_", "--"};
        // "." stands for the separator.
        String[] shapes = {"", ".", "..", "...", "orders", "B", "B.", "B..", "B...", ".orders", ".B.orders", "...orders",
            "B.orders", "B..orders", "B.orders.", "B.orders..", "B..orders.", "B.C.orders", "B.C.", "B..C..orders",
            "C.orders", "A.B.orders", "B.B.orders", "x.B.orders", "heartbeats", "B.heartbeats", "shop.orders", "orders.."};
        // Taken as they are: separators that overlap or nearly match.
        String[] literal = {"B---orders", "B----orders", "B-orders", "B.-orders", "B_.orders", "-B-orders"};
        StringBuilder out = new StringBuilder();
        out.append("{\n\"generator\": \"tools/oracle/PolicyOracle.java (make goldens): org.apache.kafka.connect.mirror.DefaultReplicationPolicy\",\n");
        out.append("\"kafka_version\": ").append(q(AppInfoParser.getVersion())).append(",\n\"cases\": [\n");
        List<String> lines = new ArrayList<>();
        for (String sep : separators) {
            DefaultReplicationPolicy p = new DefaultReplicationPolicy();
            p.configure(Map.of("replication.policy.separator", sep));
            List<String> topics = new ArrayList<>();
            for (String s : shapes) topics.add(s.replace(".", sep));
            for (String s : literal) topics.add(s);
            for (String topic : topics) {
                String source = p.topicSource(topic);
                // MirrorCheckpointTask.renameTopicPartition with source A and target B.
                String renamed = "B".equals(source) ? p.originalTopic(topic) : p.formatRemoteTopic("A", topic);
                lines.add(String.format("{\"separator\":%s,\"topic\":%s,\"topic_source\":%s,\"upstream_topic\":%s,\"original_topic\":%s,\"format_remote\":%s,\"renamed\":%s}",
                    q(sep), q(topic), q(source), q(p.upstreamTopic(topic)), q(p.originalTopic(topic)), q(p.formatRemoteTopic("A", topic)), q(renamed)));
            }
        }
        out.append(String.join(",\n", lines)).append("\n]\n}\n");
        System.out.print(out);
    }
}
