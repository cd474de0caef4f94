package fleet

// Cluster is a Connect cluster's identity as a migration reads it, to tell two clusters apart
// by what they are, not by how they were reached: the id of its Kafka cluster, its Connect
// topics, and what its REST API answered to GET /.
type Cluster struct {
	// KafkaClusterID is the id of the Kafka cluster its Connect topics are on: from its
	// brokers, or from its REST API (GET /) when it is read through that only.
	KafkaClusterID string
	// ConfigTopic and OffsetsTopic are its Connect topics; "" when its topics are not read.
	ConfigTopic, OffsetsTopic string
	// ConnectURL is its REST API as given ("" when not given, or when nothing answered
	// there); Connect is what GET / answered there.
	ConnectURL string
	Connect    ConnectRoot
}

// ConnectRoot is what a Connect worker's GET / answers: its version and commit, and the id of
// the Kafka cluster it works on.
type ConnectRoot struct {
	Version, Commit, KafkaClusterID string
}
