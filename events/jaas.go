package events

import "strings"

// The parts of a sasl.jaas.config value that hold secrets: the values of its options that may
// hold one (jaasSecretOption) and its comments, where package jaas (internal/jaas) finds them
// reading the value as Kafka's JaasConfig does, proven against Kafka's own reading here too
// (TestSecretsReadAsKafkaReadsThem).

// jaasHarmless are the options whose values are no secrets: Kerberos' switches and its keytab's
// path (the file is the secret, not its name), the service name, and an OAuth token
// endpoint's address, scope and audience. Every other option, a username, a principal or a
// client id among them, is taken for a secret: Connect hides a PASSWORD value whole, and a
// name that signs in is half of a credential.
var jaasHarmless = map[string]bool{
	"useKeyTab": true, "keyTab": true, "storeKey": true, "useTicketCache": true, "ticketCache": true, "doNotPrompt": true,
	"renewTGT": true, "refreshKrb5Config": true, "isInitiator": true, "tryFirstPass": true, "useFirstPass": true,
	"storePass": true, "clearPass": true, "debug": true, "serviceName": true, "tokenauth": true, "scope": true,
	"oauth.token.endpoint.uri": true, "oauth.scope": true, "oauth.audience": true,
	"oauth.ssl.truststore.location": true, "oauth.ssl.truststore.type": true,
}

// jaasSecretOption reports whether the value of option name may hold a secret.
func jaasSecretOption(name string) bool {
	return !jaasHarmless[name] || IsSecretKey(name)
}

// isJAASKey reports whether a config key is a Kafka client's sasl.jaas.config, with any
// prefix (producer.override., consumer., database.history.producer., ...).
func isJAASKey(key string) bool {
	return strings.HasSuffix(strings.ToLower(key), "sasl.jaas.config")
}
