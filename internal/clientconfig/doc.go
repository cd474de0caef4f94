// Package clientconfig owns how offsetagent's Kafka and Connect REST clients are configured,
// for the agent and the CLI alike: the settings themselves, the files they are read from, and
// the connections built from them. It never dials.
//
// For the brokers: Security holds SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and TLS (CA,
// client certificate and key, as files or inline PEM, an encrypted PKCS#8 key's password, the
// hostname check); its env tags are the OFFSETAGENT_SASL_* and OFFSETAGENT_TLS_* variables.
// NewConnections turns it into Connections, the kafka-go transport (clients and writers) and
// dialer (readers and consumer groups) that carry it; SCRAM is spoken as Kafka's own clients
// speak it, without SASLprep (scram.go). Security.Principal names the principal a broker
// authenticates the settings as, for messages about refused permissions.
//
// For Kafka's client properties files (`kafka-*.sh --command-config`): ParseProperties reads
// the format of java.util.Properties (properties.go), ParseCommandConfig and
// ReadCommandConfig take their security keys into Security and refuse every other key by
// name (clientprops.go; ParseClientProperties does the same for properties read otherwise,
// such as a connector's client overrides with their prefix removed), with sasl.jaas.config read as Kafka's JaasConfig reads it (jaas.go)
// and encrypted keys decrypted (pkcs8.go). A real JVM is the oracle of that reader: the
// golden table testdata/props-oracle.json comes from java.util.Properties and kafka-clients
// (tools/props-oracle, make props-goldens). No error quotes a value, which may be a secret;
// the fuzz targets hold the reader to that.
//
// For a Connect REST API: ConnectSecurity holds basic auth and TLS, from a properties file in
// the Schema Registry client's keys (ParseConnectConfig, ReadConnectConfig) and from the
// environment (WithUserInfo); ConnectHTTPClient builds the HTTP client, which sends the
// credentials to the configured origin only (connectprops.go).
//
// Callers own the rest: which variables and flags name the files, where settings given two
// ways are refused (cmd/offsetagent), and what is done with the connections (agent, migrate,
// the CLI's subcommands).
package clientconfig
