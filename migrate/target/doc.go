// Package target is Kafka Connect cluster B before anything is published to it.
//
// Target says where B is: its brokers and their transport, the agents' request and result
// topics, B's Connect topics and, optionally, its REST API. Open runs the prechecks of B,
// before anything on A is stopped: B reachable, the principal allowed every operation the
// run makes on B's topics (by Metadata's authorized operations), B's Connect topics and the
// agents' topics there with Connect's settings, and B not the Connect cluster A is, judged
// by A's identity (fleet.Cluster, which the source package gives) and never by the
// addresses either was reached at. B's agents are judged by what they advertise in their
// consumer group membership (agents.go): the Connect cluster they serve, the result topic
// they publish to, and the request sources they accept. Open returns B (its Kafka cluster's
// id and a Connect REST client), or an error wrapping fleet.ErrPrecheck.
//
// It reads B and changes nothing.
package target
