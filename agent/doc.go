// Package agent is offsetagent's runtime: it consumes request events from the request topic
// as one member of a consumer group, dispatches them to bounded per-connector lanes (requests
// for one connector run in order, different connectors in parallel), runs each through
// handlers.Creator, publishes its result event, and commits a request's offset only after the
// broker acknowledged its result and every earlier request of the partition is done. It also
// serves /metrics, /healthz and /readyz. Its group membership advertises the Connect cluster
// it writes, its topics and the sources it accepts (advertise.go), and it refuses every
// request while its group mixes two Connect clusters.
//
// The caller (cmd/offsetagent) owns the environment, flags, signals and process exit; New
// takes plain values, a *slog.Logger and a prometheus.Registerer so that tests can embed the
// agent.
package agent
