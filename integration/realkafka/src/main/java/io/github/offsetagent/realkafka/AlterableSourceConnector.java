package io.github.offsetagent.realkafka;

import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A source connector that produces nothing and accepts any offsets: its alterOffsets returns true.
 * The real-Kafka tests create it, STOPPED, under the name of a connector whose plugin is not on the
 * test worker (Debezium, JDBC), so that the worker's own PATCH /connectors/NAME/offsets writes that
 * family's partition and offset maps. The bytes Connect writes do not depend on the connector class:
 * the REST path turns every map into a HashMap through the JsonConverter before the write.
 */
public class AlterableSourceConnector extends SourceConnector {
    private Map<String, String> props = Collections.emptyMap();

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return IdleTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return Collections.singletonList(props);
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public boolean alterOffsets(Map<String, String> connectorConfig, Map<Map<String, ?>, Map<String, ?>> offsets) {
        return true;
    }

    /** A task that never produces a record. */
    public static class IdleTask extends SourceTask {
        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(500);
            return null;
        }

        @Override
        public void stop() {
        }
    }
}
