// SecretsOracle: how Kafka reads a config value's placeholders and a sasl.jaas.config.
//
// For every file named on the command line (a config value, UTF-8) it prints one JSON line:
//   {"variables": "...",   the value through Connect's ConfigTransformer, every placeholder of
//                          the providers secrets, file, vault and env replaced by
//                          <<provider|path|key>>, so that where each is and how it is read shows
//    "jaas": [{"module": .., "flag": .., "options": {..}}, ...] | "jaas_error": message}
//                          JaasConfig's reading of the value as a sasl.jaas.config, every entry
// Every character outside printable ASCII is written as a JSON escape (backslash, u, four hex
// digits), so the answer is the exact UTF-16 text Java holds.
//
// It is in JaasConfig's package: the class is package-private, and JaasContext takes one entry
// only.
package org.apache.kafka.common.security;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.ConfigTransformer;
import org.apache.kafka.common.config.provider.ConfigProvider;

public final class SecretsOracle {
    private SecretsOracle() {
    }

    /** A provider that answers every key with where it was asked for. */
    static final class Marker implements ConfigProvider {
        private final String name;

        Marker(String name) {
            this.name = name;
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public ConfigData get(String path) {
            return new ConfigData(new HashMap<>());
        }

        @Override
        public ConfigData get(String path, Set<String> keys) {
            Map<String, String> out = new HashMap<>();
            for (String k : keys) {
                out.put(k, "<<" + name + "|" + path + "|" + k + ">>");
            }
            return new ConfigData(out);
        }

        @Override
        public void close() {
        }
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

    public static void main(String[] args) throws Exception {
        Map<String, ConfigProvider> providers = new HashMap<>();
        for (String p : new String[] {"secrets", "file", "vault", "env"}) {
            providers.put(p, new Marker(p));
        }
        ConfigTransformer transformer = new ConfigTransformer(providers);
        for (String path : args) {
            String value = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
            StringBuilder b = new StringBuilder("{\"variables\":");
            Map<String, String> in = new HashMap<>();
            in.put("v", value);
            string(b, transformer.transform(in).data().get("v"));
            try {
                JaasConfig config = new JaasConfig("KafkaClient", value);
                StringBuilder j = new StringBuilder("[");
                String sep = "";
                for (AppConfigurationEntry e : config.getAppConfigurationEntry("KafkaClient")) {
                    j.append(sep).append("{\"module\":");
                    string(j, e.getLoginModuleName());
                    j.append(",\"flag\":");
                    string(j, e.getControlFlag().toString());
                    j.append(",\"options\":{");
                    String osep = "";
                    for (Map.Entry<String, ?> o : new TreeMap<String, Object>(e.getOptions()).entrySet()) {
                        j.append(osep);
                        string(j, o.getKey());
                        j.append(':');
                        string(j, String.valueOf(o.getValue()));
                        osep = ",";
                    }
                    j.append("}}");
                    sep = ",";
                }
                b.append(",\"jaas\":").append(j).append(']');
            } catch (RuntimeException e) {
                b.append(",\"jaas_error\":");
                string(b, String.valueOf(e.getMessage()));
            }
            System.out.println(b.append('}'));
        }
    }
}
