// Package strimzi writes the KafkaConnector manifests of a migration into a Connect cluster
// that the Strimzi operator manages, and checks what the operator made of them.
//
// Target says where the manifests go (the KafkaConnect cluster's name, the directory, the
// API version, the Kubernetes Secret for the values a manifest must not hold in clear text).
// A connector's manifest is written from plain values (Connector: its names on A and B, type,
// initial state, config and offsets placed), so that the package knows no stage's types:
// its name is a Kubernetes name (KubernetesName), its fields follow the rules of the CRD's
// API version and the operator's, checked before anything is written (check.go), and the
// secret values of its config become references into the Secret, written to a file of
// their own (secret.go). Conflict names the keys on which a connector B already holds would
// be replaced by the manifest's config. The state and offsets placed are recorded next to
// the manifests (PlacedFile, ReadPlaced), and VerifyStrimzi asks B's REST API whether the
// operator created each connector as placed.
package strimzi
