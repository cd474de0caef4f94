// RecordsOracle: MirrorMaker 2's own checkpoint and offset-sync bytes and names for mm2's golden
// tests (mm2/testdata/mm2-goldens.json), computed by Kafka's connect-mirror and
// connect-mirror-client classes. It sits in MM2's package because recordKey/recordValue are
// package-private. Takes no input; prints the golden file.
package org.apache.kafka.connect.mirror;

import java.util.HexFormat;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

public class RecordsOracle {
    static final HexFormat HEX = HexFormat.of();

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String decode(String kind, String keyHex, String valueHex) {
        ConsumerRecord<byte[], byte[]> r = new ConsumerRecord<>("t", 0, 0L, HEX.parseHex(keyHex), HEX.parseHex(valueHex));
        try {
            Object o = kind.equals("checkpoint") ? Checkpoint.deserializeRecord(r) : OffsetSync.deserializeRecord(r);
            return "{\"java_accepts\":true,\"java_reads\":" + q(o.toString()) + "}";
        } catch (Exception e) {
            return "{\"java_accepts\":false,\"java_error\":" + q(e.getClass().getSimpleName()) + "}";
        }
    }

    public static void main(String[] args) {
        StringBuilder out = new StringBuilder("{\n\"checkpoints\": [\n");
        Object[][] cps = {
            {"connect-sink-1", "orders", 3, 1000L, 990L, ""},
            {"connect-sink-1", "A.orders", 3, 1000L, 990L, ""},
            {"g", "A_shop.orders", 0, 0L, 0L, "h\u00e9llo \u2603"},
            {"", "t", 2147483647, Long.MAX_VALUE, 9223372036854775806L, "meta"},
            {"connect-x", "t", -1, -1L, -1L, ""},
        };
        for (int i = 0; i < cps.length; i++) {
            Object[] c = cps[i];
            Checkpoint cp = new Checkpoint((String) c[0], new TopicPartition((String) c[1], (Integer) c[2]), (Long) c[3], (Long) c[4], (String) c[5]);
            out.append(String.format("{\"group\":%s,\"topic\":%s,\"partition\":%d,\"upstream_offset\":%d,\"offset\":%d,\"metadata\":%s,\"key\":\"%s\",\"value\":\"%s\"}%s\n",
                q((String) c[0]), q((String) c[1]), c[2], c[3], c[4], q((String) c[5]),
                HEX.formatHex(cp.recordKey()), HEX.formatHex(cp.recordValue()), i < cps.length - 1 ? "," : ""));
        }
        out.append("],\n\"offset_syncs\": [\n");
        Object[][] syncs = {{"orders", 3, 1000L, 990L}, {"sh\u00f6p", 0, 0L, 5L}, {"t", 7, Long.MAX_VALUE, 0L}};
        for (int i = 0; i < syncs.length; i++) {
            Object[] s = syncs[i];
            OffsetSync os = new OffsetSync(new TopicPartition((String) s[0], (Integer) s[1]), (Long) s[2], (Long) s[3]);
            out.append(String.format("{\"topic\":%s,\"partition\":%d,\"upstream_offset\":%d,\"offset\":%d,\"key\":\"%s\",\"value\":\"%s\"}%s\n",
                q((String) s[0]), s[1], s[2], s[3], HEX.formatHex(os.recordKey()), HEX.formatHex(os.recordValue()), i < syncs.length - 1 ? "," : ""));
        }
        // How Java reads malformed records: docs/mirrormaker2.md, "Primitive encodings" and
        // "Checkpoint records" say what a Go reader does instead.
        String k = "000e636f6e6e6563742d73696e6b2d3100066f726465727300000003";
        String v = "000000000000000003e800000000000003de0000";
        String[][] decodes = {
            {"checkpoint", "valid", k, v},
            {"checkpoint", "value trailing bytes", k, v + "cafe"},
            {"checkpoint", "key trailing bytes", k + "00", v},
            {"checkpoint", "value version 1", k, "0001" + v.substring(4)},
            {"checkpoint", "value truncated", k, v.substring(0, 20)},
            {"checkpoint", "key negative length", "ffff00066f726465727300000003", v},
            {"checkpoint", "metadata length beyond the record", k, v.substring(0, 36) + "000561"},
            {"offset sync", "value trailing bytes", "00066f726465727300000003", "00000000000003e800000000000003de01"},
            {"offset sync", "key trailing bytes", "00066f72646572730000000300", "00000000000003e800000000000003de"},
        };
        out.append("],\n\"java_decodes\": [\n");
        for (int i = 0; i < decodes.length; i++) {
            String[] d = decodes[i];
            out.append(String.format("{\"record\":%s,\"name\":%s,\"key\":\"%s\",\"value\":\"%s\",\"java\":%s}%s\n",
                q(d[0]), q(d[1]), d[2], d[3], decode(d[0], d[2], d[3]), i < decodes.length - 1 ? "," : ""));
        }
        out.append("],\n\"policies\": [\n");
        Object[][] policies = {
            {"default", ".", true}, {"default", "_", true}, {"default", "_", false}, {"identity", ".", true},
        };
        String[] topics = {"orders", "B.orders", "B.C.orders", "C.orders", "heartbeats", "shop.orders"};
        for (int i = 0; i < policies.length; i++) {
            Object[] p = policies[i];
            ReplicationPolicy rp = p[0].equals("default") ? new DefaultReplicationPolicy() : new IdentityReplicationPolicy();
            ((DefaultReplicationPolicy) rp).configure(Map.of("replication.policy.separator", p[1],
                "replication.policy.internal.topic.separator.enabled", String.valueOf(p[2]), "source.cluster.alias", "A"));
            StringBuilder remote = new StringBuilder();
            for (String t : topics) {
                String sep = (String) p[1];
                String topic = t.replace(".", sep);
                // MirrorCheckpointTask.renameTopicPartition with source A and target B.
                String renamed = "B".equals(rp.topicSource(topic)) ? rp.originalTopic(topic) : rp.formatRemoteTopic("A", topic);
                remote.append(remote.length() == 0 ? "" : ",").append(q(topic)).append(':').append(q(renamed));
            }
            out.append(String.format("{\"kind\":%s,\"separator\":%s,\"internal_separator\":%s,\"checkpoints\":%s,\"offset_syncs\":%s,\"remote\":{%s}}%s\n",
                q((String) p[0]), q((String) p[1]), p[2], q(rp.checkpointsTopic("A")), q(rp.offsetSyncsTopic("B")), remote,
                i < policies.length - 1 ? "," : ""));
        }
        out.append("]\n}\n");
        System.out.print(out);
    }
}
