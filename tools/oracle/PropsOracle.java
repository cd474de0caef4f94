// PropsOracle: what a Kafka client makes of a client properties file (--command-config).
//
// For every file named on the command line it prints one JSON line:
//   {"properties": {key: value, ...},        java.util.Properties.load(InputStream) (ISO 8859-1)
//    "config": {key: value | [values], ...}, ConfigDef.parseType of AdminClientConfig's keys
//    "config_errors": {key: message, ...},   keys whose value ConfigDef or the key's validator
//                                            refuses
//    "jaas": [{"module": .., "flag": .., "options": {..}, "scram": {..}}, ...] | "jaas_error": message
//                                            JaasContext.loadClientContext of sasl.jaas.config,
//                                            with the SCRAM credentials of a password option
//                                            as Kafka derives them (see scram)
//    "load_error": message}                  Properties.load refused the file
// Keys are sorted; every character outside printable ASCII is written as a JSON escape (backslash, u, four hex digits), so
// the answer is the exact UTF-16 text Java holds. A Password is written as its value.
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.io.InputStream;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;

public final class PropsOracle {
    private PropsOracle() {
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

    static void value(StringBuilder b, Object v) {
        if (v instanceof List) {
            b.append('[');
            String sep = "";
            for (Object e : (List<?>) v) {
                b.append(sep);
                sep = ",";
                value(b, e);
            }
            b.append(']');
        } else if (v instanceof Password) {
            string(b, ((Password) v).value());
        } else if (v instanceof Class) {
            string(b, ((Class<?>) v).getName());
        } else {
            string(b, String.valueOf(v));
        }
    }

    static void object(StringBuilder b, Map<String, ?> m) {
        b.append('{');
        String sep = "";
        for (Map.Entry<String, ?> e : new TreeMap<>(m).entrySet()) {
            b.append(sep);
            sep = ",";
            string(b, e.getKey());
            b.append(':');
            value(b, e.getValue());
        }
        b.append('}');
    }

    /** The salt of the SCRAM credentials the oracle derives: fixed, so the answer is too. */
    static final byte[] SALT = "offsetagent-props-oracle".getBytes(StandardCharsets.US_ASCII);
    static final int ITERATIONS = 4096;

    /**
     * The SCRAM credential of password for each mechanism, as kafka-configs.sh and
     * Admin.alterUserScramCredentials derive it (ScramFormatter.saltedPassword, then
     * generateCredential): {"SCRAM-SHA-256": {"salt", "iterations", "stored_key",
     * "server_key"}, ...}, bytes in base64.
     */
    static void scram(StringBuilder b, String password) throws Exception {
        Map<String, String> out = new TreeMap<>();
        b.append('{');
        String sep = "";
        for (ScramMechanism m : new ScramMechanism[] {ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512}) {
            ScramFormatter f = new ScramFormatter(m);
            ScramCredential c = f.generateCredential(SALT, f.saltedPassword(password, SALT, ITERATIONS), ITERATIONS);
            Base64.Encoder e = Base64.getEncoder();
            b.append(sep);
            sep = ",";
            string(b, m.mechanismName());
            b.append(':');
            out.clear();
            out.put("salt", e.encodeToString(c.salt()));
            out.put("iterations", Integer.toString(c.iterations()));
            out.put("stored_key", e.encodeToString(c.storedKey()));
            out.put("server_key", e.encodeToString(c.serverKey()));
            object(b, out);
        }
        b.append('}');
    }

    static String message(Throwable t) {
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    static String answer(String path) throws Exception {
        StringBuilder b = new StringBuilder("{");
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(path)) {
            props.load(in);
        } catch (IllegalArgumentException e) {
            b.append("\"load_error\":");
            string(b, message(e));
            return b.append('}').toString();
        }
        Map<String, String> raw = new TreeMap<>();
        for (String k : props.stringPropertyNames()) {
            raw.put(k, props.getProperty(k));
        }
        b.append("\"properties\":");
        object(b, raw);

        Map<String, ConfigDef.ConfigKey> keys = AdminClientConfig.configDef().configKeys();
        Map<String, Object> parsed = new TreeMap<>();
        Map<String, String> errors = new TreeMap<>();
        for (Map.Entry<String, String> e : raw.entrySet()) {
            ConfigDef.ConfigKey key = keys.get(e.getKey());
            if (key == null) {
                continue;
            }
            try {
                Object v = ConfigDef.parseType(e.getKey(), e.getValue(), key.type);
                if (key.validator != null) {
                    key.validator.ensureValid(e.getKey(), v);
                }
                parsed.put(e.getKey(), v);
            } catch (RuntimeException ex) {
                errors.put(e.getKey(), message(ex));
            }
        }
        b.append(",\"config\":");
        object(b, parsed);
        b.append(",\"config_errors\":");
        object(b, errors);

        if (parsed.get("sasl.jaas.config") instanceof Password) {
            Map<String, Object> configs = new HashMap<>(parsed);
            try {
                List<AppConfigurationEntry> entries = JaasContext.loadClientContext(configs).configurationEntries();
                StringBuilder j = new StringBuilder("[");
                String sep = "";
                for (AppConfigurationEntry e : entries) {
                    j.append(sep).append("{\"module\":");
                    sep = ",";
                    string(j, e.getLoginModuleName());
                    j.append(",\"flag\":");
                    string(j, e.getControlFlag().toString());
                    j.append(",\"options\":");
                    Map<String, String> opts = new TreeMap<>();
                    for (Map.Entry<String, ?> o : e.getOptions().entrySet()) {
                        opts.put(o.getKey(), String.valueOf(o.getValue()));
                    }
                    object(j, opts);
                    if (opts.containsKey("password")) {
                        j.append(",\"scram\":");
                        scram(j, opts.get("password"));
                    }
                    j.append('}');
                }
                b.append(",\"jaas\":").append(j).append(']');
            } catch (RuntimeException ex) {
                b.append(",\"jaas_error\":");
                string(b, message(ex));
            }
        }
        return b.append('}').toString();
    }

    public static void main(String[] args) throws Exception {
        for (String path : args) {
            System.out.println(answer(path));
        }
    }
}
