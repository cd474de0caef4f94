// Prints, as JSON, Kafka Connect worker group protocol bytes made by Connect's own classes
// (connect-runtime on the classpath): assignments and worker metadata of the three protocols
// (ConnectProtocol v0 "default"; IncrementalCooperativeConnectProtocol v1 "compatible" and v2
// "sessioned"), each with what Connect's own deserializer reads back from the bytes. offsetstore's
// TestWorkerGroupGoldens decodes the bytes and compares with that reading; the real tier's
// TestConnectGroupGoldens runs this file and compares its output with the committed goldens.
// Run: java -cp '<kafka lib>/*' ConnectGroupVectors.java
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.runtime.distributed.ConnectProtocol;
import org.apache.kafka.connect.runtime.distributed.ExtendedAssignment;
import org.apache.kafka.connect.runtime.distributed.ExtendedWorkerState;
import org.apache.kafka.connect.runtime.distributed.IncrementalCooperativeConnectProtocol;
import org.apache.kafka.connect.util.ConnectorTaskId;

public class ConnectGroupVectors {
    static String hex(ByteBuffer b) {
        if (b == null) return null;
        ByteBuffer d = b.duplicate();
        StringBuilder sb = new StringBuilder();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get()));
        return sb.toString();
    }

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    static String names(Collection<String> cs) {
        if (cs == null) return "null";
        List<String> out = new ArrayList<>();
        for (String c : cs) out.add(str(c));
        return "[" + String.join(",", out) + "]";
    }

    static String tasks(Collection<ConnectorTaskId> ts) {
        if (ts == null) return "null";
        List<String> out = new ArrayList<>();
        for (ConnectorTaskId t : ts) out.add("{\"connector\":" + str(t.connector()) + ",\"task\":" + t.task() + "}");
        return "[" + String.join(",", out) + "]";
    }

    static String assignment(ConnectProtocol.Assignment a, short version) {
        if (a == null) return "null";
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"version\":").append(version);
        sb.append(",\"error\":").append(a.error());
        sb.append(",\"leader\":").append(str(a.leader()));
        sb.append(",\"leader_url\":").append(str(a.leaderUrl()));
        sb.append(",\"config_offset\":").append(a.offset());
        sb.append(",\"connectors\":").append(names(a.connectors()));
        sb.append(",\"tasks\":").append(tasks(a.tasks()));
        if (a instanceof ExtendedAssignment e) {
            sb.append(",\"revoked_connectors\":").append(names(e.revokedConnectors()));
            sb.append(",\"revoked_tasks\":").append(tasks(e.revokedTasks()));
            sb.append(",\"delay\":").append(e.delay());
        } else {
            sb.append(",\"revoked_connectors\":[],\"revoked_tasks\":[],\"delay\":0");
        }
        return sb.append("}").toString();
    }

    static short headerVersion(ByteBuffer b) {
        return b.duplicate().getShort();
    }

    static List<String> assignments = new ArrayList<>();
    static List<String> metadata = new ArrayList<>();

    static void eager(String name, ConnectProtocol.Assignment a) {
        ByteBuffer b = ConnectProtocol.serializeAssignment(a);
        ConnectProtocol.Assignment back = ConnectProtocol.deserializeAssignment(b.duplicate());
        assignments.add("{\"name\":" + str(name) + ",\"protocol\":\"default\",\"hex\":" + str(hex(b)) + ",\"decoded\":" + assignment(back, headerVersion(b)) + "}");
    }

    static void incremental(String name, ExtendedAssignment a, boolean sessioned) {
        ByteBuffer b = IncrementalCooperativeConnectProtocol.serializeAssignment(a, sessioned);
        ExtendedAssignment back = IncrementalCooperativeConnectProtocol.deserializeAssignment(b.duplicate());
        assignments.add("{\"name\":" + str(name) + ",\"protocol\":" + str(sessioned ? "sessioned" : "compatible") + ",\"hex\":" + str(hex(b))
                + ",\"decoded\":" + assignment(back, headerVersion(b)) + "}");
    }

    static void eagerMetadata(String name, ConnectProtocol.WorkerState w) {
        ByteBuffer b = ConnectProtocol.serializeMetadata(w);
        ConnectProtocol.WorkerState back = ConnectProtocol.deserializeMetadata(b.duplicate());
        metadata.add("{\"name\":" + str(name) + ",\"protocol\":\"default\",\"hex\":" + str(hex(b)) + ",\"decoded\":{\"version\":" + headerVersion(b)
                + ",\"url\":" + str(back.url()) + ",\"config_offset\":" + back.offset() + ",\"allocation\":null}}");
    }

    static void incrementalMetadata(String name, ExtendedWorkerState w, boolean sessioned) {
        ByteBuffer b = IncrementalCooperativeConnectProtocol.serializeMetadata(w, sessioned);
        ExtendedWorkerState back = IncrementalCooperativeConnectProtocol.deserializeMetadata(b.duplicate());
        ExtendedAssignment alloc = back.assignment();
        String allocJSON = alloc == null || alloc.equals(ExtendedAssignment.empty()) ? "null" : assignment(alloc, alloc.version());
        metadata.add("{\"name\":" + str(name) + ",\"protocol\":" + str(sessioned ? "sessioned" : "compatible") + ",\"hex\":" + str(hex(b))
                + ",\"decoded\":{\"version\":" + headerVersion(b) + ",\"url\":" + str(back.url()) + ",\"config_offset\":" + back.offset()
                + ",\"allocation\":" + allocJSON + "}}");
    }

    @SafeVarargs
    static <T> List<T> list(T... xs) {
        return new ArrayList<>(List.of(xs));
    }

    static ConnectorTaskId task(String c, int n) {
        return new ConnectorTaskId(c, n);
    }

    public static void main(String[] args) {
        short v1 = IncrementalCooperativeConnectProtocol.CONNECT_PROTOCOL_V1;
        short v2 = IncrementalCooperativeConnectProtocol.CONNECT_PROTOCOL_V2;
        eager("eager: a connector and its tasks, and a task of another",
                new ConnectProtocol.Assignment((short) 0, "connect-1-5c1e", "http://w1:8083/", 7,
                        list("orders-src"), list(task("orders-src", 0), task("orders-src", 1), task("pg-cdc", 2))));
        eager("eager: nothing assigned", new ConnectProtocol.Assignment((short) 0, "connect-1-5c1e", "http://w1:8083/", 12, list(), list()));
        eager("eager: CONFIG_MISMATCH", new ConnectProtocol.Assignment((short) 1, "connect-1-5c1e", "http://w1:8083/", 3, list(), list()));
        eager("eager: a name with non-ASCII characters", new ConnectProtocol.Assignment((short) 0, "connect-2-\u00e9", "http://w\u00fc:8083/", 1L << 40,
                list("caf\u00e9-\u20ac"), list(task("caf\u00e9-\u20ac", 0))));
        incremental("compatible: assigned and revoked", new ExtendedAssignment(v1, (short) 0, "connect-1-9a", "http://w2:8083/", 41,
                list("mdb-cdc"), list(task("mdb-cdc", 0)), list("old-src"), list(task("old-src", 0), task("old-src", 1)), 0), false);
        incremental("sessioned: a task only", new ExtendedAssignment(v2, (short) 0, "connect-1-9a", "http://w2:8083/", 42,
                list(), list(task("mdb-cdc", 0)), list(), list(), 0), true);
        incremental("sessioned: nothing new, a delay scheduled", new ExtendedAssignment(v2, (short) 0, "connect-3-77", "http://w3:8083/", 43,
                list(), list(), list(), list(), 300000), true);
        incremental("sessioned: revoked only", new ExtendedAssignment(v2, (short) 0, "connect-3-77", "http://w3:8083/", 44,
                list(), list(), list("mdb-cdc"), list(task("mdb-cdc", 0)), 0), true);
        incremental("sessioned: CONFIG_MISMATCH", new ExtendedAssignment(v2, (short) 1, "connect-3-77", "http://w3:8083/", 2,
                list(), list(), list(), list(), 0), true);

        eagerMetadata("eager worker", new ConnectProtocol.WorkerState("http://w1:8083/", 7));
        incrementalMetadata("compatible worker, nothing held", new ExtendedWorkerState("http://w2:8083/", 40, null), false);
        incrementalMetadata("sessioned worker holding a connector and a task", new ExtendedWorkerState("http://w2:8083/", 41,
                new ExtendedAssignment(v2, (short) 0, "connect-1-9a", "http://w2:8083/", 41, list("mdb-cdc"), list(task("mdb-cdc", 0)), list(), list(), 0)), true);
        incrementalMetadata("sessioned worker holding a task of another connector", new ExtendedWorkerState("http://w3:8083/", 41,
                new ExtendedAssignment(v2, (short) 0, "connect-1-9a", "http://w2:8083/", 41, list(), list(task("orders-src", 3)), list(), list(), 0)), true);

        System.out.println("{\"kafka_version\":" + str(AppInfoParser.getVersion()) + ",");
        System.out.println("\"assignments\":[\n" + String.join(",\n", assignments) + "],");
        System.out.println("\"metadata\":[\n" + String.join(",\n", metadata) + "]}");
    }
}
